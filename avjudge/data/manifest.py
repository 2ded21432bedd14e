"""Source manifests: JSONL of ``{id, video, captions: {video, audio, utterance}, meta}``; and what every command's
``--input`` reads: media files, folders of them, or manifests."""

from __future__ import annotations

from pathlib import Path

from ..errors import AvjudgeError
from ..jsonl import read_jsonl
from ..stats import finite_number
from ..tables import is_parquet, read_table

MEDIA_EXTENSIONS = (".mp4", ".mkv", ".mov", ".webm", ".wav", ".flac")


class ManifestError(AvjudgeError, ValueError):
    """A manifest that cannot be used, naming the file and line."""


MANIFEST_SUFFIXES = (".jsonl", ".parquet")


def _rows(path: Path):
    """A manifest's raw records: JSONL lines, or Parquet rows (a caption a row lacks is absent, not None)."""
    if not is_parquet(path):
        try:
            yield from read_jsonl(path, strict=True)  # a user's file: no line of it is dropped
        except ValueError as err:
            raise ManifestError(str(err)) from err
        return
    for row in read_table(path):
        if isinstance(row.get("captions"), dict):
            row["captions"] = {k: v for k, v in row["captions"].items() if v is not None}
        yield row


def load_manifest(path: str | Path) -> list[dict]:
    """Records (JSONL lines or Parquet rows) with ``video`` resolved against the manifest's folder; ids must be
    unique."""
    path = Path(path)
    if not path.is_file():
        if not path.is_dir():
            raise ManifestError(f"{path}: no such manifest")
        inside = sorted(path.glob("*.jsonl")) + sorted(path.glob("*.parquet"))
        hint = f"; did you mean {inside[0]}?" if len(inside) == 1 else f" (it holds {len(inside)}: name one)"
        raise ManifestError(f"{path}: a folder, not a manifest{hint if inside else ''}")
    records, seen = [], set()
    for i, raw in enumerate(_rows(path), start=1):
        if raw.get("error"):  # a clip the annotator could not caption: not a source
            continue
        for key in ("id", "video"):
            if key not in raw:
                raise ManifestError(f"{path}:{i}: record has no {key!r}")
        if not isinstance(raw["video"], str) or not raw["video"]:
            raise ManifestError(f"{path}:{i}: 'video' must be a path (a non-empty string), not {raw['video']!r}")
        if isinstance(raw["id"], bool) or not isinstance(raw["id"], (str, int)) or raw["id"] == "":
            raise ManifestError(f"{path}:{i}: 'id' must be a non-empty string or a number, not {raw['id']!r}")
        if raw["id"] in seen:
            raise ManifestError(f"{path}:{i}: id {raw['id']!r} appears twice")
        seen.add(raw["id"])
        record = dict(raw)
        video = Path(raw["video"])
        record["video"] = str(video if video.is_absolute() else path.parent / video)
        for key in ("captions", "meta"):  # absent or null: none; anything but a mapping: an error
            if not isinstance(raw.get(key) or {}, dict):
                raise ManifestError(f"{path}:{i}: {key!r} must be a mapping, not {raw[key]!r}")
            record[key] = raw.get(key) or {}
        not_text = {k: v for k, v in record["captions"].items() if not isinstance(v, str)}
        if not_text:  # a judge would read "5" or "None" as the clip's caption
            raise ManifestError(f"{path}:{i}: captions are text, not {not_text}")
        for where, holder in (("duration", record), ("meta.duration", record["meta"])):
            seconds = holder.get("duration")
            if seconds is not None and not (finite_number(seconds) and seconds > 0):
                # windows and negatives are drawn within it: a wrong one is wrong for every pair of the source
                raise ManifestError(f"{path}:{i}: {where!r} is the clip's length in seconds, not {seconds!r}")
        records.append(record)
    if not records:
        raise ManifestError(f"{path}: the manifest is empty")
    return records


def input_items(inputs: str | Path | list[str | Path], text: str | None = None) -> list[dict]:
    """The clips ``inputs`` name, each ``{id, video, captions}``: a manifest (``.jsonl``, ``.parquet``) gives its
    records, a folder every media file below it (id: its path inside the folder), a file itself (id: its path).
    ``text``, if given, is the caption of every clip that has none."""
    items = []
    for source in [inputs] if isinstance(inputs, (str, Path)) else inputs:
        path = Path(source)
        if path.suffix in MANIFEST_SUFFIXES:
            items += load_manifest(path)
        elif path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.suffix.lower() in MEDIA_EXTENSIONS)
            if not files:
                raise ManifestError(f"{path}: no media files ({', '.join(MEDIA_EXTENSIONS)}) in this folder")
            items += [{"id": str(p.relative_to(path)), "video": str(p), "captions": {}} for p in files]
        elif path.is_file():
            items.append({"id": str(path), "video": str(path), "captions": {}})
        else:
            raise ManifestError(
                f"{path}: no such file or folder; --input takes a media file, a folder of them or a manifest "
                "(.jsonl, .parquet)"
            )
    if text is not None:
        for item in items:
            if not item["captions"]:
                item["captions"] = {"video": text, "audio": text}
    return items
