"""Held-out judge metrics: accuracy at 0.5, AUROC, balanced accuracy, Yes-bias, calibration
error, overall and per negative type (each negative type against all held-out positives)."""

from __future__ import annotations

import numpy as np

from ..data.shortcuts import MIN_REPORTED
from ..stats import auroc, per_negative_type, printed, reliability


def calibration_error(scores, labels, bins: int = 10) -> float:
    """Expected calibration error of P(match) = score against the labels, equal-width bins."""
    return reliability(scores, labels, bins)["ece"]


def pairwise_accuracy(scores, labels, sources) -> float | None:
    """The share of (positive, negative) pairs of one source that the scores order rightly (a tie: half); None
    without such pairs."""
    by_source: dict = {}
    for score, label, source in zip(scores, labels, sources):
        by_source.setdefault(source, ([], []))[0 if label else 1].append(score)
    right = [
        1.0 if p > n else 0.5 if p == n else 0.0
        for positives, negatives in by_source.values()
        for p in positives
        for n in negatives
    ]
    return float(np.mean(right)) if right else None


def binary_metrics(scores, labels) -> dict:
    s, y = np.asarray(scores, float), np.asarray(labels, int)
    pred = s >= 0.5
    tpr = pred[y == 1].mean() if (y == 1).any() else np.nan
    tnr = (~pred[y == 0]).mean() if (y == 0).any() else np.nan
    return {
        "n": int(len(y)),
        "accuracy": float((pred == y).mean()),
        "balanced_accuracy": float(np.nanmean([tpr, tnr])),
        "auroc": auroc(s, y),
        "yes_bias": float(pred.mean()),
        "calibration_error": calibration_error(s, y),
    }


def judge_metrics(scores, labels, negative_types) -> dict:
    """Overall metrics plus one entry per negative type (its negatives vs every positive, and how many negatives)."""
    kinds = np.asarray(negative_types)
    per_type = per_negative_type(scores, labels, negative_types, binary_metrics)
    return {
        "overall": binary_metrics(scores, labels),
        "per_type": {kind: {**m, "negatives": int((kinds == kind).sum())} for kind, m in per_type.items()},
    }


def shown(figures: dict) -> dict:
    """A negative type's figures as a table shows them: its balanced accuracy and AUROC left out (n/a) where it has
    fewer held-out negatives than the shortcut audit reports on (`MIN_REPORTED`): one pair's accuracy says nothing."""
    if figures.get("negatives", MIN_REPORTED) >= MIN_REPORTED:
        return figures
    return {**figures, "balanced_accuracy": None, "auroc": None}


def evaluation_table(results: dict[str, dict]) -> list[str]:
    """Held-out figures before and after training, a block per judge in ``results`` (name -> {"eval_before",
    "eval_after"}, as `run_training` returns them; "eval_before" is None where a resumed run never saw the model
    untrained): over all pairs, then per negative type, the balanced accuracy at S = 0.5 and the AUROC (at any
    threshold); an undefined figure is n/a, as is a type's with too few held-out negatives (`shown`). The first lines
    say what the columns hold."""

    def row(name: str, label: str, before: dict, after: dict) -> str:
        figures = [before.get("balanced_accuracy"), after.get("balanced_accuracy"), before.get("auroc"),
                   after.get("auroc")]  # fmt: skip
        return f"{name:<6}{label:<22}" + "".join(f"{printed(v, 3, 'n/a'):>8}" for v in figures)

    lines = [
        "held-out figures per negative type (each type against all held-out positives), before and after training:",
        f"{'':<28}{'balanced accuracy':>16}{'AUROC':>16}",
        f"{'judge':<6}{'negative type':<22}{'before':>8}{'after':>8}{'before':>8}{'after':>8}",
    ]
    for name, result in results.items():
        before, after = result["eval_before"] or {"overall": {}, "per_type": {}}, result["eval_after"]
        lines.append(row(name, "(all pairs)", before["overall"], after["overall"]))
        lines += [
            row("", kind, shown(before["per_type"].get(kind, {})), shown(after["per_type"][kind]))
            for kind in sorted(after["per_type"])
        ]
    return lines
