"""Calibration kept beside a judge's weights: the pointwise temperature (S = sigmoid(delta / T), T fitted on
held-out labelled pairs) and the pairwise preference model (`avjudge.judges.preference`), one file per checkpoint,
an entry per task."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from scipy.optimize import minimize_scalar

from ..config import ConfigError
from ..jsonl import read_json_object
from ..stats import finite_number
from .preference import Preference, finite_deltas

CALIBRATION_FILE = "avjudge_calibration.json"


LOG_T_BOUNDS = (-6.0, 6.0)  # the temperatures searched: e^-6 to e^6


def fit_temperature(deltas, labels, allow_flat: bool = False) -> float:
    """The T minimising the negative log-likelihood of labels (1 = match) under sigmoid(delta / T); ``allow_flat``
    returns the largest T searched where the fit runs to it, instead of refusing (to report such a judge's figures).

    Raises:
        ValueError: too few pairs of either label, a log-odds that is not a finite number, or a judge whose log-odds
            do not follow the labels at all (the fit would flatten every score to ½ at the largest T searched).
    """
    d = finite_deltas(deltas)
    y = np.asarray(labels, np.float64)
    if d.shape != y.shape or d.size < 2 or len(set(y.tolist())) < 2:
        raise ValueError("need at least one positive and one negative pair with a delta each")

    def nll(log_t: float) -> float:
        z = d / np.exp(log_t)
        return float(np.mean(np.logaddexp(0.0, -z) * y + np.logaddexp(0.0, z) * (1 - y)))

    log_t = float(minimize_scalar(nll, bounds=LOG_T_BOUNDS, method="bounded").x)
    if log_t > LOG_T_BOUNDS[1] - 1e-2 and not allow_flat:
        raise ValueError(
            f"the temperature fit runs to its bound (T = {np.exp(log_t):.0f}): this judge's log-odds do not follow the "
            "labels (a judge at chance), and dividing by it would flatten every score to 0.5; nothing is written"
        )
    return float(np.exp(log_t))


def _entries(checkpoint: str | Path) -> dict:
    """The calibration file's entries, read strictly: a file that is not JSON of task entries, a temperature that is
    not a positive finite number or a preference model out of its ranges is an error naming the file and field."""
    path = Path(checkpoint) / CALIBRATION_FILE
    if not path.exists():
        return {}
    fix = f"refit it with `avjudge judges calibrate`, or delete {path}"
    data = read_json_object(path, fix)
    if not all(isinstance(entry, dict) for entry in data.values()):
        raise ConfigError(f"{path}: expected an object of task entries; {fix}")
    low, high = (float(np.exp(bound)) for bound in LOG_T_BOUNDS)  # what `fit_temperature` can write
    for task, entry in data.items():
        unknown = sorted(set(entry) - {"temperature", "preference"})
        if unknown:
            raise ConfigError(f"{path}: {task}: unknown field(s) {unknown}; {fix}")
        temperature = entry.get("temperature", 1.0)
        if not (finite_number(temperature) and low * (1 - 1e-9) <= temperature <= high * (1 + 1e-9)):
            raise ConfigError(
                f"{path}: {task}.temperature is a number from {low:.4g} to {high:.4g} (what `avjudge judges "
                f"calibrate` fits), not {temperature!r}; {fix}"
            )
        if "preference" in entry:
            try:
                Preference(**entry["preference"])
            except (TypeError, ValueError) as err:
                raise ConfigError(f"{path}: {task}.preference: {err}; {fix}") from None
    return data


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
