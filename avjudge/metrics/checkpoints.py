"""The checkpoint manifest: what each metric loads, where avjudge looks, and verification."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..errors import AvjudgeError
from ..media import file_hash
from ..resources import asset

MANIFEST = asset("checkpoints", "manifest.yaml")
ENV = "AVJUDGE_CHECKPOINTS"


class CheckpointMissing(AvjudgeError):
    """A checkpoint file that is absent or not the expected one; the message says what to do."""


@dataclass(frozen=True)
class CheckpointFile:
    name: str
    size: int | None = None  # None with sha256 None: avjudge publishes no hash yet, the user pins one
    sha256: str | None = None


@dataclass(frozen=True)
class CheckpointEntry:
    key: str
    description: str
    licence: str
    source: str
    obtain: str
    files: tuple[CheckpointFile, ...]
    folder: str
    # the whole folder is the checkpoint (a transformers directory that may ship model code): pinning
    # records every file in it, and a file added later (say, a changed .py) is refused
    whole_folder: bool = False


PINS = "pinned.yaml"  # <root>/pinned.yaml: hashes the user recorded for files the manifest does not pin


def checkpoint_root() -> Path:
    return Path(os.environ.get(ENV, "checkpoints"))


def _pins(root: Path) -> dict:
    path = root / PINS
    return (yaml.safe_load(path.read_text()) or {}) if path.is_file() else {}


def load_manifest(path: Path = MANIFEST) -> dict[str, CheckpointEntry]:
    data = yaml.safe_load(path.read_text()) or {}
    return {
        key: CheckpointEntry(
            key,
            e["description"],
            e["licence"],
            e["source"],
            e["obtain"],
            tuple(CheckpointFile(**f) for f in e["files"]),
            e.get("folder", key),
            e.get("whole_folder", False),
        )
        for key, e in data.items()
    }


def checkpoint_hash(path: Path) -> str:
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


def _entry(key: str, manifest: dict[str, CheckpointEntry] | None) -> CheckpointEntry:
    entries = manifest or load_manifest()
    if key not in entries:
        raise CheckpointMissing(f"no checkpoint entry {key!r} in {MANIFEST}; known: {sorted(entries)}")
    return entries[key]


def _folder_files(folder: Path) -> list[str]:
    """Every file under a folder, relative, leaving out dotfiles (hash caches)."""
    return sorted(
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


def resolve(key: str, root: Path | None = None, manifest: dict[str, CheckpointEntry] | None = None) -> dict[str, Path]:
    """file name -> verified path for one entry; a missing or different file is an error that says what to do.

    A file is checked against the manifest's size and sha256, or, where the manifest has none (weights
    whose published hash avjudge could not obtain), against the hash the user pinned with
    `avjudge checkpoints pin`; an unpinned file is refused."""
    entry = _entry(key, manifest)
    root = root or checkpoint_root()
    folder = root / entry.folder
    pinned = _pins(root).get(key, {})
    pin_hint = f"`avjudge checkpoints pin {key}{'' if root == checkpoint_root() else f' --root {root}'}`"
    for f in entry.files:
        if not (folder / f.name).is_file():
            raise CheckpointMissing(
                f"{folder / f.name} is missing ({entry.description}). To get it: {entry.obtain} (source: "
                f"{entry.source}; licence: {entry.licence}). Set {ENV} to use another folder."
            )
    expected = {f.name: f for f in entry.files if f.sha256}
    unpinned = [f.name for f in entry.files if not f.sha256 and f.name not in pinned]
    if unpinned:
        raise CheckpointMissing(
            f"avjudge publishes no sha256 for {folder / unpinned[0]} yet: check the file against {entry.source}, "
            f"then record its hash with {pin_hint}; later loads refuse any other file"
        )
    expected.update({name: CheckpointFile(name, **v) for name, v in pinned.items()})
    if entry.whole_folder:
        extra = sorted(set(_folder_files(folder)) - set(expected))
        if extra:
            raise CheckpointMissing(
                f"{folder} holds files that were not there when it was pinned: {extra}; "
                f"remove them, or check them and pin again with {pin_hint}"
            )
    paths = {}
    for name, want in expected.items():
        path = folder / name
        if not path.is_file() or path.stat().st_size != want.size or checkpoint_hash(path) != want.sha256:
            origin = f" (pinned in {root / PINS})" if name in pinned else ""
            raise CheckpointMissing(
                f"{path} is not the expected file (want sha256 {want.sha256}, {want.size} bytes{origin}); "
                f"replace it: {entry.obtain}"
            )
        paths[name] = path
    return paths


def pin(key: str, root: Path | None = None) -> dict[str, dict]:
    """Record the size and sha256 of an entry's files that the manifest does not pin (trust on first use);
    for a whole-folder entry, of every file in the folder."""
    entry = _entry(key, None)
    root = root or checkpoint_root()
    folder = root / entry.folder
    published = {f.name for f in entry.files if f.sha256}
    names = [f.name for f in entry.files if not f.sha256]
    if entry.whole_folder and folder.is_dir():
        names = sorted(set(names) | set(_folder_files(folder)) - published)
    if not names:
        raise CheckpointMissing(f"{key} is pinned by the manifest ({MANIFEST}); nothing to record")
    files = {}
    for name in names:
        path = folder / name
        if not path.is_file():
            raise CheckpointMissing(f"{path} is missing; put it there first ({entry.obtain})")
        files[name] = {"size": path.stat().st_size, "sha256": checkpoint_hash(path)}
    pins = _pins(root)
    pins[key] = files
    (root / PINS).write_text(yaml.safe_dump(pins, sort_keys=True))
    return files


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
