"""A strategy's parameters are checked wherever a user or a file gives them: a recipe's ranges (`--set` of `perturb
apply` too), exact parameters (`perturb apply --params`), a pair record's stored ones. Outside a parameter's bounds a
negative was silently wrong (an order-0 filter passes the sound unchanged, a negative shift magnitude) or failed deep
in a library with a traceback (pedalboard's ±72 semitones, scipy's resampling ratio, numpy's seeds)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.signal import butter, sosfiltfilt

from avjudge.media import decode
from avjudge.perturb import STRATEGIES, Context, PerturbError, SourcePool, get_strategy
from avjudge.perturb.base import Bounds, Choice
from avjudge.world import MANIFEST

from .helpers import refused


@pytest.fixture(scope="module")
def world(small_world):
    records = [json.loads(line) for line in (small_world / MANIFEST).read_text().splitlines()]
    records = [{**r, "video": str(small_world / r["video"])} for r in records]
    source = max(records, key=lambda r: r["duration"])
    return source, SourcePool(records), decode(source["video"])


def drawn(name: str, world, seed: int) -> dict:
    source, pool, clip = world
    return get_strategy(name).sample(np.random.default_rng(seed), clip, Context(record=source, pool=pool))


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_what_a_strategy_draws_is_what_it_stores(name, world):
    strategy = STRATEGIES.lookup(name)
    for seed in range(4):
        params = drawn(name, world, seed)
        assert strategy.check_params(params) is params
        required = set(strategy.stored_params()) - set(strategy.optional)
        assert required <= set(params) <= set(strategy.stored_params())


def _outside(spec) -> list:
    """Values a stored parameter of this spec must refuse."""
    if isinstance(spec, Choice):
        return ["no such option", 3]
    if isinstance(spec, Bounds):
        values = [math.nan, math.inf, "1", True]
        values += [spec.low - 1] if math.isfinite(spec.low) else []
        values += [spec.low] if spec.above else []
        values += [spec.high + 1] if math.isfinite(spec.high) else []
        values += [spec.low + 0.5] if spec.integer and math.isfinite(spec.low) else []
        return values
    return [3, None]  # a type: str or list


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_a_stored_parameter_out_of_its_bounds_is_refused_naming_it(name, world):
    strategy = STRATEGIES.lookup(name)
    params = drawn(name, world, 0)
    for key, value in params.items():
        for bad in _outside(strategy.stored_params()[key]):
            with pytest.raises(PerturbError, match=f"{name}.{key}"):
                strategy.check_params({**params, key: bad})
    if params:
        missing = next(key for key in params if key not in strategy.optional)
        with pytest.raises(PerturbError, match=f"missing: \\['{missing}'\\]"):
            strategy.check_params({k: v for k, v in params.items() if k != missing})
    with pytest.raises(PerturbError, match="unknown: \\['gain_db'\\]"):
        strategy.check_params({**params, "gain_db": 3.0})
    with pytest.raises(PerturbError, match="are a mapping"):
        strategy.check_params([1, 2])


@pytest.mark.parametrize(
    "name, overrides, words",
    [
        ("filter", {"order": 0}, "filter.order must be a whole number at least 1"),
        ("filter", {"order": 2.5}, "filter.order must be a whole number"),
        ("filter", {"kind": ["lowpass", "bandpass"]}, "filter.kind must be one of ['lowpass', 'highpass']"),
        ("filter", {"lowpass_hz": [-5, 0]}, "filter.lowpass_hz must be a number above 0"),
        ("speed_change", {"factor": [-1, 0]}, "speed_change.factor must be a number at least 0.1"),
        ("pitch_shift", {"semitones": [100, 200]}, "pitch_shift.semitones (a magnitude: its sign is drawn)"),
        ("time_shift_micro", {"shift_s": [-1, 2]}, "time_shift_micro.shift_s (a magnitude"),
        ("time_shift_micro", {"shift_s": ["a", "b"]}, "must be a finite number, not 'a'"),
        ("time_shift_micro", {"shift_s": [1, 2, 3]}, "takes a number or [low, high]"),
        ("time_shift_micro", {"shift_s": [0.5, 0.2]}, "has low > high"),
        ("time_shift_micro", {"fill": "mirror"}, "time_shift_micro.fill must be one of"),
        ("noise_addition", {"snr_db": [math.nan, 1]}, "noise_addition.snr_db must be a finite number"),
        ("noise_addition", {"babble_voices": 0}, "noise_addition.babble_voices must be a whole number at least 1"),
        ("semantic_mismatch", {"top_k": 0}, "semantic_mismatch.top_k"),
        ("in_sync_mute", {"length_s": 0}, "in_sync_mute.length_s must be a number above 0"),
        ("time_shift_micro", {"shift_s_max": 1}, "has no parameter 'shift_s_max'"),
    ],
)
def test_a_range_out_of_its_parameters_bounds_is_refused_naming_it(name, overrides, words):
    with pytest.raises(PerturbError) as refused:
        get_strategy(name, overrides)
    assert words in str(refused.value)


def test_an_order_0_filter_was_no_negative_at_all():
    """Why the order is bounded: scipy designs an order-0 Butterworth filter without a word, and it passes the sound
    unchanged, so the 'negative' was its source labelled No."""
    sound = np.random.default_rng(0).standard_normal(16000)
    unchanged = sosfiltfilt(butter(0, 500.0, "lowpass", fs=16000, output="sos"), sound)
    np.testing.assert_allclose(unchanged, sound, atol=1e-12)


def test_bounds_describe_what_they_take():
    assert Bounds(1, 16, integer=True).describe() == "a whole number at least 1 and at most 16"
    assert Bounds(0.0, above=True).describe() == "a number above 0"
    assert Bounds().check("x", 3) == 3.0


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--strategy", "filter", "--set", "order=0"], "filter.order must be a whole number"),
        (["--strategy", "speed_change", "--params", '{"factor": -2}'], "speed_change.factor must be a number"),
        (["--strategy", "pitch_shift", "--params", '{"semitones": 1e9}'], "pitch_shift.semitones"),
        (["--strategy", "time_shift_micro", "--params", '{"nope": 1}'], "unknown: ['nope']; missing: ['shift_s']"),
        (["--strategy", "time_shift_micro", "--params", '{"shift_s": "x"}'], "must be a finite number, not 'x'"),
        (["--strategy", "pitch_shift", "--params", "[1]"], "pitch_shift's parameters are a mapping"),
        (["--strategy", "pitch_shift", "--params", "{bad"], "--params is not JSON"),
        (["--strategy", "noise_addition", "--params", '{"kind": "babble", "snr_db": 3, "seed": 1}'], "sources"),
    ],
)
def test_perturb_apply_refuses_bad_parameters_with_one_line(argv, words, world, tmp_path, capsys):
    source, _, _ = world
    out = tmp_path / "negative.mp4"
    assert words in refused(["perturb", "apply", *argv, "--input", source["video"], "--out", str(out)], capsys)
    assert not out.exists()
