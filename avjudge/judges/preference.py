"""Which of two clips a judge prefers: P(A ≻ B), P(tie), P(B ≻ A) from the two clips' log-odds, through a
Bradley–Terry model with ties.

The model is Rao and Kupper's (1967): with r = (δ_A − δ_B) / τ (δ: a clip's log P(Yes) − log P(No), τ: the
pairwise temperature) and a tie width θ ≥ 1,

    P(A ≻ B) = σ(r − log θ),   P(B ≻ A) = σ(−r − log θ),   P(tie) = 1 − P(A ≻ B) − P(B ≻ A),

so P(tie) = (θ² − 1) σ(r − log θ) σ(−r − log θ): VideoAlign's ``btt`` loss is its negative log-likelihood, with
k = θ. θ = 1 is plain Bradley–Terry (no ties). Swapping A and B swaps the two preferences exactly. τ and θ are
fitted by maximum likelihood on held-out pairs (`fit_preference`) and kept beside the judge's pointwise temperature
(`avjudge.judges.calibration`).

A group's expected win rates (`win_rates`: P(win) + ½ P(tie) against each other member, averaged) need only the G
clips' log-odds, not C(G, 2) judge calls; they average ½ over any group.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit

OUTCOMES = ("a", "tie", "b")  # a label of a preference: A preferred, a tie, B preferred


@dataclass(frozen=True)
class Preference:
    """A Rao–Kupper model of a judge's pairwise preferences: ``temperature`` τ > 0 on the log-odds difference,
    ``tie`` θ ≥ 1 (1: no ties)."""

    temperature: float = 1.0
    tie: float = 1.0

    def __post_init__(self):
        if not (math.isfinite(self.temperature) and self.temperature > 0):
            raise ValueError(f"a preference temperature is positive, not {self.temperature!r}")
        if not (math.isfinite(self.tie) and self.tie >= 1):
            raise ValueError(f"a tie width is at least 1 (1: no ties), not {self.tie!r}")

    def probabilities(self, delta_a, delta_b) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(P(A ≻ B), P(tie), P(B ≻ A)) of clips with log-odds ``delta_a`` and ``delta_b`` (numbers or arrays)."""
        r = (np.asarray(delta_a, np.float64) - np.asarray(delta_b, np.float64)) / self.temperature
        width = math.log(self.tie)
        p_a, p_b = expit(r - width), expit(-r - width)
        return p_a, np.clip(1.0 - p_a - p_b, 0.0, 1.0), p_b

    def win_rates(self, deltas) -> np.ndarray:
        """Each clip's expected win rate against the others of its group, P(win) + ½ P(tie) averaged over them
        (½ for a group of one).

        Raises:
            ValueError: a log-odds is not a finite number (a failed clip has none: leave it out of the group).
        """
        d = finite_deltas(deltas)
        if d.size < 2:
            return np.full(d.shape, 0.5)
        p_win, p_tie, _ = self.probabilities(d[:, None], d[None, :])
        score = p_win + 0.5 * p_tie
        np.fill_diagonal(score, 0.0)
        return score.sum(axis=1) / (d.size - 1)

    def to_dict(self) -> dict:
        return asdict(self)


def finite_deltas(values) -> np.ndarray:
    """``values`` as float64 log-odds.

    Raises:
        ValueError: one is NaN or infinite (named with its place).
    """
    d = np.asarray(values, np.float64)
    bad = np.flatnonzero(~np.isfinite(d))
    if bad.size:
        raise ValueError(f"non-finite log-odds at {bad.tolist()[:5]}: {d.ravel()[bad[:5]].tolist()}")
    return d


def outcome_index(label: str) -> int:
    if label not in OUTCOMES:
        raise ValueError(f"a preference label is one of {OUTCOMES}, not {label!r}")
    return OUTCOMES.index(label)


def log_likelihoods(model: Preference, delta_a, delta_b, outcomes) -> np.ndarray:
    """Each pair's log-probability of its outcome (`OUTCOMES` indices) under ``model``."""
    r = (np.asarray(delta_a, np.float64) - np.asarray(delta_b, np.float64)) / model.temperature
    return _log_likelihoods(r, math.log(model.tie), np.asarray(outcomes))


