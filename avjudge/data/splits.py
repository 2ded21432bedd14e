"""Splits by source clip, with hash-based dedupe: identical media never lands in two splits."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..media import MediaError, file_hash


def dedupe_key(record: dict, mode: str) -> str:
    """The key that groups sources: the media's sha256 (the record's ``content_hash`` if given)."""
    if mode == "none":
        return record["id"]
    if record.get("content_hash"):
        return record["content_hash"]
    path = Path(record["video"])
    if not path.is_file():
        raise MediaError(
            path, f"source {record['id']!r} has no media file to hash; fix the manifest or set dedupe: none"
        )
    return file_hash(path)


def _rank(seed: int, key: str) -> str:
    return hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()


def assign_splits(records: list[dict], fractions: dict[str, float], seed: int, mode: str = "content") -> dict[str, str]:
    """Source id -> split. Sources sharing a dedupe key share a split; group counts follow the fractions."""
    groups: dict[str, list[str]] = {}
    for record in records:
        groups.setdefault(dedupe_key(record, mode), []).append(record["id"])
    ordered = sorted(groups, key=lambda key: _rank(seed, key))
    names = list(fractions)
    # largest-remainder counts so the groups per split match the fractions as closely as possible
    exact = [fractions[n] * len(ordered) for n in names]
    counts = [int(e) for e in exact]
    for i in sorted(range(len(names)), key=lambda i: exact[i] - counts[i], reverse=True)[: len(ordered) - sum(counts)]:
        counts[i] += 1
    assignment, start = {}, 0
    for name, count in zip(names, counts):
        for key in ordered[start : start + count]:
            for source_id in groups[key]:
                assignment[source_id] = name
        start += count
    return assignment
