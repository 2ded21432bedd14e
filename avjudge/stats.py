"""Statistics every layer uses (imports nothing from avjudge)."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal
from typing import Callable

import numpy as np


def _areas(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """AUROC of positives against negatives along the last axis (rows: resamples); ties count half (mid ranks)."""
    from scipy.stats import rankdata  # scipy is a base requirement; stats itself stays light to import

    ranks = rankdata(np.concatenate([pos, neg], axis=-1), axis=-1)[..., : pos.shape[-1]]
    return (ranks.sum(-1) - pos.shape[-1] * (pos.shape[-1] + 1) / 2) / (pos.shape[-1] * neg.shape[-1])


def _classes(scores, labels) -> tuple[np.ndarray, np.ndarray]:
    scores, labels = np.asarray(scores, float), np.asarray(labels)
    return scores[labels == 1], scores[labels == 0]


def auroc(scores: np.ndarray, labels: np.ndarray) -> float | None:
    """Probability that a positive outscores a negative (ties count half); None with one class missing."""
    pos, neg = _classes(scores, labels)
    return float(_areas(pos, neg)) if len(pos) and len(neg) else None


def interval95(values) -> list[float] | None:
    """The 95 % percentile interval of bootstrap ``values`` (their finite ones); None where there are none."""
    values = np.asarray(values, float)
    values = values[np.isfinite(values)]
    return np.percentile(values, [2.5, 97.5]).tolist() if len(values) else None


def auroc_interval(
    scores: np.ndarray, labels: np.ndarray, draws: int = 1000, seed: int = 0
) -> tuple[float | None, list[float] | None]:
    """(`auroc`, its 95 % bootstrap interval): positives and negatives resampled apart, ``draws`` times (0: no
    interval); (None, None) with one class missing."""
    value = auroc(scores, labels)
    if value is None or not draws:
        return value, None
    pos, neg = _classes(scores, labels)
    rng = np.random.default_rng(seed)
    resampled = _areas(
        pos[rng.integers(0, len(pos), (draws, len(pos)))], neg[rng.integers(0, len(neg), (draws, len(neg)))]
    )
    return value, interval95(resampled)


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


def is_number(value) -> bool:
    """A real number, Python's or numpy's, not a bool."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def finite_number(value) -> bool:
    """A real number JSON can carry and a reward can use: not a bool, not NaN, not infinite."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def reliability(scores, labels, bins: int = 10) -> dict:
    """Expected calibration error of probabilities ``scores`` against 0 / 1 ``labels`` over ``bins`` equal-width
    bins, and each bin's count, mean score and share of positives (a reliability diagram's points).

    Raises:
        ValueError: a score that is not a probability (NaN, infinite, outside [0, 1]) or a label not 0 / 1.
    """
    s, y = np.asarray(scores, np.float64), np.asarray(labels, np.float64)
    if not (np.isfinite(s).all() and ((s >= 0) & (s <= 1)).all()):
        raise ValueError(f"reliability takes probabilities in [0, 1]; got {s[~((s >= 0) & (s <= 1))][:5].tolist()}")
    if not np.isin(y, (0.0, 1.0)).all():
        raise ValueError(f"reliability takes 0 / 1 labels; got {sorted(set(y[~np.isin(y, (0.0, 1.0))].tolist()))[:5]}")
    which = np.minimum((s * bins).astype(int), bins - 1)
    rows, ece = [], 0.0
    for k in range(bins):
        inside = which == k
        if inside.any():
            confidence, positives = float(s[inside].mean()), float(y[inside].mean())
            ece += inside.mean() * abs(confidence - positives)
            rows.append({"bin": k, "count": int(inside.sum()), "mean_score": confidence, "positives": positives})
    return {"ece": float(ece), "bins": rows}
