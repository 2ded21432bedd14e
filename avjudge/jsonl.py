"""Append-only JSONL records: the resumable output format of every batch job."""

from __future__ import annotations

import fcntl
import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

from .config import ConfigError
from .errors import AvjudgeError


class OutputBusy(AvjudgeError):
    """An output another run is writing: two writers would interleave and redo each other's work."""


@contextmanager
def output_lock(target: str | Path) -> Iterator[None]:
    """Hold ``.TARGET.lock`` beside ``target`` while writing it: one writer per output. The lock is the kernel's
    (``flock``), so a killed run leaves none behind.

    Raises:
        OutputBusy: another process holds it (the message names the output and how to go on).
    """
    path = Path(target)
    if path.parent.exists() and not path.parent.is_dir():
        raise ConfigError(f"{path.parent} is a file, not a folder: give an --out whose folder can hold {path.name}")
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = path.with_name(f".{path.name}.lock")  # hidden: it stays, harmless, beside the output
    if lock.exists() and not lock.is_file():
        raise ConfigError(f"{lock} (the lock of {path}) is not a file: remove it, or give another --out")
    with open(lock, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise OutputBusy(
                f"{path} is being written by another run ({holder}): wait for it to end, or give another --out"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read_json_object(path: str | Path, fix: str) -> dict:
    """The JSON object a file an earlier run wrote holds (a train record, a build's splits, a bench summary),
    read strictly: a truncated or hand-broken file is an error naming it and ``fix`` (how to make it anew), never a
    traceback mid-run.

    Raises:
        ConfigError: not JSON, not UTF-8, or not an object.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: not valid JSON ({err}); {fix}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object, not {type(data).__name__}; {fix}")
    return data


def read_jsonl(path: str | Path, strict: bool = False) -> Iterator[dict]:
    """Records of a JSONL file. A job's own output forgives a torn last line (a killed writer: the record is redone on
    resume); ``strict``, for a file a user wrote (a manifest), forgives nothing: a line that is not a JSON object,
    last or not, is an error naming ``file:line``, and a UTF-8 byte-order mark is read past.

    Raises:
        ValueError: a line that is not valid JSON (or, ``strict``, not an object).
    """
    return (record for _, record in numbered_jsonl(path, strict))


def numbered_jsonl(path: str | Path, strict: bool = False) -> Iterator[tuple[int, dict]]:
    """(line number, record) of each record of a JSONL file, read as `read_jsonl` reads it: for errors that name
    ``file:line``."""
    p = Path(path)
    if not p.exists():
        return
    with open(p, encoding="utf-8-sig" if strict else "utf-8") as f:
        lines = f.readlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            if i == len(lines) - 1 and not strict:
                return  # interrupted mid-write: the record is redone on resume
            raise ValueError(f"{p}:{i + 1}: not valid JSON ({err})") from err
        if strict and not isinstance(record, dict):
            raise ValueError(f"{p}:{i + 1}: a record must be a JSON object, not {type(record).__name__}")
        yield i + 1, record


class JsonlWriter:
    """Appends one record per line, flushed at once: a killed process loses at most the line it was
    writing (the OS keeps what was flushed). ``fsync`` at close guards against power loss too."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._trim_torn_tail()
        self._f = open(self.path, "a", encoding="utf-8")

    def _trim_torn_tail(self) -> None:
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        data = self.path.read_bytes()
        if not data.endswith(b"\n"):
            self.path.write_bytes(data[: data.rfind(b"\n") + 1])

    def write(self, record: dict) -> None:
        self._f.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._f.flush()

    def write_all(self, records: Iterable[dict]) -> None:
        for r in records:
            self.write(r)

    def close(self) -> None:
        self._f.flush()
        os.fsync(self._f.fileno())
        self._f.close()

    def __enter__(self) -> "JsonlWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def write_json(path: str | Path, obj) -> None:
    """Write JSON atomically (temp file + rename)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, p)
