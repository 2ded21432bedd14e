"""Score a source manifest (see avjudge.data) or a list of files with one judge, resumably."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..jobs import ClipJob, Engine, run_job
from ..media import MediaClip
from .judge import Judge


def file_items(paths: list[str | Path], text: str | None = None) -> list[dict]:
    items = []
    for p in paths:
        item = {"id": str(p), "video": str(p)}
        if text is not None:
            item["captions"] = {"video": text, "audio": text}
        items.append(item)
    return items


def score_items(
    judge: Judge,
    items: list[dict],
    out: str | Path,
    chunk_size: int = 32,
    progress: bool = True,
    engine: Engine | None = None,
) -> dict:
    field = judge.task.caption_field

    def texts_of(chunk):
        if field is None:
            return None, None
        texts = [(item.get("captions") or {}).get(field) for item in chunk]
        utterances = [(item.get("captions") or {}).get("utterance") or None for item in chunk]
        return texts, utterances if judge.task.name == "at" else None

    def score_decoded(chunk: list[dict]) -> list[dict]:
        """Records of items with their decoded ``clip``s; a clip that could not be decoded is its reason's error."""
        ok = [item for item in chunk if isinstance(item["clip"], MediaClip)]
        texts, utterances = texts_of(ok)
        scored = iter(judge.score([item["clip"] for item in ok], texts, utterances))
        results = [
            next(scored) if isinstance(item["clip"], MediaClip) else judge.head.failed(item["clip"]) for item in chunk
        ]
        return [
            {"id": item["id"], "video": item["video"], "judge": judge.task.name, **result.to_dict()}
            for item, result in zip(chunk, results)
        ]

    def summarize(records: list[dict]) -> dict:
        scores = np.array([r["score"] for r in records if r.get("score") is not None], float)
        return {
            "judge": judge.task.name,
            "checkpoint": str(judge.adapter.checkpoint),
            "mean_score": float(scores.mean()) if scores.size else None,
            "std_score": float(scores.std()) if scores.size else None,
            "error_reasons": sorted({r["error"] for r in records if r.get("error")})[:20],
        }

    return run_job(
        items,
        out,
        ClipJob(judge.decode_options, score_decoded, judge.settings.workers),
        chunk_size=chunk_size,
        progress=progress,
        desc=f"score {judge.task.name}",
        summarize=summarize,
        engine=engine,
    )
