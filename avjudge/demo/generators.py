"""The demo's last stage, what a user of the judge does next: benchmark generators with it. Four synthetic
"generators" (`avjudge bench synth`: the reference clips, and the same clips with their sound shifted, noisy or
another clip's) make clips of a small world none of the judges saw; the AV judge scores them untrained and trained,
and each run gets its leaderboard and HTML report (`avjudge bench run` and `bench report`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..bench.report import load_results, write_report
from ..bench.runner import run_bench
from ..bench.synthetic import SYNTHETIC_MODELS, make_model_folders, world_prompts
from ..scoring.clip_scorer import ClipScorer
from ..scoring.dimensions import DIMENSIONS
from ..world import MANIFEST, WorldConfig, make_world


def benchmark_generators(
    out: Path, world: WorldConfig, judges: dict[str, Path], seed: int = 0, progress: bool = False
) -> dict:
    """Benchmark the synthetic generators on a fresh world with each AV judge of ``judges`` (name -> checkpoint).

    Returns:
        ``{"clips": per generator, "mean_av": {generator: {judge name: mean S or None}}, "reports": {judge name:
        its report.html}}``; a clip that could not be scored is left out of the mean (it is an error, never 0).
    """
    make_world(world, out / "world", progress=progress)
    manifest = out / "world" / MANIFEST
    entries = world_prompts(manifest)
    make_model_folders(manifest, out / "videos", seed=seed)
    means: dict[str, dict[str, float | None]] = {model: {} for model in SYNTHETIC_MODELS}
    reports = {}
    for name, checkpoint in judges.items():
        scorer = ClipScorer([DIMENSIONS["av"]], {"av": checkpoint})
        run_bench(entries, out / "videos", out / name, scorer, progress=progress)
        reports[name] = str(write_report(out / name)["html"][0])
        _, records = load_results(out / name)
        for model in SYNTHETIC_MODELS:
            scores = [r["scores"]["av"] for r in records if r["model"] == model and "av" in (r.get("scores") or {})]
            means[model][name] = float(np.mean(scores)) if scores else None
    return {"clips": len(entries), "mean_av": means, "reports": reports}
