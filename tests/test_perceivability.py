"""Perceivability: what a judge's input can represent of each negative, from its sampling's time grid.

Hand-made events check the grid patterns against counts done by hand; world pairs with known shifts check the
verdicts `avjudge data audit --sampling` prints at AVBench's sampling and at the AV default, and where each sampling
comes from (a name, a train config, a judge folder)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from avjudge.cli import main
from avjudge.data import build_dataset, built_sources, load_pairs, load_recipe
from avjudge.data.perceivability import (
    SEEN_AT_LEAST,
    Event,
    grid_patterns,
    perceivability,
    scene_events,
    seen_in_events,
)
from avjudge.judges.judge import checkpoint_sampling
from avjudge.sampling import SAMPLINGS, TASK_SAMPLING, Sampling, task_sampling
from avjudge.world import MANIFEST, WorldConfig, make_world


def test_the_grid_step_is_the_temporal_patch_over_the_frame_rate_and_grows_where_max_frames_binds():
    assert SAMPLINGS["avbench"].grid_s == 2.0 and SAMPLINGS["sync"].grid_s == 0.25
    assert Sampling(fps=2.0, max_pixels=1).grid_s == 1.0
    sync = SAMPLINGS["sync"]
    assert sync.grid_at(10.0) == 0.25  # 80 frames: under its 128
    assert sync.grid_at(32.0) == pytest.approx(2 * 32.0 / 128)  # spread over 128 frames: 4 fps
    times = sync.frame_times(1.0, 32.0)
    assert len(times) == 128 and times[0] == 1.0 and times[1] - times[0] == pytest.approx(0.25)
    assert len(sync.frame_times(0.0, 3.0)) == 24  # at its own rate: 8 a second
    # the AV judge reads sync by default, AVBench's judges 1 fps at 480x640
    assert TASK_SAMPLING["av"] == "sync" and task_sampling("vt").fps == 1.0
    assert SAMPLINGS["sync"].max_pixels * 16 == SAMPLINGS["avbench"].max_pixels


def test_grid_patterns_mark_the_groups_a_frame_sees_and_a_sound_overlaps():
    sampling = Sampling(fps=4.0, max_pixels=1)  # frames at 0, .25, .5, ...; groups of 0.5 s
    events = [Event(0.3, 0.45), Event(1.6, 1.9)]
    picture, sound = grid_patterns(sampling, 0.0, 2.0, events, events)
    # frames 0.25 (before 0.3) and 0.5 (after 0.45) miss the first event; 1.75 sees the second
    assert picture.tolist() == [False, False, False, True]
    assert sound.tolist() == [True, False, False, True]
    late = [Event(e.start + 0.5, e.end + 0.5) for e in events]
    assert grid_patterns(sampling, 0.0, 2.0, events, late)[1].tolist() == [False, True, False, False]
    assert seen_in_events(sampling, 0.0, 2.0, events, late)
    # on a 2 s grid the same shift moves no sound out of the one group: nothing to see
    coarse = Sampling(fps=1.0, max_pixels=1)
    assert not seen_in_events(coarse, 0.0, 2.0, events, late)


def test_only_sounding_events_of_a_scene_count():
    source = {
        "scene": {
            "objects": [{"sound": {"timbre": "sine", "f0": 440}}, {"sound": None}],
            "events": [{"time": 0.5, "duration": 0.2, "object": 0}, {"time": 1.0, "duration": 0.2, "object": 1}],
        }
    }
    assert scene_events(source) == [Event(0.5, pytest.approx(0.7))]
    assert scene_events({"id": "a user's clip"}) is None


def test_the_bound_alone_where_no_source_carries_ground_truth():
    sources = [{"id": "s", "duration": 5.0}]
    records = [
        {"label": 0, "negative_type": "time_shift_micro", "source_id": "s", "params": {"shift_s": shift},
         "window": {"start_s": 1.0, "duration_s": 3.0}}
        for shift in (0.1, -0.2, 0.3, 0.6)
    ] + [{"label": 0, "negative_type": "filter", "source_id": "s", "params": {"cutoff_hz": 500}}]  # fmt: skip
    report = perceivability(records, sources, SAMPLINGS["sync"])
    micro = report["per_type"]["time_shift_micro"]
    assert micro["above_grid"] == 0.5 and micro["seen_in_events"] is None and not micro["below_grid"]
    at_two_fps = perceivability(records, sources, Sampling(fps=2.0, max_pixels=1))["per_type"]["time_shift_micro"]
    assert at_two_fps["above_grid"] == 0.0 and at_two_fps["below_grid"]
    assert report["per_type"]["filter"] == {"pairs": 1, "kind": "content", "seen_in_events": None}


@pytest.fixture(scope="module")
def shift_pairs(tmp_path_factory):
    """The demo recipe's AV pairs of a world of 5 s clips, shifts (0.2-1 s and 1-2 s, with known events) weighted up."""
    world = tmp_path_factory.mktemp("world")
    make_world(WorldConfig(n=24, seed=3, duration=5.0, width=64, height=64), world, progress=False)
    recipe, source = load_recipe(
        "world_demo",
        [f"source={world / MANIFEST}", "judges.av.pairs=240", "judges.vt.pairs=2", "judges.at.pairs=2",
         "judges.av.strategies={time_shift_micro: 1, time_shift_medium: 1, filter: 0.5}"],
    )  # fmt: skip
    out = tmp_path_factory.mktemp("pairs")
    build_dataset(recipe, source, out, progress=False)
    return out


