"""`avjudge demo`: the end-to-end pipeline on built-in defaults.

Stages now: make a synthetic world, decode every clip once and verify it against its ground
truth, then score every clip with the untrained tiny AV, VT and AT judges. Later stages
(hard-negative pairs, training, reports) extend this file.
"""
from __future__ import annotations

import time
from pathlib import Path

from tqdm import tqdm

import numpy as np

from .jsonl import read_jsonl, write_json
from .judges import Judge
from .judges.tiny import make_tiny_judges
from .media import MediaError, decode
from .world import MANIFEST, WorldConfig, make_world
from .world.verify import verify_clip


JUDGE_FAMILIES = {"av": "qwen2_5_omni", "vt": "qwen2_5_omni", "at": "qwen2_audio"}
JUDGE_TEXTS = {"av": None, "vt": "video", "at": "audio"}


def score_with_tiny_judges(records: list[dict], world_dir: Path, cache: Path | None, progress: bool) -> dict:
    """Mean score of each untrained tiny judge over the world's clips (decoded once, shared)."""
    checkpoints = make_tiny_judges(cache)
    clips = [decode(world_dir / r["video"]) for r in records]
    table = {}
    for task, family in JUDGE_FAMILIES.items():
        judge = Judge.load(task, checkpoints[family])
        field = JUDGE_TEXTS[task]
        texts = [r["captions"][field] for r in records] if field else None
        utterances = [r["captions"]["utterance"] or None for r in records] if task == "at" else None
        results = judge.score(clips, texts, utterances, progress=progress)
        scores = np.array([r.score for r in results if r.ok])
        table[task] = {"mean": float(scores.mean()), "std": float(scores.std()), "n": int(scores.size),
                       "errors": sum(not r.ok for r in results), "checkpoint": str(checkpoints[family])}
    return table


def run_demo(out: str | Path, n: int = 12, seed: int = 0, progress: bool = True, cache: Path | None = None) -> dict:
    out = Path(out)
    t0 = time.perf_counter()
    world_dir = out / "world"
    summary = make_world(WorldConfig(n=n, seed=seed), world_dir, progress=progress)
    t_world = time.perf_counter() - t0
    checks = {"clips": 0, "clips_ok": 0, "visual_events": 0, "visual_found": 0, "onsets": 0, "onsets_found": 0,
              "errors": []}
    for record in tqdm(list(read_jsonl(world_dir / MANIFEST)), desc="verify", disable=not progress):
        checks["clips"] += 1
        try:
            result = verify_clip(decode(world_dir / record["video"]), record)
        except MediaError as err:
            checks["errors"].append({"id": record["id"], "error": str(err)})
            continue
        checks["clips_ok"] += result.ok
        checks["visual_events"] += result.visual_expected
        checks["visual_found"] += result.visual_found
        checks["onsets"] += result.onsets_expected
        checks["onsets_found"] += result.onsets_found
        if not result.ok:
            checks["errors"].append({"id": record["id"], "error": "; ".join(result.problems)})
    records = list(read_jsonl(world_dir / MANIFEST))
    judges = score_with_tiny_judges(records, world_dir, cache, progress)
    lines = [
        f"world: {summary['clips']} clips, {summary['total_duration_s']:.0f} s of audio-video, "
        f"{summary['events']} sound events, {summary['with_speech']} with speech ({t_world:.1f} s)",
        f"ground truth after decoding: {checks['clips_ok']}/{checks['clips']} clips exact; "
        f"visual events {checks['visual_found']}/{checks['visual_events']} within one frame; "
        f"audio onsets {checks['onsets_found']}/{checks['onsets']} within 5 ms (clips without ambience or speech)",
        "untrained tiny judges (random weights: scores sit near 0.5 until trained):",
        *[f"  {task}: mean score {row['mean']:.3f} +/- {row['std']:.3f} over {row['n']} clips, {row['errors']} errors"
          for task, row in judges.items()],
        f"files: {world_dir / MANIFEST}, {world_dir / 'clips'}",
    ]
    report = {"world": summary, "verification": checks, "judges": judges, "seconds": round(time.perf_counter() - t0, 2),
              "text": "\n".join(lines)}
    write_json(out / "demo_report.json", report)
    return report
