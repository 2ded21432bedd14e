"""One rule for numbers: every value that leaves a judge, a comparison, a reward or a fit is a finite number, or that
item's named error ("non-finite log-odds"). Property-based (Hypothesis, bounded examples): any finite input gives
finite output, any non-finite one a named error."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from avjudge.config import ConfigError
from avjudge.judges.calibration import CALIBRATION_FILE, fit_temperature, load_preference, load_temperature
from avjudge.judges.preference import Preference, compare_deltas, fit_preference
from avjudge.judges.scorer import YesNoHead
from avjudge.rewards.reward import Reward, RewardTerm
from avjudge.scoring import ClipRecord
from avjudge.stats import reliability

FAST = settings(max_examples=60, deadline=None)
finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
non_finite = st.sampled_from([math.nan, math.inf, -math.inf])
models = st.builds(
    Preference,
    temperature=st.floats(min_value=1e-3, max_value=1e3),
    tie=st.floats(min_value=1.0, max_value=100.0),
)


@FAST
@given(models, finite, finite)
def test_a_comparison_of_finite_log_odds_is_three_probabilities(model, a, b):
    c = compare_deltas(model, a, b)
    values = (c.p_a, c.p_tie, c.p_b)
    assert c.error is None and all(math.isfinite(v) and 0 <= v <= 1 for v in values)
    assert sum(values) == pytest.approx(1.0, abs=1e-9)


@FAST
@given(models, finite, non_finite, st.booleans())
def test_a_comparison_with_a_non_finite_log_odds_is_its_error(model, good, bad, bad_first):
    a, b = (bad, good) if bad_first else (good, bad)
    c = compare_deltas(model, a, b)
    assert c.p_a is None and c.p_tie is None and c.p_b is None
    assert c.error.startswith("non-finite log-odds (") and ("A:" if bad_first else "B:") in c.error
    json.dumps(c.to_dict(), allow_nan=False)  # what compare writes is JSON


@FAST
@given(models, st.lists(finite, min_size=1, max_size=12))
def test_win_rates_of_finite_log_odds_are_finite_and_average_a_half(model, deltas):
    rates = model.win_rates(deltas)
    assert np.isfinite(rates).all() and ((rates >= 0) & (rates <= 1)).all()
    assert rates.mean() == pytest.approx(0.5, abs=1e-9)


@FAST
@given(models, st.lists(finite, min_size=1, max_size=6), non_finite)
def test_win_rates_refuse_a_non_finite_log_odds(model, deltas, bad):
    with pytest.raises(ValueError, match="non-finite log-odds"):
        model.win_rates([*deltas, bad])


@FAST
@given(st.lists(st.tuples(finite, finite, st.sampled_from(["a", "tie", "b"])), min_size=2, max_size=20))
def test_a_preference_fit_of_finite_pairs_is_a_model(pairs):
    a, b, outcomes = zip(*pairs)
    model = fit_preference(a, b, outcomes)
    assert math.isfinite(model.temperature) and model.temperature > 0 and math.isfinite(model.tie)


@FAST
@given(st.lists(st.tuples(finite, finite), min_size=6, max_size=6), non_finite, st.integers(0, 6))
def test_a_preference_fit_refuses_a_non_finite_log_odds(pairs, bad, where):
    a, b = (list(side) for side in zip(*pairs))
    a.insert(where, bad)
    b.insert(where, 0.0)
    with pytest.raises(ValueError, match="non-finite log-odds"):
        fit_preference(a, b, ["a", "b"] * 3 + ["tie"])


@FAST
@given(st.lists(st.tuples(st.floats(-50, 50), st.sampled_from([0, 1])), min_size=4, max_size=30))
def test_a_temperature_fit_is_finite_or_refuses_to_flatten_the_judge(pairs):
    deltas, labels = zip(*pairs)
    if len(set(labels)) < 2:
        return
    try:
        t = fit_temperature(deltas, labels)
    except ValueError as err:
        assert "flatten" in str(err)
    else:
        assert math.isfinite(t) and 0 < t < math.exp(6)


def test_a_temperature_fit_refuses_non_finite_log_odds_and_a_judge_at_chance():
    with pytest.raises(ValueError, match="non-finite log-odds"):
        fit_temperature([0.1, math.nan, -0.2], [1, 0, 0])
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 400)
    at_chance = np.where(rng.random(400) < 0.5, 1.0, -1.0) * 0.5  # log-odds unrelated to the labels
    with pytest.raises(ValueError, match="flatten every score"):
        fit_temperature(at_chance, labels)


@FAST
@given(st.lists(st.tuples(st.floats(0, 1), st.sampled_from([0, 1])), min_size=1, max_size=50))
def test_reliability_of_probabilities_is_finite(pairs):
    scores, labels = zip(*pairs)
    report = reliability(scores, labels)
    assert math.isfinite(report["ece"]) and 0 <= report["ece"] <= 1


@pytest.mark.parametrize("bad", [math.nan, math.inf, 1.5, -0.1])
def test_reliability_refuses_what_is_not_a_probability(bad):
    with pytest.raises(ValueError, match="probabilities"):
        reliability([0.2, bad], [0, 1])


@FAST
@given(st.floats(-1e4, 0), st.floats(-1e4, 0), st.floats(1e-3, 1e3))
def test_a_judges_head_gives_finite_numbers_from_finite_log_probabilities(log_yes, log_no, temperature):
    result = YesNoHead((1,), (2,), temperature).result(log_yes, log_no)
    assert result.error is None
    assert all(math.isfinite(v) for v in (result.score, result.delta, result.mass, result.yes_prob, result.no_prob))


@pytest.mark.parametrize(
    "log_yes, log_no", [(math.nan, -1.0), (math.nan, math.nan), (-math.inf, -1.0), (-1.0, -math.inf)]
)
def test_a_judges_head_makes_non_finite_log_odds_the_items_error(log_yes, log_no):
    result = YesNoHead((1,), (2,)).result(log_yes, log_no)
    assert result.score is None and result.error.startswith("non-finite log-odds")


def _judged(values):
    """A win-rate reward whose one term compares by a preference model, over records carrying ``values`` as the
    term's log-odds (as a judge's records do)."""
    term = RewardTerm(lambda clip: 0.0, output="value", aspect="sync", midpoint=0.5, preference=Preference())
    reward = Reward({"j": term}, mode="win_rate")
    return reward.combine([ClipRecord(values={"j": {"value": 0.5, "delta": v}}) for v in values])


@FAST
@given(st.lists(finite, min_size=2, max_size=8), st.lists(non_finite, min_size=1, max_size=3))
def test_a_win_rate_reward_fails_the_rollouts_without_log_odds_and_rewards_the_rest(good, bad):
    batch = _judged(good + bad)
    assert all(math.isfinite(r) for r in batch.rewards)
    assert batch.failed == [False] * len(good) + [True] * len(bad)
    assert all("non-finite log-odds" in e for e in batch.errors[len(good) :])
    assert np.mean(batch.rewards[: len(good)]) == pytest.approx(0.5, abs=1e-9)  # the good ones' win rates


@pytest.mark.parametrize(
    "entry, field",
    [
        ({"av": {"temperature": -1}}, "av.temperature"),
        ({"av": {"temperature": 0}}, "av.temperature"),
        ({"av": {"temperature": "warm"}}, "av.temperature"),
        ({"av": {"preference": {"temperature": 1.0, "tie": 0.5}}}, "av.preference"),
        ({"av": {"temperatur": 1.0}}, "unknown field"),
        ({"av": 3}, "an object of task entries"),
        ([1, 2], "expected a JSON object, not list"),
    ],
)
def test_a_calibration_file_out_of_its_ranges_is_an_error_naming_file_and_field(tmp_path, entry, field):
    (tmp_path / CALIBRATION_FILE).write_text(json.dumps(entry))
    with pytest.raises(ConfigError, match=field) as err:
        load_temperature(tmp_path, "av")
    assert CALIBRATION_FILE in str(err.value)


def test_a_truncated_calibration_file_is_an_error_naming_it(tmp_path):
    (tmp_path / CALIBRATION_FILE).write_text('{"av": {"temperature": 1.')
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_preference(tmp_path, "av")
    (tmp_path / CALIBRATION_FILE).write_text('{"av": {"temperature": NaN}}')  # Python's json reads NaN
    with pytest.raises(ConfigError, match="temperature is a number from"):
        load_temperature(tmp_path, "av")


@settings(max_examples=50, deadline=None)
@given(st.dictionaries(st.sampled_from(["mos", "noisiness", "lse_c"]), st.floats(), min_size=1))
def test_a_metric_value_that_is_not_a_finite_number_is_the_clips_error(values):
    """A metric's NaN or inf was written as a score: not JSON, and every filter rule compares it false (a dropped
    clip, not a failed one). Now it is that clip's error, naming the output; finite values pass as they are."""
    from types import SimpleNamespace

    from avjudge.scoring.scorers import MetricScorer

    metric = SimpleNamespace(name="m", needs=None, compute=lambda clip, captions: {**values, "transcript": "a dog"})
    outcome = MetricScorer(metric).score([None], [{}])[0]
    bad = sorted(key for key, value in values.items() if not math.isfinite(value))
    if bad:
        assert (
            outcome.values is None and outcome.error.startswith("non-finite ") and all(k in outcome.error for k in bad)
        )
    else:
        assert outcome.error is None and outcome.values == {**values, "transcript": "a dog"}