def audited(dataset, judge: str, report_path) -> dict:
    argv = ["data", "audit", "--input", str(dataset), "--judges", "av", "--sampling", judge, "--out", str(report_path),
            "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    return json.loads(report_path.read_text())["av"]["perceivability"]


def test_data_audit_marks_the_micro_shifts_imperceptible_at_avbench_and_not_at_the_av_default(
    shift_pairs, tmp_path, capsys
):
    avbench = audited(shift_pairs, "avbench", tmp_path / "a.json")
    out = capsys.readouterr().out
    assert "time_shift_micro" in avbench["below_grid"] and "BELOW THE GRID time_shift_micro" in out
    micro = avbench["per_type"]["time_shift_micro"]
    assert micro["above_grid"] == 0.0 and micro["seen_in_events"] < SEEN_AT_LEAST
    records = [r for split in ("train", "test") for r in load_pairs(shift_pairs, "av", split)]
    # the bound, counted here from the records: shifts at least the 0.25 s grid step long
    shifts = [abs(r["params"]["shift_s"]) for r in records if r["negative_type"] == "time_shift_micro"]
    default = audited(shift_pairs, "av_qwen25omni_7b", tmp_path / "d.json")  # the 7B config reads the AV default
    assert default["sampling"] == SAMPLINGS["sync"].describe() and default["below_grid"] == []
    row = default["per_type"]["time_shift_micro"]
    assert row["above_grid"] == pytest.approx(np.mean([s >= 0.25 for s in shifts]))
    assert row["seen_in_events"] >= 0.9 and default["per_type"]["time_shift_medium"]["seen_in_events"] >= 0.9
    assert default["per_type"]["filter"]["kind"] == "content"
    assert "filter" not in avbench["below_grid"]


def test_a_judge_folder_is_audited_at_the_sampling_it_was_trained_with(shift_pairs, tiny_judges, tmp_path):
    import shutil

    from avjudge.judges.judge import TRAIN_RECORD

    folder = tmp_path / "judge"
    shutil.copytree(tiny_judges["qwen2_5_omni"], folder)
    assert checkpoint_sampling("av", folder) == SAMPLINGS["sync"]  # untrained: the task's default
    (folder / TRAIN_RECORD).write_text(json.dumps({"judge_settings": {"fps": 1.0, "max_pixels": 12544}}))
    sampling = checkpoint_sampling("av", folder)
    assert (sampling.fps, sampling.grid_s, sampling.max_pixels) == (1.0, 2.0, 12544)
    assert "time_shift_micro" in audited(shift_pairs, str(folder), tmp_path / "j.json")["below_grid"]
    # a sampling asked for by name stands whole: the recorded rate and pixels do not override it
    assert checkpoint_sampling("av", folder, sampling="sync") == SAMPLINGS["sync"]
    assert checkpoint_sampling("av", folder, sampling="sync", fps=4.0).fps == 4.0


def test_data_build_warns_of_a_shift_below_the_default_grid(small_world, tmp_path, capsys):
    """A user's manifest carries no ground truth: the bound decides (shifts of 0.05-0.1 s against a 0.25 s grid)."""
    manifest = tmp_path / "clips.jsonl"
    records = [json.loads(line) for line in (small_world / MANIFEST).read_text().splitlines()]
    manifest.write_text("".join(
        json.dumps({"id": r["id"], "video": str(small_world / r["video"]), "captions": r["captions"]}) + "\n"
        for r in records
    ))  # fmt: skip
    params = "{time_shift_micro: {shift_s: [0.05, 0.1]}, time_shift_medium: {shift_s: [1.0, 2.0]}}"
    argv = ["data", "build", "--recipe", "world_demo", "--input", str(manifest), "--out", str(tmp_path / "d"),
            "--audit-sample", "0", "--no-progress", "--set", f"judges.av.strategy_params={params}"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert (
        "warning: time_shift_micro is below the grid of the AV judge's default sampling (sync): 0% of its shifts "
        "reach the grid step" in out
    )
    assert "time_shift_medium is below" not in out


def test_every_pairs_window_is_placed_alike_so_its_place_tells_nothing(shift_pairs):
    """Positives' and each negative type's windows start at the same distribution of places (uniform over the room the
    source leaves): a shift is drawn to fit its window, not its window to fit the shift (a picture-only classifier read
    cut shifts at 0.57-0.60 by their windows' place when each negative's was drawn inside its own span)."""
    from scipy.stats import kstest

    records = [r for split in ("train", "test") for r in load_pairs(shift_pairs, "av", split)]
    durations = {s["id"]: s["duration"] for s in built_sources(shift_pairs)}
    places: dict[str, list[float]] = {}
    for r in records:
        room = durations[r["source_id"]] - r["window"]["duration_s"]
        places.setdefault(r["negative_type"], []).append(r["window"]["start_s"] / room)
    assert {"positive", "time_shift_micro", "time_shift_medium", "filter"} <= set(places)
    for kind in ("positive", "time_shift_micro", "time_shift_medium", "filter"):
        values = places[kind]
        assert len(values) >= 20, kind
        assert kstest(values, "uniform").pvalue > 0.01, (kind, np.histogram(values, 5, (0, 1))[0])


@pytest.mark.parametrize("name", ["time_shift_micro", "time_shift_medium"])
def test_a_cut_shift_fits_any_window_place_and_stays_in_its_range(name):
    from avjudge.perturb import Context, get_strategy

    strategy = get_strategy(name, {"shift_s": [0.2, 1.0] if name.endswith("micro") else [1.0, 2.0]})
    rng = np.random.default_rng(0)
    duration, length = 5.0, 3.0
    signs = set()
    for start in np.linspace(0.0, 2.0, 41):
        window = {"start_s": float(start), "duration_s": length}
        for _ in range(5):
            params = strategy.sample_fitting(rng, Context(), window, duration)
            low, high = strategy.kept_span(params, duration, Context())
            assert low - 1e-9 <= start and start + length <= high + 1e-9
            assert strategy.ranges["shift_s"].low - 1e-9 <= abs(params["shift_s"]) <= strategy.ranges["shift_s"].high
            signs.add(np.sign(params["shift_s"]))
    assert signs == {-1.0, 1.0}
