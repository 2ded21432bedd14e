"""Batch jobs that score clips through the scoring core: `avjudge score` (one judge) and `avjudge metrics run`
(signal metrics); `bench run` and `filter` build theirs with `scoring_job` too. Each item is decoded once for every
scorer of the job, by the job's one plan, in the decoding stage an engine may run apart (`ClipJob`)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ..devices import device_name
from ..judges import Judge, ScoreResult
from ..metrics import METRICS, load_metrics
from ..runtime import ClipJob, Engine, checkpoint_identity, media_identity, run_job
from ..stats import finite_number
from .core import ClipRecord, Scoring
from .scorers import JudgeScorer, MetricScorer


def scoring_job(scoring: Scoring, record: Callable[[dict, ClipRecord], dict]) -> ClipJob:
    """A batch job's process that scores each item with ``scoring``: ``record(item, scored)`` is what it writes."""

    def score_decoded(chunk: list[dict]) -> list[dict]:
        return [record(item, scored) for item, scored in zip(chunk, scoring.score_decoded(chunk))]

    return ClipJob(scoring.decoder(), score_decoded, decode_apart=scoring.holds_interpreter)


def judge_row(scored: ClipRecord, name: str) -> dict:
    """A judge's figures for one item (`ScoreResult`'s fields; every number None and ``error`` set where it
    failed)."""
    outcome = scored.outcome(name)
    return ScoreResult(**outcome.values).to_dict() if outcome.ok else ScoreResult.failed(outcome.error).to_dict()


def score_items(
    judge: Judge,
    items: Sequence[dict],
    out: str | Path,
    chunk_size: int = 32,
    progress: bool = True,
    engine: Engine | None = None,
) -> dict:
    """`avjudge score`: S and its figures per item with one judge, written to ``out`` as it goes; resumable."""
    scoring = Scoring([JudgeScorer(judge)], judge.settings.workers, judge.settings.decode_processes)
    checkpoint = judge.adapter.checkpoint
    identity = checkpoint_identity(checkpoint)
    return score_with(scoring, str(checkpoint), identity, items, out, chunk_size, progress, engine)


def score_with(
    scoring: Scoring,
    checkpoint: str,
    scorer_identity: str,
    items: Sequence[dict],
    out: str | Path,
    chunk_size: int = 32,
    progress: bool = True,
    engine: Engine | None = None,
) -> dict:
    """`score_items`' job with the one judge ``scoring`` holds (a `JudgeScorer`, or a stand-in for one:
    `avjudge.scoring.standin`); ``checkpoint`` names it in the summary, ``scorer_identity`` in each record's
    ``computed_from``."""
    (task,) = scoring.names()

    def row(item: dict, scored: ClipRecord) -> dict:
        return {"id": item["id"], "video": item["video"], "judge": task, **judge_row(scored, task)}

    def summarize(records: list[dict]) -> dict:
        scores = np.array([r["score"] for r in records if r.get("score") is not None], float)
        return {
            "judge": task,
            "checkpoint": checkpoint,
            "mean_score": float(scores.mean()) if scores.size else None,
            "std_score": float(scores.std()) if scores.size else None,
            "error_reasons": sorted({r["error"] for r in records if r.get("error")})[:20],
        }

    return run_job(
        list(items),
        out,
        scoring_job(scoring, row),
        chunk_size=chunk_size,
        progress=progress,
        desc=f"score {task}",
        summarize=summarize,
        engine=engine,
        identity=media_identity(f"{task}:{scorer_identity}"),
    )


def metrics_row(scored: ClipRecord) -> dict:
    """Every metric's outputs for one item, and each metric's error; or the error that kept the clip unread."""
    if scored.error is not None:
        return {"error": scored.error}
    return {k: v for values in scored.values.values() for k, v in values.items()} | {"errors": scored.errors}


def run_metrics(
    names: list[str],
    source: str | Path | list,
    out: str | Path,
    batch_size: int = 8,
    workers: int = 2,
    device: str = "auto",
    progress: bool = True,
    engine: Engine | None = None,
) -> dict:
    """Score clips with signal metrics, each clip decoded once for all of them; resumable.

    Args:
        names: metric names (`avjudge metrics list`).
        source: what `avjudge.data.input_items` reads: a manifest, a folder of clips, a file, or a list of them.
        out: results JSONL, one line per clip with every output and per-metric errors, written as it goes.
        batch_size: clips a chunk.
        workers: threads that decode the clips of a chunk where the engine does not decode them apart (the metrics
            then score them one at a time).
        device: ``auto``, ``cpu`` or ``cuda``: where the metrics that run a model on one run it
            (``speech_content``); the others run on the CPU.
        progress: show a progress bar.
        engine: what runs the chunks (default: this process, decoding ahead of the metrics;
            `avjudge.runtime.make_engine`).

    Returns:
        The job summary (clips done, errors, resumed), also written beside ``out``.
    """
    from ..data import input_items

    items = input_items(source)  # bad inputs fail before a model loads
    scoring = Scoring([MetricScorer(m) for m in load_metrics(names, device)], workers)
    on_cpu = [n for n in names if METRICS.lookup(n).takes_device and device_name(device) == "cpu"]
    if on_cpu and progress:
        print(f"note: {', '.join(on_cpu)} run a model on the CPU here, much slower than on a GPU (--device cuda)",
              file=sys.stderr)  # fmt: skip

    def row(item: dict, scored: ClipRecord) -> dict:
        return {"id": item["id"], "video": item["video"], **metrics_row(scored)}

    def summarize(records: list[dict]) -> dict:
        return metric_summary(records, scoring.names())

    return run_job(
        items,
        out,
        scoring_job(scoring, row),
        identity=media_identity(",".join(sorted(scoring.names()))),
        chunk_size=batch_size,
        progress=progress,
        desc="metrics",
        summarize=summarize,
        engine=engine,
    )


def metric_summary(records: list[dict], names: list[str]) -> dict:
    """Per metric, the clips it scored and those it could not (an unread clip counts for every metric) with the first
    reasons; the mean of every numeric output over the clips that have it."""
    per_metric = {}
    for name in names:
        failed = [r.get("error") or r.get("errors", {}).get(name) for r in records]
        failed = [reason for reason in failed if reason]
        per_metric[name] = {"clips": len(records) - len(failed), "errors": len(failed),
                            "error_reasons": sorted(set(failed))[:5]}  # fmt: skip
    values: dict[str, list[float]] = {}
    for r in records:
        for key, value in r.items():
            if finite_number(value):
                values.setdefault(key, []).append(float(value))
    return {"per_metric": per_metric, "means": {key: float(np.mean(v)) for key, v in sorted(values.items())}}
