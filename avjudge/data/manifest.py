"""Source manifests: JSONL of ``{id, video, captions: {video, audio, utterance}, meta}``."""

from __future__ import annotations

from pathlib import Path

from ..errors import AvjudgeError
from ..jsonl import read_jsonl


class ManifestError(AvjudgeError, ValueError):
    """A manifest that cannot be used, naming the file and line."""


def load_manifest(path: str | Path) -> list[dict]:
    """Records with ``video`` resolved against the manifest's folder; ids must be unique."""
    path = Path(path)
    if not path.is_file():
        raise ManifestError(f"{path}: no such manifest")
    records, seen = [], set()
    for i, raw in enumerate(read_jsonl(path), start=1):
        if raw.get("error"):  # a clip the annotator could not caption: not a source
            continue
        for key in ("id", "video"):
            if key not in raw:
                raise ManifestError(f"{path}:{i}: record has no {key!r}")
        if raw["id"] in seen:
            raise ManifestError(f"{path}:{i}: id {raw['id']!r} appears twice")
        seen.add(raw["id"])
        record = dict(raw)
        video = Path(raw["video"])
        record["video"] = str(video if video.is_absolute() else path.parent / video)
        record.setdefault("captions", {})
        record.setdefault("meta", {})
        records.append(record)
    if not records:
        raise ManifestError(f"{path}: the manifest is empty")
    return records
