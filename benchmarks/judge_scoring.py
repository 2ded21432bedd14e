"""Batched judge scoring vs AVBench's reference recipe, on the same world clips, in one run.

Reference recipe (as AVBench's release scores): one clip at a time (batch 1), the whole
video decoded at its native frame rate for each judge, `generate(max_new_tokens=1,
output_scores=True)`, then a softmax over the [Yes, No] logits.
Ours: each clip decoded once at the judges' own fps and shared by every judge, then
`Judge.score` per judge: prompts bucketed by length, one forward per batch, last-position
logits only.

Two comparisons: the AV judge alone, and the three judges (AV, VT, AT) on the same clips.

Usage: python benchmarks/judge_scoring.py [--clips 64] [--batch-size 16]
The tiny judges are built (`avjudge judges make-tiny`).
"""

import argparse
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from avjudge.jsonl import read_jsonl
from avjudge.judges import Judge
from avjudge.judges.tiny import make_tiny_judges
from avjudge.media import decode
from avjudge.world import MANIFEST, WorldConfig, make_world


def reference_scores(judge: Judge, videos: list[str], texts: list[str] | None) -> list[float]:
    tok = judge.adapter.tokenizer
    yes_id, no_id = tok.convert_tokens_to_ids("Yes"), tok.convert_tokens_to_ids("No")
    scores = []
    for i, video in enumerate(videos):
        # the streams this judge reads, every frame at native fps, as the reference readers do
        clip = decode(video, video=judge.task.needs_video, audio=judge.task.needs_audio)
        sample = judge.sample(clip, texts[i] if texts else None)
        batch = judge.adapter.to_device(judge.adapter.collate([judge.prepare(sample)]))
        with torch.no_grad():
            out = judge.adapter.model.generate(
                **batch, max_new_tokens=1, output_scores=True, return_dict_in_generate=True, do_sample=False
            )
        pair = torch.softmax(out.scores[0][0, [yes_id, no_id]].float(), -1)
        scores.append(pair[0].item())
    return scores


def ours(judges: dict[str, Judge], videos: list[str], texts: list[str]) -> dict[str, list[float]]:
    first = next(iter(judges.values()))
    # one decode per clip serves every judge (all sample frames at 1 fps and audio at 16 kHz)
    with ThreadPoolExecutor(first.settings.workers) as pool:
        clips = list(pool.map(lambda v: decode(v, fps=first.settings.fps, sample_rate=16000, channels=1), videos))
    return {
        task: [r.score for r in judge.score(clips, None if task == "av" else texts)] for task, judge in judges.items()
    }


def compare(judges: dict[str, Judge], videos: list[str], texts: list[str]) -> tuple[float, float, float]:
    ours(judges, videos[:2], texts[:2])  # warm-up (thread pools, allocator)
    start = time.perf_counter()
    got = ours(judges, videos, texts)
    t_ours = time.perf_counter() - start
    start = time.perf_counter()
    ref = {task: reference_scores(judge, videos, None if task == "av" else texts) for task, judge in judges.items()}
    t_ref = time.perf_counter() - start
    diff = max(abs(a - b) for task in judges for a, b in zip(got[task], ref[task]))
    return t_ref, t_ours, diff


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clips", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=16)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tiny = make_tiny_judges(Path(tmp) / "cache")
        make_world(WorldConfig(n=args.clips, seed=123), Path(tmp) / "world", progress=False)
        records = list(read_jsonl(Path(tmp) / "world" / MANIFEST))
        videos = [str(Path(tmp) / "world" / r["video"]) for r in records]
        texts = [r["captions"]["video"] for r in records]

        # The reference reads single Yes/No tokens: compare like with like.
        def load(task: str, family: str) -> Judge:
            return Judge.load(
                task, tiny[family], batch_size=args.batch_size, yes_variants=("Yes",), no_variants=("No",)
            )

        runs = {
            "AV judge": {"av": load("av", "qwen2_5_omni")},
            "AV + VT + AT judges": {
                "av": load("av", "qwen2_5_omni"),
                "vt": load("vt", "qwen2_5_omni"),
                "at": load("at", "qwen2_audio"),
            },
        }
        print(f"tiny judges on {len(videos)} world clips of 8 s, {torch.get_num_threads()} threads:")
        for name, judges in runs.items():
            t_ref, t_ours, diff = compare(judges, videos, texts)
            print(
                f"  {name}: reference {t_ref:.2f} s, avjudge (batch {args.batch_size}) {t_ours:.2f} s; "
                f"speed-up {t_ref / t_ours:.2f}x; largest score difference {diff:.2e}"
            )


if __name__ == "__main__":
    main()
