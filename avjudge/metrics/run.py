"""`avjudge metrics run`: decode each clip once, share it with every metric, record per-metric errors."""

from __future__ import annotations

from pathlib import Path

from ..jobs import run_job
from ..media import MediaError, decode
from .base import Metric, MetricError, decode_fps, get_metric

MEDIA_EXTENSIONS = (".mp4", ".mkv", ".mov", ".webm", ".wav", ".flac")


def input_items(source: str | Path) -> list[dict]:
    """A folder of media files, or a source manifest (JSONL with id and video)."""
    from ..data import load_manifest

    path = Path(source)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix.lower() in MEDIA_EXTENSIONS)
        return [{"id": str(p.relative_to(path)), "video": str(p)} for p in files]
    return load_manifest(path)


def score_clip(metrics: list[Metric], video: str, captions: dict | None = None) -> dict:
    """Every metric's outputs for one clip (decoded once), and per-metric errors."""
    rates = [m.video_fps for m in metrics if m.video_fps]
    needs_audio = any(m.audio for m in metrics)
    record: dict = {"errors": {}}
    try:  # frames at the highest rate any metric samples; each metric takes its own rate from those
        clip = decode(video, video=bool(rates), audio=needs_audio, fps=decode_fps(rates) if rates else None)
    except MediaError as err:
        return {"error": str(err)}
    for metric in metrics:
        try:
            record.update(metric.compute(clip, captions=captions or {}))
        except MetricError as err:
            record["errors"][metric.name] = str(err)
    return record


def run_metrics(names: list[str], source: str | Path, out: str | Path, progress: bool = True) -> dict:
    metrics = [get_metric(n) for n in names]
    items = input_items(source)

    def process(chunk: list[dict]) -> list[dict]:
        return [
            {"id": item["id"], "video": item["video"], **score_clip(metrics, item["video"], item.get("captions"))}
            for item in chunk
        ]

    return run_job(items, out, process, chunk_size=8, progress=progress, desc="metrics")
