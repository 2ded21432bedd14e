"""`avjudge bench run`: score every model's clips on every dimension; per-sample JSONL, a summary per
model x split x dimension. Resumable: a rerun skips the clips already scored."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..jsonl import read_jsonl, write_json
from ..runtime import Engine, run_job
from ..scoring.clip_scorer import ClipScorer
from ..scoring.dimensions import Dimension
from .prompt_files import Discovery, PromptEntry, discover

SAMPLES = "samples.jsonl"
SUMMARY = "summary.json"


def bench_items(entries: list[PromptEntry], found: Discovery) -> list[dict]:
    by_id = {e.id: e for e in entries}
    return [
        {
            "id": f"{model}/{pid}",
            "model": model,
            "prompt_id": pid,
            "split": by_id[pid].split,
            "video": str(path),
            "captions": by_id[pid].captions(),
        }
        for model, clips in found.clips.items()
        for pid, path in clips.items()
    ]


def dimension_stats(records: list[dict], dimensions: list[Dimension]) -> dict:
    """model -> split -> dimension -> {mean, std, n, errors} (a clip that failed to decode is an error of every
    dimension)."""
    out: dict = {}
    for r in records:
        cell = out.setdefault(r["model"], {}).setdefault(r["split"], {})
        for dim in dimensions:
            stats = cell.setdefault(dim.name, {"values": [], "errors": 0})
            value = (r.get("scores") or {}).get(dim.name)
            if value is None:
                stats["errors"] += 1
            else:
                stats["values"].append(value)
    for cells in out.values():
        for dims in cells.values():
            for name, stats in dims.items():
                v = np.asarray(stats.pop("values"), float)
                stats.update(
                    mean=float(v.mean()) if v.size else None, std=float(v.std()) if v.size else None, n=int(v.size)
                )
    return out


def run_bench(
    entries: list[PromptEntry],
    videos: str | Path,
    out: str | Path,
    scorer: ClipScorer,
    models: list[str] | None = None,
    chunk_size: int = 16,
    progress: bool = True,
    engine: Engine | None = None,
) -> dict:
    """Score every model's clips of a benchmark's prompts on the scorer's dimensions; resumable.

    Args:
        entries: the prompts (`avjudge.bench.load_prompts`).
        videos: a folder ROOT with ROOT/<model>/<prompt id>.mp4 (or <prompt id>_anything.mp4).
        out: folder for ``samples.jsonl`` (one line per clip, written as it goes) and ``summary.json``.
        scorer: a `ClipScorer` holding the judges and metrics of the dimensions asked for.
        models: the model folders to score (None: every folder in ROOT).
        chunk_size: clips decoded and scored together.
        progress: show a progress bar.
        engine: what scores the chunks (default: this process; `avjudge.runtime.make_engine`).

    Returns:
        The summary: mean, std, n and errors per model x split x dimension, the prompts with no clip, and the
        dimensions skipped with why. A clip that cannot be scored is an error, never 0.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    found = discover(entries, videos, models)
    items = bench_items(entries, found)

    keep = ("id", "model", "prompt_id", "split", "video")
    process = scorer.job(lambda item, scored: {**{k: item[k] for k in keep}, **scored})
    job = run_job(items, out / SAMPLES, process, chunk_size=chunk_size, progress=progress, desc="bench", engine=engine)
    wanted = {item["id"] for item in items}
    records = [r for r in read_jsonl(out / SAMPLES) if r["id"] in wanted]
    summary = {
        "dimensions": [d.name for d in scorer.dimensions],
        "labels": {d.name: d.label for d in scorer.dimensions},
        "higher_is_better": {d.name: d.higher_is_better for d in scorer.dimensions},
        "skipped_dimensions": scorer.skipped,
        "models": list(found.clips),
        "prompts": {split: sum(1 for e in entries if e.split == split) for split in sorted({e.split for e in entries})},
        "clips": job["total"],
        "decode_errors": sum(1 for r in records if r.get("error")),
        "missing": {m: ids for m, ids in found.missing.items() if ids},
        "ambiguous": found.ambiguous,
        "results": dimension_stats(records, scorer.dimensions),
        "samples": SAMPLES,
        # each judge's checkpoint, where the report finds its calibration (`avjudge judges calibrate`)
        "judges": {task: str(judge.adapter.checkpoint) for task, judge in scorer.judges.items()},
    }
    write_json(out / SUMMARY, summary)
    return summary
