"""Can a judge's language model find, by position alone, the picture of the moment it hears? Qwen2.5-Omni's TMRoPE
rotates the first ``mrope_section[0]`` frequency pairs of each attention head by a token's time (25 position ids a
second, for sound and picture alike), so a query at one moment scores a key ``d`` ids away by a weighted sum of
``cos(w_i d)`` over those pairs' frequencies ``w_i = theta ** (-2 i / head_dim)`` (weights the query and key choose).
The best a head can do to single out its own moment is the smallest, over weightings, of the largest such score at
another moment, with its own moment scoring 1: the lower, the sharper (a linear programme).

    python -m research.temporal_positions
"""

from __future__ import annotations

import json

import numpy as np
from scipy.optimize import linprog

POSITIONS_PER_SECOND = 25  # Qwen2.5-Omni's position_id_per_seconds


def same_moment_selectivity(
    head_dim: int, temporal_pairs: int, theta: float = 1e6, away: float = 0.25, span: float = 5.0
) -> float:
    """The best worst-case positional score of a moment at least ``away`` seconds (up to ``span``) from the one a
    head attends from, its own moment scoring 1, over non-negative weightings of the temporal frequency pairs."""
    frequencies = theta ** (-2 * np.arange(temporal_pairs) / head_dim)
    offsets = np.arange(round(away * POSITIONS_PER_SECOND), round(span * POSITIONS_PER_SECOND) + 1)
    scores = np.cos(np.outer(offsets, frequencies))  # (offsets, pairs)
    n = temporal_pairs
    result = linprog(
        c=np.r_[np.zeros(n), 1.0],  # minimise the worst other moment's score
        A_ub=np.c_[scores, -np.ones(len(scores))],
        b_ub=np.zeros(len(scores)),
        A_eq=[np.r_[np.ones(n), 0.0]],  # the own moment's score: 1
        b_eq=[1.0],
        bounds=[(0, None)] * n + [(None, None)],
    )
    return float(result.x[-1])


LANGUAGE_MODELS = {  # (head width, mrope_section)
    "released Qwen2.5-Omni-7B": (128, (16, 24, 24)),
    "tiny, heads 16 wide (before)": (16, (2, 3, 3)),
    "tiny, heads 64 wide (now)": (64, (8, 12, 12)),
}


def main() -> None:
    table = {
        name: {f"{away:g} s away": same_moment_selectivity(width, section[0], away=away) for away in (0.25, 1.0)}
        for name, (width, section) in LANGUAGE_MODELS.items()
    }
    print(json.dumps(table, indent=2))


if __name__ == "__main__":
    main()
