"""No negative equal to its source: each strategy's identity (a shift of 0, 0 semitones, a speed of 1, a cutoff
above the sound, a mute past the clip) is refused by `perturb apply`, a recipe and a pair record alike, and a built
negative that leaves its source's sound as it was is drawn again and counted."""

from __future__ import annotations

import json

import numpy as np
import pytest

from avjudge.cli import main
from avjudge.config import ConfigError
from avjudge.data import build_dataset, load_pairs, load_recipe
from avjudge.media import decode, encode_video
from avjudge.perturb import get_strategy
from avjudge.perturb.signal import UNCHANGED_DB, difference_db
from avjudge.world import MANIFEST

IDENTITIES = [  # (strategy, exact parameters that leave the sound as it was, what the refusal names)
    ("time_shift_micro", {"shift_s": 0.0, "fill": "window"}, "0.045 s a person notices"),
    ("time_shift_medium", {"shift_s": -0.03, "fill": "silence"}, "0.045 s a person notices"),
    ("pitch_shift", {"semitones": 0.0}, "0.15 semitones a person notices"),
    ("pitch_shift", {"semitones": -0.1}, "0.15 semitones a person notices"),
    ("speed_change", {"factor": 1.0}, "semitones of pitch a person notices"),
    ("speed_change", {"factor": 1.005}, "semitones of pitch a person notices"),
    ("filter", {"kind": "lowpass", "cutoff_hz": 7999.0, "order": 6}, "outside the sound's band"),
    ("filter", {"kind": "highpass", "cutoff_hz": 5.0, "order": 6}, "outside the sound's band"),
    ("in_sync_mute", {"start_s": 30.0, "length_s": 0.5}, "past the"),
]


@pytest.fixture(scope="module")
def source(small_world):
    record = json.loads((small_world / MANIFEST).read_text().splitlines()[0])
    return small_world / record["video"]


@pytest.mark.parametrize(("name", "params", "named"), IDENTITIES)
def test_perturb_apply_refuses_a_negative_equal_to_its_source(name, params, named, source, tmp_path, capsys):
    out = tmp_path / "negative.mp4"
    argv = ["perturb", "apply", "--strategy", name, "--params", json.dumps(params), "--input", str(source),
            "--out", str(out)]  # fmt: skip
    assert main(argv) == 2
    assert named in capsys.readouterr().err and not out.exists()


def test_perturb_apply_refuses_a_range_reaching_no_change_and_an_output_equal_to_its_source(source, tmp_path, capsys):
    out = tmp_path / "negative.mp4"
    base = ["perturb", "apply", "--input", str(source), "--out", str(out)]
    assert main([*base, "--strategy", "pitch_shift", "--set", "semitones=[0,0]"]) == 2
    assert "raise the range's low end" in capsys.readouterr().err
    # a low-pass inside the band but above all the clip's sound: the output is compared with its source
    sound = decode(source, video=False)
    spectrum = np.abs(np.fft.rfft(sound.audio[0])) ** 2
    top = np.fft.rfftfreq(sound.audio.shape[1], 1 / sound.sample_rate)[
        np.cumsum(spectrum) < spectrum.sum() * (1 - 1e-9)
    ]
    cutoff = min(float(top.max()) + 200, 0.95 * sound.sample_rate / 2)
    params = {"kind": "lowpass", "cutoff_hz": cutoff, "order": 6}
    result = main([*base, "--strategy", "filter", "--params", json.dumps(params)])
    err = capsys.readouterr().err
    changed = get_strategy("filter").apply(sound, params, None)
    if difference_db(sound.audio, changed.audio) < UNCHANGED_DB:
        assert result == 2 and "leaves" in err and "as it was" in err and not out.exists()
    else:  # the world's sound reaches the band's top: the file is the filtered sound
        assert result == 0 and out.exists()
    # a negative that changes the sound is written
    assert main([*base, "--strategy", "pitch_shift", "--params", '{"semitones": 2}']) == 0 and out.exists()


def test_a_recipe_reaching_no_change_is_refused_unless_it_marks_ties(small_world):
    overrides = [f"source={small_world / MANIFEST}", "judges.av.strategies={pitch_shift: 1.0}"]
    with pytest.raises(ConfigError, match=r"pitch_shift.semitones draws changes down to 0.*ties: true"):
        load_recipe("world_demo", [*overrides, "judges.av.strategy_params={pitch_shift: {semitones: [0, 0]}}"])
    with pytest.raises(ConfigError, match="speed_change.factor"):
        load_recipe("world_demo", [f"source={small_world / MANIFEST}", "judges.av.strategies={speed_change: 1.0}",
                                   "judges.av.strategy_params={speed_change: {min_deviation: 0.0}}"])  # fmt: skip
    load_recipe("world_demo", [*overrides, "judges.av.ties=true",
                               "judges.av.strategy_params={pitch_shift: {semitones: [0, 0.3]}}"])  # fmt: skip


def test_a_pair_record_equal_to_its_source_is_refused_unless_a_tie(pairs, tmp_path):
    dataset = tmp_path / "pairs"
    (dataset / "pairs" / "av").mkdir(parents=True)
    (dataset / "stats.json").write_text((pairs / "stats.json").read_text())
    records = load_pairs(pairs, "av", "test")
    negative = next(r for r in records if r["strategy"].startswith("time_shift"))
    edited = [r if r is not negative else {**r, "params": {**r["params"], "shift_s": 0.0}} for r in records]
    path = dataset / "pairs" / "av" / "test.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in edited))
    line = edited.index(next(r for r in edited if r["id"] == negative["id"])) + 1
    with pytest.raises(ConfigError, match=rf"test.jsonl:{line}: params: {negative['strategy']}: shift_s 0"):
        load_pairs(dataset, "av", "test")
    tie = [{**r, "tie": True} if r["id"] == negative["id"] else r for r in edited]
    path.write_text("".join(json.dumps(r) + "\n" for r in tie))
    assert len(load_pairs(dataset, "av", "test")) == len(records)  # a recipe with ties: true marks it a tie


def test_a_built_negative_equal_to_its_source_is_drawn_again_and_counted(small_world, tmp_path):
    """A silent source: every filter, pitch or shift of it is silence again: drawn anew and counted."""
    records = [json.loads(line) for line in (small_world / MANIFEST).read_text().splitlines()]
    quiet = decode(small_world / records[0]["video"])
    encode_video(tmp_path / "silent.mp4", quiet.frames, quiet.fps, np.zeros_like(quiet.audio), quiet.sample_rate)
    manifest = tmp_path / "world.jsonl"
    rows = [{**r, "video": str(small_world / r["video"])} for r in records]
    rows.append({**records[0], "id": "silent", "video": str(tmp_path / "silent.mp4")})
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    recipe, source = load_recipe(
        "world_demo",
        [
            f"source={manifest}",
            "judges={av: {pairs: 40, strategies: {filter: 1.0, pitch_shift: 1.0}}}",
            "splits={train: 1.0, test: 0.0}",
        ],  # fmt: skip
    )
    stats = build_dataset(recipe, source, tmp_path / "out", progress=False)
    built = load_pairs(tmp_path / "out", "av", "train")
    assert stats["judges"]["av"]["redrawn_unchanged"] > 0
    # of the silent source, only negatives that bring another clip's sound (the recipe's mismatches) stand
    assert {r["strategy"] for r in built if r["source_id"] == "silent" and not r["label"]} <= {"random_mismatch"}
    assert {"filter", "pitch_shift"} <= {r["strategy"] for r in built if not r["label"]}
    assert any(r["source_id"] == "silent" and r["label"] for r in built)  # its positives stand