def _log_likelihoods(r: np.ndarray, width: float, outcomes: np.ndarray) -> np.ndarray:
    log_a, log_b = log_expit(r - width), log_expit(-r - width)
    # log P(tie) = log(θ² − 1) + log σ(r − log θ) + log σ(−r − log θ); θ = 1 gives no tie any probability
    log_tie = (math.log(math.expm1(2 * width)) if width > 0 else -np.inf) + log_a + log_b
    return np.choose(outcomes, [log_a, log_tie, log_b])


def fit_preference(delta_a, delta_b, outcomes, ties: bool | None = None) -> Preference:
    """τ and θ maximising the likelihood of ``outcomes`` (`OUTCOMES` labels or indices) of pairs with log-odds
    ``delta_a`` and ``delta_b``. Without a tie among the outcomes (or ``ties=False``) θ stays 1.

    Raises:
        ValueError: fewer than two pairs, a log-odds that is not a finite number, or every pair the same outcome with
            no spread to fit a temperature on.
    """
    a, b = finite_deltas(delta_a), finite_deltas(delta_b)
    y = np.asarray([outcome_index(o) if isinstance(o, str) else int(o) for o in outcomes])
    if a.shape != b.shape or a.shape != y.shape or a.size < 2:
        raise ValueError("need at least two pairs, each with both clips' log-odds and an outcome")
    ties = bool((y == 1).any()) if ties is None else ties
    # fit on (A, B) and (B, A) alike: the model is antisymmetric, and a set of one-sided labels (the positive always
    # first, as pair datasets give them) must not pull it
    diff = np.concatenate([a - b, b - a])
    y = np.concatenate([y, 2 - y])

    low, high = np.array([-8.0, -12.0]), np.array([8.0, 3.0])  # the search's bounds on (log τ, log log θ)

    def nll(params: np.ndarray) -> float:
        log_t, log_width = np.clip(params, low, high)  # the simplex may step past them; exp() must not overflow
        width = math.exp(log_width) if ties else 0.0
        return -float(np.mean(_log_likelihoods(diff / math.exp(log_t), width, y)))

    start = np.array([0.0, math.log(0.5)])
    fitted = minimize(nll, start, method="Nelder-Mead", options={"xatol": 1e-5, "fatol": 1e-9, "maxiter": 2000})
    log_t, log_width = np.clip(fitted.x, low, high)
    return Preference(temperature=float(math.exp(log_t)), tie=float(math.exp(math.exp(log_width))) if ties else 1.0)


@dataclass(frozen=True)
class Comparison:
    """A judge's preference between clips A and B: the three probabilities (summing to 1), or why it has none."""

    p_a: float | None = None
    p_tie: float | None = None
    p_b: float | None = None
    error: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def compare_deltas(model: Preference, delta_a: float | None, delta_b: float | None, errors=(None, None)) -> Comparison:
    """The comparison of two scored clips (their log-odds, or the error of either)."""
    failed = [f"{side}: {error}" for side, error in zip("AB", errors) if error is not None]
    if failed or delta_a is None or delta_b is None:
        return Comparison(error="; ".join(failed) or "a clip has no log-odds")
    bad = [f"{side}: {value}" for side, value in zip("AB", (delta_a, delta_b)) if not math.isfinite(value)]
    if bad:
        return Comparison(error="non-finite log-odds (" + ", ".join(bad) + ")")
    p_a, p_tie, p_b = (float(p) for p in model.probabilities(delta_a, delta_b))
    return Comparison(p_a, p_tie, p_b)


def rank_win_rates(values) -> np.ndarray:
    """Each value's win rate against the others of its group where a larger value simply wins (a tie: ½): the win
    rates of a term with no preference model (a metric, a function); ½ for a group of one."""
    v = np.asarray(values, np.float64)
    if v.size < 2:
        return np.full(v.shape, 0.5)
    wins = (v[:, None] > v[None, :]).sum(axis=1) + 0.5 * ((v[:, None] == v[None, :]).sum(axis=1) - 1)
    return wins / (v.size - 1)
