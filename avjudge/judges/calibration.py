"""Temperature calibration: S = sigmoid(delta / T) with T fitted on held-out labelled pairs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy.optimize import minimize_scalar

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


def save_temperature(checkpoint: str | Path, task: str, temperature: float) -> Path:
    path = Path(checkpoint) / CALIBRATION_FILE
    data = json.loads(path.read_text()) if path.exists() else {}
    data[task] = {"temperature": temperature}
    path.write_text(json.dumps(data, indent=2))
    return path


def load_temperature(checkpoint: str | Path, task: str) -> float | None:
    path = Path(checkpoint) / CALIBRATION_FILE
    if not path.exists():
        return None
    return json.loads(path.read_text()).get(task, {}).get("temperature")
