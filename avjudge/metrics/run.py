"""`avjudge metrics run`: decode each clip once, share it with every metric, record per-metric errors."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..jobs import Engine, run_job
from ..media import MediaClip, MediaError, decode
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
    return compute_all(metrics, _decoded(metrics, video), captions)


def _decoded(metrics: list[Metric], video: str) -> MediaClip | str:
    """The clip decoded once for every metric (frames at the highest rate any of them samples, each taking its own
    rate from those; audio if any needs it), or why it could not be."""
    rates = [m.video_fps for m in metrics if m.video_fps]
    try:
        return decode(
            video, video=bool(rates), audio=any(m.audio for m in metrics), fps=decode_fps(rates) if rates else None
        )
    except MediaError as err:
        return str(err)


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

    def process(chunk: list[dict]) -> list[dict]:
        # clips decode in ``workers`` threads; metrics score them one at a time (their models hold state)
        if workers <= 1 or len(chunk) <= 1:
            clips = [_decoded(metrics, item["video"]) for item in chunk]
        else:
            with ThreadPoolExecutor(workers) as pool:
                clips = list(pool.map(lambda item: _decoded(metrics, item["video"]), chunk))
        return [
            {"id": item["id"], "video": item["video"], **compute_all(metrics, clip, item.get("captions"))}
            for item, clip in zip(chunk, clips)
        ]

    return run_job(items, out, process, chunk_size=batch_size, progress=progress, desc="metrics", engine=engine)
