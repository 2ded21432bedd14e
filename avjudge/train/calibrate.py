"""`avjudge judges calibrate`: a trained judge's pointwise temperature and pairwise preference model, fitted on one
split of its pair dataset and reported on another, before and after.

Each pair clip of a split (its negative applied, cut to its window, as training shows it) is scored once. The
pointwise temperature T (S = σ(δ / T)) is fitted on the fit split's labels (`fit_temperature`); the preference
model (`avjudge.judges.preference`: Rao–Kupper, τ and θ) on its preference pairs: each source's positive against each
of its negatives (the positive preferred; a tie where the recipe marked the negative one, `ties`), shown in both
orders by turns. Without ties in the fit split θ stays 1.

Reported on the report split, with the untrained model (T = 1, τ = 1, θ = 1) beside the fitted one: ECE (15 equal
bins of S), Brier score and log loss of S against the labels; log loss of the preference pairs' outcomes; accuracy
of the preferences without ties (which clip the higher log-odds picks) and with ties (a tie called where the two
log-odds differ by at most a threshold chosen on the fit split, never the report split); a reliability diagram.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.special import expit

from ..config import ConfigError
from ..data import PairDataset, built_sources, load_pairs
from ..judges import Judge
from ..judges.calibration import fit_temperature, save_preference, save_temperature
from ..judges.preference import Preference, fit_preference, log_likelihoods
from ..media import MediaError
from ..perturb import PerturbError, SourcePool
from ..stats import finite_number, reliability

ECE_BINS = 15


def scored_split(judge: Judge, dataset: Path, split: str, limit: int | None = None) -> tuple[list[dict], int]:
    """The split's pair records with each clip's log-odds (``delta``), and how many were left out: a pair whose clip
    cannot be made or scored."""
    pool = SourcePool(built_sources(dataset))
    records = load_pairs(dataset, judge.task.name, split, limit, pool.records)
    pairs = PairDataset(records, pool, judge.settings.sample_rate, judge.settings.fps, dataset,
                        max_pixels=judge.needs.max_pixels)  # fmt: skip
    clips, kept = [], []
    for k in range(len(pairs)):
        try:
            record, clip = pairs[k]
        except (PerturbError, MediaError):
            continue
        clips.append(clip)
        kept.append(record)
    texts = [r.get("text") or "" for r in kept] if judge.task.needs_text else None
    results = judge.score(clips, texts, [r.get("utterance") for r in kept] if judge.task.needs_text else None)
    scored = [{**r, "delta": res.delta} for r, res in zip(kept, results) if finite_number(res.delta)]
    return scored, len(records) - len(scored)


def preference_pairs(records: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(δ_A, δ_B, outcome index) of each source's positive against each of its negatives, the positive first and
    second by turns (outcome 0: A preferred, 2: B preferred, 1: a tie, for a negative its recipe marked one)."""
    by_source: dict = {}
    for r in records:
        sides = by_source.setdefault(r["source_id"], {"pos": [], "neg": []})
        sides["pos" if r["label"] else "neg"].append((r["delta"], bool(r.get("tie"))))
    a, b, outcome = [], [], []
    for sides in by_source.values():
        for positive, _ in sides["pos"]:
            for negative, tie in sides["neg"]:
                first = len(a) % 2 == 0
                a.append(positive if first else negative)
                b.append(negative if first else positive)
                outcome.append(1 if tie else 0 if first else 2)
    return np.asarray(a), np.asarray(b), np.asarray(outcome)


def pointwise_figures(deltas, labels, temperature: float) -> dict:
    s = np.clip(expit(np.asarray(deltas) / temperature), 1e-12, 1 - 1e-12)
    y = np.asarray(labels, np.float64)
    return {
        **reliability(s, y, ECE_BINS),
        "brier": float(np.mean((s - y) ** 2)),
        "log_loss": float(-np.mean(y * np.log(s) + (1 - y) * np.log(1 - s))),
    }


def tie_threshold(a, b, outcome) -> float:
    """The |δ_A − δ_B| at or below which calling a tie gives the most accurate outcomes on these pairs."""
    gaps = np.abs(a - b)
    best, best_accuracy = 0.0, -1.0
    for t in np.concatenate([[0.0], np.sort(gaps)]):
        accuracy = float(np.mean(_called(a, b, t) == outcome))
        if accuracy > best_accuracy:
            best, best_accuracy = float(t), accuracy
    return best


def _called(a, b, threshold: float) -> np.ndarray:
    return np.where(np.abs(a - b) <= threshold, 1, np.where(a > b, 0, 2))


def pairwise_figures(a, b, outcome, model: Preference, threshold: float) -> dict:
    decided = outcome != 1
    return {
        "pairs": int(len(a)),
        "log_loss": float(-np.mean(log_likelihoods(model, a, b, outcome))),
        "accuracy_without_ties": float(np.mean(np.where(a > b, 0, 2)[decided] == outcome[decided])),
        "accuracy_with_ties": float(np.mean(_called(a, b, threshold) == outcome)),
        "tie_threshold": threshold,
    }


