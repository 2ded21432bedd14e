"""`avjudge metrics run`: decode each clip once, share it with every metric, record per-metric errors."""

from __future__ import annotations

from pathlib import Path

from ..jobs import ClipJob, Engine, run_job
from ..media import MediaClip, decode_or_reason
from .base import METRICS, Metric, MetricError, decode_fps, get_metric


def load_metrics(names: list[str], device: str = "auto") -> list[Metric]:
    """The named metrics, those that run a model placed on ``device`` (auto: CUDA when there is one)."""
    return [get_metric(n, **({"device": device} if METRICS.lookup(n).takes_device else {})) for n in names]


def compute_all(metrics: list[Metric], clip: MediaClip | str, captions: dict | None = None) -> dict:
    """Every metric's outputs for a decoded clip, and per-metric errors; ``clip``: the clip, or why it could not be
    decoded."""
    if isinstance(clip, str):
        return {"error": clip}
    record: dict = {"errors": {}}
    for metric in metrics:
        try:
            record.update(metric.compute(clip, captions=captions or {}))
        except MetricError as err:
            record["errors"][metric.name] = str(err)
    return record


def score_clip(metrics: list[Metric], video: str, captions: dict | None = None) -> dict:
    """Every metric's outputs for one clip (decoded once), and per-metric errors."""
    return compute_all(metrics, decode_or_reason(video, **decode_options(metrics)), captions)


def decode_options(metrics: list[Metric]) -> dict:
    """`avjudge.media.decode`'s arguments to decode a clip once for every metric: frames at the highest rate any of
    them samples (each takes its own rate from those), audio if any needs it."""
    rates = [m.video_fps for m in metrics if m.video_fps]
    return {"video": bool(rates), "audio": any(m.audio for m in metrics), "fps": decode_fps(rates) if rates else None}


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
        workers: threads that decode the clips of a chunk (the metrics then score them one at a time).
        device: ``auto``, ``cpu`` or ``cuda``: where the metrics that run a model on one run it
            (``speech_content``); the others run on the CPU.
        progress: show a progress bar.
        engine: what runs the chunks (default: this process; `avjudge.jobs.make_engine`).

    Returns:
        The job summary (clips done, errors, resumed), also written beside ``out``.
    """
    from ..data import input_items

    items = input_items(source)  # bad inputs fail before a model loads
    metrics = load_metrics(names, device)

    def score_decoded(chunk: list[dict]) -> list[dict]:  # metrics score clips one at a time: their models hold state
        return [
            {"id": item["id"], "video": item["video"], **compute_all(metrics, item["clip"], item.get("captions"))}
            for item in chunk
        ]

    process = ClipJob(decode_options(metrics), score_decoded, workers)
    return run_job(items, out, process, chunk_size=batch_size, progress=progress, desc="metrics", engine=engine)
