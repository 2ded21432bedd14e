"""Held-out judge metrics: accuracy at 0.5, AUROC, balanced accuracy, Yes-bias, calibration
error, overall and per negative type (each negative type against all held-out positives)."""
from __future__ import annotations

import numpy as np

from ..stats import auroc, per_negative_type


def calibration_error(scores: np.ndarray, labels: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error of P(match) = score against the labels, equal-width bins."""
    edges = np.linspace(0, 1, bins + 1)
    which = np.clip(np.digitize(scores, edges) - 1, 0, bins - 1)
    err = 0.0
    for b in range(bins):
        mask = which == b
        if mask.any():
            err += mask.mean() * abs(scores[mask].mean() - labels[mask].mean())
    return float(err)


def binary_metrics(scores, labels) -> dict:
    s, y = np.asarray(scores, float), np.asarray(labels, int)
    pred = s >= 0.5
    tpr = pred[y == 1].mean() if (y == 1).any() else np.nan
    tnr = (~pred[y == 0]).mean() if (y == 0).any() else np.nan
    return {
        "n": int(len(y)), "accuracy": float((pred == y).mean()), "balanced_accuracy": float(np.nanmean([tpr, tnr])),
        "auroc": auroc(s, y), "yes_bias": float(pred.mean()), "calibration_error": calibration_error(s, y),
    }


def judge_metrics(scores, labels, negative_types) -> dict:
    """Overall metrics plus one entry per negative type (its negatives vs every positive)."""
    return {"overall": binary_metrics(scores, labels),
            "per_type": per_negative_type(scores, labels, negative_types, binary_metrics)}