def calibration_splits(dataset: str | Path, task: str, fit_split: str | None, report_split: str) -> tuple[str, str]:
    """(fit split, report split) of ``task``'s pairs in ``dataset``: ``fit_split`` (None: val where the dataset has
    one, else train) and ``report_split``, checked to exist and to differ before any judge loads.

    Raises:
        ConfigError: a split the dataset does not hold (its splits named), or one split for both.
    """
    held = sorted(path.stem for path in (Path(dataset) / "pairs" / task).glob("*.jsonl"))
    fit_split = fit_split or ("val" if "val" in held else "train")
    for role, split in (("fit", fit_split), ("report", report_split)):
        if split not in held:
            raise ConfigError(f"{dataset} holds no {task} pairs of the {role} split {split!r}; its splits: {held}")
    if fit_split == report_split:
        raise ConfigError(f"fit on one split and report on another, not both on {fit_split!r}")
    return fit_split, report_split


def calibrate(judge: Judge, dataset: str | Path, fit_split: str | None = None, report_split: str = "test",
              limit: int | None = None, write: bool = True) -> dict:  # fmt: skip
    """Fit the judge's temperature and preference model on ``fit_split`` and report both splits' figures before and
    after on ``report_split``; ``write`` saves the fitted values beside the judge's weights, where `Judge.load`
    reads them."""
    dataset = Path(dataset)
    fit_split, report_split = calibration_splits(dataset, judge.task.name, fit_split, report_split)
    fit, fit_left_out = scored_split(judge, dataset, fit_split, limit)
    report, report_left_out = scored_split(judge, dataset, report_split, limit)
    for split, records in ((fit_split, fit), (report_split, report)):
        if len({r["label"] for r in records}) < 2:
            raise ConfigError(f"{dataset}: the {split} split has no scored positive and negative pairs to calibrate on")
    try:  # a judge at chance is reported (a dry run), never written: its temperature would flatten every score
        temperature = fit_temperature([r["delta"] for r in fit], [r["label"] for r in fit], allow_flat=not write)
    except ValueError as err:
        raise ConfigError(f"{judge.adapter.checkpoint}: {err} (--dry-run reports its figures)") from None
    fit_a, fit_b, fit_outcome = preference_pairs(fit)
    a, b, outcome = preference_pairs(report)
    if len(fit_a) < 2 or len(a) < 1:
        raise ConfigError(f"{dataset}: too few sources with a positive and a negative to fit a preference model")
    model = fit_preference(fit_a, fit_b, fit_outcome)
    threshold = tie_threshold(fit_a, fit_b, fit_outcome)  # from the fit split: the report split never chooses it
    deltas, labels = [r["delta"] for r in report], [r["label"] for r in report]
    # the fitted temperature is kept only where it calibrates the held-out pairs better than none: a fit split unlike
    # the report split (few pairs, another mix of negatives) can make them worse, and the judge is then left as it was
    fitted_temperature = temperature
    before, after = pointwise_figures(deltas, labels, 1.0), pointwise_figures(deltas, labels, temperature)
    fitted_log_loss = after["log_loss"]
    kept = "fitted" if fitted_log_loss <= before["log_loss"] else "identity"
    if kept == "identity":
        temperature, after = 1.0, before
    result = {
        "judge": judge.task.name,
        "checkpoint": str(judge.adapter.checkpoint),
        "fit_split": fit_split,
        "report_split": report_split,
        "fitted": {"temperature": temperature, "preference": model.to_dict()},
        # the temperature kept: the fitted one, or 1 (identity) where the fit made the report split's log loss worse
        "temperature_kept": {"kept": kept, "fitted": fitted_temperature, "fitted_log_loss": fitted_log_loss},
        "pairs": {"fit": len(fit), "report": len(report), "left_out": fit_left_out + report_left_out},
        "pointwise": {"before": before, "after": after},
        "pairwise": {
            "before": pairwise_figures(a, b, outcome, Preference(), 0.0),
            "after": pairwise_figures(a, b, outcome, model, threshold),
        },
    }
    if write:
        save_temperature(judge.adapter.checkpoint, judge.task.name, temperature)
        save_preference(judge.adapter.checkpoint, judge.task.name, model)
    return result


def reliability_diagram(result: dict, path: str | Path) -> Path:
    """The report split's reliability diagram, before and after (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(4.5, 4.5))
    axis.plot([0, 1], [0, 1], color="0.7", linestyle="--", label="calibrated")
    for when, marker in (("before", "o"), ("after", "s")):
        figures = result["pointwise"][when]
        bins = figures["bins"]
        axis.plot([r["mean_score"] for r in bins], [r["positives"] for r in bins], marker=marker,
                  label=f"{when} (ECE {figures['ece']:.3f})")  # fmt: skip
        for r in bins:  # how many pairs each point stands on: a bin of three says little
            axis.annotate(f"{r['count']}", (r["mean_score"], r["positives"]), textcoords="offset points",
                          xytext=(4, -10 if when == "before" else 4), fontsize=7)  # fmt: skip
    axis.set_xlabel("S (mean in bin; beside each point, its pairs)")
    axis.set_ylabel("share of matching pairs")
    axis.set_title(f"{result['judge']} judge, {result['report_split']} split")
    axis.legend(loc="upper left")
    figure.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
