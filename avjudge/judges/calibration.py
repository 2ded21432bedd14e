"""Calibration kept beside a judge's weights: the pointwise temperature (S = sigmoid(delta / T), T fitted on
held-out labelled pairs) and the pairwise preference model (`avjudge.judges.preference`), one file per checkpoint,
an entry per task."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy.optimize import minimize_scalar

from .preference import Preference

CALIBRATION_FILE = "avjudge_calibration.json"


def fit_temperature(deltas, labels) -> float:
    """The T minimising the negative log-likelihood of labels (1 = match) under sigmoid(delta / T)."""
    d = np.asarray(deltas, np.float64)
    y = np.asarray(labels, np.float64)
    if d.shape != y.shape or d.size < 2 or len(set(y.tolist())) < 2:
        raise ValueError("need at least one positive and one negative pair with a delta each")

    def nll(log_t: float) -> float:
        z = d / np.exp(log_t)
        return float(np.mean(np.logaddexp(0.0, -z) * y + np.logaddexp(0.0, z) * (1 - y)))

    return float(np.exp(minimize_scalar(nll, bounds=(-6.0, 6.0), method="bounded").x))


def _entries(checkpoint: str | Path) -> dict:
    path = Path(checkpoint) / CALIBRATION_FILE
    return json.loads(path.read_text()) if path.exists() else {}


def _save(checkpoint: str | Path, task: str, **fields) -> Path:
    path = Path(checkpoint) / CALIBRATION_FILE
    data = _entries(checkpoint)
    data[task] = {**data.get(task, {}), **fields}
    path.write_text(json.dumps(data, indent=2))
    return path


def save_temperature(checkpoint: str | Path, task: str, temperature: float) -> Path:
    return _save(checkpoint, task, temperature=temperature)


def load_temperature(checkpoint: str | Path, task: str) -> float | None:
    return _entries(checkpoint).get(task, {}).get("temperature")


def save_preference(checkpoint: str | Path, task: str, preference: Preference) -> Path:
    return _save(checkpoint, task, preference=preference.to_dict())


def load_preference(checkpoint: str | Path, task: str) -> Preference | None:
    fitted = _entries(checkpoint).get(task, {}).get("preference")
    return Preference(**fitted) if fitted else None
