"""Statistics every layer uses (imports nothing from avjudge)."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from typing import Callable

import numpy as np


def auroc(scores: np.ndarray, labels: np.ndarray) -> float | None:
    """Probability that a positive outscores a negative (ties count half)."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    if not len(pos) or not len(neg):
        return None
    order = np.argsort(np.concatenate([pos, neg]), kind="mergesort")
    ranks = np.empty(len(order))
    values = np.concatenate([pos, neg])[order]
    i = 0
    while i < len(values):  # average ranks over ties
        j = i
        while j + 1 < len(values) and values[j + 1] == values[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def auroc_interval(
    scores: np.ndarray, labels: np.ndarray, draws: int = 1000, seed: int = 0
) -> tuple[float | None, list[float] | None]:
    """(AUROC, its 95 % bootstrap interval): positives and negatives resampled apart, ``draws`` times (0: no
    interval); (None, None) with one class missing."""
    from scipy.stats import rankdata  # scipy is a base requirement; stats itself stays light to import

    pos, neg = np.asarray(scores, float)[labels == 1], np.asarray(scores, float)[labels == 0]
    if not len(pos) or not len(neg):
        return None, None

    def areas(p: np.ndarray, n: np.ndarray) -> np.ndarray:  # rows of resamples; ties count half (mid ranks)
        ranks = rankdata(np.concatenate([p, n], axis=-1), axis=-1)[..., : p.shape[-1]]
        return (ranks.sum(-1) - p.shape[-1] * (p.shape[-1] + 1) / 2) / (p.shape[-1] * n.shape[-1])

    if not draws:
        return float(areas(pos, neg)), None
    rng = np.random.default_rng(seed)
    resampled = areas(
        pos[rng.integers(0, len(pos), (draws, len(pos)))], neg[rng.integers(0, len(neg), (draws, len(neg)))]
    )
    return float(areas(pos, neg)), np.percentile(resampled, [2.5, 97.5]).tolist()


def printed(value: float | None, digits: int = 2, missing: str = "-") -> str:
    """A figure as papers print it, rounded half up (0.495 -> 0.50, which float formatting does not do); ``missing``
    where it is undefined (no answers, an AUROC with one class, a correlation of a constant)."""
    if value is None:
        return missing
    return str(Decimal(repr(round(value, 9))).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def per_negative_type(scores, labels, negative_types, metric: Callable[[np.ndarray, np.ndarray], object]) -> dict:
    """``metric(scores, labels)`` for each negative type present: its negatives against every positive."""
    s, y, kinds = np.asarray(scores, float), np.asarray(labels, int), np.asarray(negative_types)
    return {
        str(kind): metric(s[(y == 1) | (kinds == kind)], y[(y == 1) | (kinds == kind)])
        for kind in sorted(set(kinds[y == 0].tolist()))
    }


def finite_number(value) -> bool:
    """A real number JSON can carry and a reward can use: not a bool, not NaN, not infinite."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
