"""Batched judge scoring vs AVBench's reference recipe, on the same world clips, in one run.

Reference recipe (as AVBench's release scores): one clip at a time (batch 1), the whole
video decoded at its native frame rate for the judge, `generate(max_new_tokens=1,
output_scores=True)`, then a softmax over the [Yes, No] logits.
Ours: `Judge.score`: decode once at the judge's own fps, prompts bucketed by length, one
forward per batch, last-position logits only.

Usage: python benchmarks/judge_scoring.py [--clips 64] [--batch-size 16] [--checkpoint DIR]
Without --checkpoint the tiny AV judge is built (scripts/make_tiny_judges.py).
"""
import argparse
import tempfile
import time
from pathlib import Path

import torch

from avjudge.jsonl import read_jsonl
from avjudge.judges import Judge
from avjudge.judges.tiny import make_tiny_judges
from avjudge.media import decode
from avjudge.world import MANIFEST, WorldConfig, make_world


def reference_scores(judge: Judge, videos: list[str]) -> list[float]:
    tok = judge.adapter.tokenizer
    yes_id, no_id = tok.convert_tokens_to_ids("Yes"), tok.convert_tokens_to_ids("No")
    scores = []
    for video in videos:
        clip = decode(video)  # every frame at native fps, as the reference readers do
        batch = judge.adapter.collate([judge.prepare(judge.sample(clip))])
        batch = judge.adapter._to_model(batch)
        with torch.no_grad():
            out = judge.adapter.model.generate(**batch, max_new_tokens=1, output_scores=True,
                                               return_dict_in_generate=True, do_sample=False)
        pair = torch.softmax(out.scores[0][0, [yes_id, no_id]].float(), -1)
        scores.append(pair[0].item())
    return scores


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clips", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--checkpoint", type=Path, default=None)
    args = p.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = args.checkpoint or make_tiny_judges(Path(tmp) / "cache")["qwen2_5_omni"]
        make_world(WorldConfig(n=args.clips, seed=123), Path(tmp) / "world", progress=False)
        videos = [str(Path(tmp) / "world" / r["video"]) for r in read_jsonl(Path(tmp) / "world" / MANIFEST)]
        # The reference reads single Yes/No tokens: compare like with like.
        judge = Judge.load("av", checkpoint, batch_size=args.batch_size, yes_variants=("Yes",), no_variants=("No",))
        judge.score(videos[:2])  # warm-up (thread pools, allocator)
        start = time.perf_counter()
        ours = judge.score(videos)
        t_ours = time.perf_counter() - start
        start = time.perf_counter()
        ref = reference_scores(judge, videos)
        t_ref = time.perf_counter() - start
    diff = max(abs(a.score - b) for a, b in zip(ours, ref))
    print(f"AV judge on {len(videos)} world clips of 8 s ({checkpoint}):")
    print(f"  reference recipe (batch 1, full decode, generate): {t_ref:.2f} s = {len(videos) / t_ref:.1f} clips/s")
    print(f"  avjudge Judge.score (batch {args.batch_size}):            {t_ours:.2f} s = {len(videos) / t_ours:.1f} clips/s")
    print(f"  speed-up: {t_ref / t_ours:.2f}x; largest score difference: {diff:.2e}")


if __name__ == "__main__":
    main()
