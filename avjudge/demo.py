"""`avjudge demo`: the end-to-end pipeline on built-in defaults.

Stage 1 (now): make a synthetic world, decode every clip once and verify it against its
ground truth. Later stages (hard negatives, judges, training, reports) extend this file.
"""
from __future__ import annotations

import time
from pathlib import Path

from tqdm import tqdm

from .jsonl import read_jsonl, write_json
from .media import MediaError, decode
from .world import MANIFEST, WorldConfig, make_world
from .world.verify import verify_clip


def run_demo(out: str | Path, n: int = 12, seed: int = 0, progress: bool = True) -> dict:
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
    lines = [
        f"world: {summary['clips']} clips, {summary['total_duration_s']:.0f} s of audio-video, "
        f"{summary['events']} sound events, {summary['with_speech']} with speech ({t_world:.1f} s)",
        f"ground truth after decoding: {checks['clips_ok']}/{checks['clips']} clips exact; "
        f"visual events {checks['visual_found']}/{checks['visual_events']} within one frame; "
        f"audio onsets {checks['onsets_found']}/{checks['onsets']} within 5 ms (clips without ambience or speech)",
        f"files: {world_dir / MANIFEST}, {world_dir / 'clips'}",
    ]
    report = {"world": summary, "verification": checks, "seconds": round(time.perf_counter() - t0, 2),
              "text": "\n".join(lines)}
    write_json(out / "demo_report.json", report)
    return report
