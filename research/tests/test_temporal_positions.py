"""The positional selectivity of a language model's time axis (research.temporal_positions)."""

import numpy as np
import pytest

from avjudge.judges.tiny import HEAD_DIM, MROPE_SECTION
from research.temporal_positions import LANGUAGE_MODELS, POSITIONS_PER_SECOND, same_moment_selectivity

pytestmark = pytest.mark.research


def test_one_frequency_cannot_single_out_a_moment_and_the_tiny_heads_match_the_released_proportions():
    # one pair at 1 rad an id comes back to cos 0.9998 at 44 ids (1.76 s) away: nothing tells that moment apart
    assert same_moment_selectivity(2, 1, away=0.25) == pytest.approx(np.cos(44 - 14 * np.pi), abs=1e-6)
    released, shipped = LANGUAGE_MODELS["released Qwen2.5-Omni-7B"], (HEAD_DIM, MROPE_SECTION)
    assert LANGUAGE_MODELS["tiny, heads 64 wide (now)"] == shipped
    assert sum(MROPE_SECTION) == HEAD_DIM // 2
    assert [s / sum(MROPE_SECTION) for s in MROPE_SECTION] == [s / sum(released[1]) for s in released[1]]
    before = same_moment_selectivity(16, 2)
    assert before > 0.9 > 0.5 > same_moment_selectivity(HEAD_DIM, MROPE_SECTION[0])
    assert POSITIONS_PER_SECOND == 25
