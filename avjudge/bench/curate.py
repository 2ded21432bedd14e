"""`avjudge bench curate`: pick balanced prompts from candidates.

Hard-quota greedy sampling: candidates are visited in a seeded random order and one is taken only if,
with it, no value of any balanced attribute (language, speaker count, emotion...) holds more than
``cap`` of the target size. Candidates whose prompt text also appears in a training manifest
(compared by a hash of the normalised text) are dropped first, so the prompts never test what a
judge was trained on.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from pathlib import Path

import numpy as np

from ..data import load_manifest
from .errors import BenchError
from .prompt_files import PromptEntry


def text_hash(text: str) -> str:
    """Hash of text with case, punctuation and spacing removed."""
    normal = " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())
    return hashlib.sha256(normal.encode()).hexdigest()


def training_hashes(manifest: str | Path) -> set[str]:
    hashes = set()
    for record in load_manifest(manifest):
        captions = record.get("captions") or {}
        hashes.update(text_hash(t) for t in captions.values() if isinstance(t, str) and t.strip())
    return hashes


def entry_texts(entry: PromptEntry) -> list[str]:
    return [t for t in (entry.prompt_vision, entry.prompt_audio, entry.full_prompt) if t.strip()]


def curate(
    candidates: list[PromptEntry],
    n: int,
    attributes: list[str],
    cap: float = 0.5,
    seed: int = 0,
    exclude_hashes: set[str] | None = None,
) -> tuple[list[PromptEntry], dict]:
    """Up to ``n`` entries with no attribute value above ``cap * n``; returns them and a report."""
    if not 0 < cap <= 1:
        raise BenchError(f"cap must be in (0, 1], got {cap}")
    absent = [a for a in attributes if not any(a in e.attributes for e in candidates)]
    if absent:
        known = sorted({k for e in candidates for k in e.attributes})
        raise BenchError(f"no candidate has attribute(s) {absent}; the candidates have {known}")
    exclude = exclude_hashes or set()
    fresh = [e for e in candidates if not any(text_hash(t) in exclude for t in entry_texts(e))]
    limit = int(np.floor(cap * n + 1e-9))
    counts = {a: Counter() for a in attributes}
    chosen = []
    for i in np.random.default_rng(seed).permutation(len(fresh)):
        entry = fresh[i]
        values = {a: str(entry.attributes.get(a)) for a in attributes}
        if all(counts[a][v] < limit for a, v in values.items()):
            chosen.append(entry)
            for a, v in values.items():
                counts[a][v] += 1
            if len(chosen) == n:
                break
    report = {
        "candidates": len(candidates),
        "duplicates_of_training": len(candidates) - len(fresh),
        "target": n,
        "chosen": len(chosen),
        "shortfall": n - len(chosen),
        "cap_per_value": limit,
        "distribution": {
            a: {v: {"count": c, "share": round(c / max(1, len(chosen)), 4)} for v, c in counts[a].most_common()}
            for a in attributes
        },
        "splits": dict(Counter(e.split for e in chosen)),
    }
    return chosen, report
