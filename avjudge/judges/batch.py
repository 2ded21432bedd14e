"""Score a manifest (or a list of files) with one judge into a resumable results JSONL."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..jobs import run_job
from ..jsonl import read_jsonl
from .judge import Judge

# Where each task finds its text in a source-manifest record (world.jsonl works as one).
TEXT_FIELDS = {"av": None, "vt": "video", "at": "audio"}


def manifest_items(manifest: str | Path) -> list[dict]:
    """Manifest records with ``video`` resolved against the manifest's folder."""
    root = Path(manifest).parent
    items = []
    for i, record in enumerate(read_jsonl(manifest)):
        if "video" not in record:
            raise ValueError(f"{manifest}: record {i + 1} has no 'video' field")
        item = dict(record)
        item.setdefault("id", Path(record["video"]).stem)
        item["video"] = str(root / record["video"]) if not Path(record["video"]).is_absolute() else record["video"]
        items.append(item)
    return items


def file_items(paths: list[str | Path], text: str | None = None) -> list[dict]:
    items = []
    for p in paths:
        item = {"id": str(p), "video": str(p)}
        if text is not None:
            item["captions"] = {"video": text, "audio": text}
        items.append(item)
    return items


def score_items(judge: Judge, items: list[dict], out: str | Path, chunk_size: int = 32, progress: bool = True) -> dict:
    field = TEXT_FIELDS[judge.task.name]

    def texts_of(chunk):
        if field is None:
            return None, None
        texts = [(item.get("captions") or {}).get(field) for item in chunk]
        utterances = [(item.get("captions") or {}).get("utterance") or None for item in chunk]
        return texts, utterances if judge.task.name == "at" else None

    def process(chunk: list[dict]) -> list[dict]:
        texts, utterances = texts_of(chunk)
        results = judge.score([item["video"] for item in chunk], texts, utterances)
        return [{"id": item["id"], "video": item["video"], "judge": judge.task.name, **result.to_dict()}
                for item, result in zip(chunk, results)]

    def summarize(records: list[dict]) -> dict:
        scores = np.array([r["score"] for r in records if r.get("score") is not None], float)
        return {"judge": judge.task.name, "checkpoint": str(judge.adapter.checkpoint),
                "mean_score": float(scores.mean()) if scores.size else None,
                "std_score": float(scores.std()) if scores.size else None,
                "error_reasons": sorted({r["error"] for r in records if r.get("error")})[:20]}

    return run_job(items, out, process, chunk_size=chunk_size, progress=progress, desc=f"score {judge.task.name}",
                   summarize=summarize)
