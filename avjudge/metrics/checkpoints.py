"""The checkpoint manifest: what each metric loads, where avjudge looks, and verification."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..errors import AvjudgeError
from ..media import file_hash

MANIFEST = Path(__file__).resolve().parent.parent.parent / "checkpoints" / "manifest.yaml"
ENV = "AVJUDGE_CHECKPOINTS"


class CheckpointMissing(AvjudgeError):
    """A checkpoint file that is absent or not the expected one; the message says what to do."""


@dataclass(frozen=True)
class CheckpointFile:
    name: str
    size: int
    sha256: str


@dataclass(frozen=True)
class CheckpointEntry:
    key: str
    description: str
    licence: str
    source: str
    obtain: str
    files: tuple[CheckpointFile, ...]
    folder: str


def checkpoint_root() -> Path:
    return Path(os.environ.get(ENV, "checkpoints"))


def load_manifest(path: Path = MANIFEST) -> dict[str, CheckpointEntry]:
    data = yaml.safe_load(path.read_text()) or {}
    return {key: CheckpointEntry(key, e["description"], e["licence"], e["source"], e["obtain"],
                                 tuple(CheckpointFile(**f) for f in e["files"]), e.get("folder", key))
            for key, e in data.items()}


def _verified_hash(path: Path) -> str:
    """sha256 of a file, cached beside it by size and mtime so a large file is hashed once."""
    stat = path.stat()
    cache = path.with_name(f".{path.name}.sha256.json")
    if cache.exists():
        cached = json.loads(cache.read_text())
        if cached.get("size") == stat.st_size and cached.get("mtime") == stat.st_mtime:
            return cached["sha256"]
    digest = file_hash(path)
    try:
        cache.write_text(json.dumps({"size": stat.st_size, "mtime": stat.st_mtime, "sha256": digest}))
    except OSError:
        pass  # a read-only checkpoint folder: hash again next time
    return digest


def resolve(key: str, root: Path | None = None, manifest: dict[str, CheckpointEntry] | None = None) -> dict[str, Path]:
    """file name -> verified path for one entry; a missing or different file is an error that says what to do."""
    entries = manifest or load_manifest()
    if key not in entries:
        raise CheckpointMissing(f"no checkpoint entry {key!r} in {MANIFEST}; known: {sorted(entries)}")
    entry = entries[key]
    folder = (root or checkpoint_root()) / entry.folder
    paths = {}
    for f in entry.files:
        path = folder / f.name
        if not path.is_file():
            raise CheckpointMissing(
                f"{path} is missing ({entry.description}). To get it: {entry.obtain} (source: {entry.source}; "
                f"licence: {entry.licence}). Set {ENV} to use another folder.")
        if path.stat().st_size != f.size or _verified_hash(path) != f.sha256:
            raise CheckpointMissing(
                f"{path} is not the expected file (want sha256 {f.sha256}, {f.size} bytes); "
                f"replace it: {entry.obtain}")
        paths[f.name] = path
    return paths


def verify_all(root: Path | None = None) -> dict[str, str]:
    """entry -> "ok" or the problem, for every manifest entry."""
    status = {}
    for key in load_manifest():
        try:
            resolve(key, root)
            status[key] = "ok"
        except CheckpointMissing as err:
            status[key] = str(err)
    return status
