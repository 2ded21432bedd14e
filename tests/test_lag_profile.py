"""`avjudge bench lag`: a sync scorer's lag profile on clips believed in sync (`avjudge.bench.lag`)."""

import json
from pathlib import Path

import numpy as np
import pytest

from avjudge.bench.lag import LagGrid, peak_offset, profile_clips, scoring_cuts, summarise
from avjudge.cli import main
from avjudge.config import ConfigError
from avjudge.jsonl import read_jsonl
from avjudge.media import NATIVE_FPS, DecodeNeeds, MediaError
from avjudge.scoring import FunctionScorer, Scoring, clip_of
from avjudge.world import MANIFEST, WorldConfig, make_world

from .test_desync import tiny_synchformer  # noqa: F401 (a fixture)

BOTH = DecodeNeeds(video=True, fps=NATIVE_FPS, audio=True, sample_rate=16000, channels=1)


@pytest.fixture(scope="module")
def lag_world(tmp_path_factory):
    """Six 6 s world clips: ±2 s of offsets around a 2 s window."""
    out = tmp_path_factory.mktemp("lag_world")
    make_world(WorldConfig(n=6, seed=5, duration=6.0, width=64, height=64, speech="off"), out, progress=False)
    return out


@pytest.fixture(scope="module")
def items(lag_world):
    return [{"id": r["id"], "video": str(lag_world / r["video"])} for r in read_jsonl(lag_world / MANIFEST)]


def ground_truth_scorer(world: Path):
    """The correlation of the sound's loudness with the world's ground truth of when an event is shown in the
    picture's window: it reads the sound and the picture's true event times, so it peaks where they meet."""
    scenes = {str(world / r["video"]): r["scene"] for r in read_jsonl(world / MANIFEST)}

    def agreement(clip) -> float:
        sound = clip.audio.mean(0)
        frame = clip.sample_rate // 50
        rms = np.sqrt(np.mean(sound[: len(sound) // frame * frame].reshape(-1, frame) ** 2, axis=1))
        times = np.arange(len(rms)) / 50 + clip.start  # the picture's clock
        shown = np.zeros(len(rms), bool)
        for event in scenes[clip.source]["events"]:
            shown |= (times >= event["time"]) & (times < event["time"] + event["duration"])
        if shown.all() or not shown.any():
            raise ValueError("no event, or nothing but events, in this window")
        return float(np.corrcoef(rms, shown)[0, 1])

    return FunctionScorer("truth", agreement, BOTH)


def profile(items, scorer, out, grid=LagGrid(), name=None):
    scoring = Scoring([scorer], workers=1)
    return profile_clips(
        items, lambda item: clip_of(item, BOTH), scoring_cuts(scoring, scorer.name, "value"), grid, out,
        name or scorer.name, draws=400, progress=False,
    )  # fmt: skip


def test_a_scorer_of_the_picture_alone_gives_every_clip_a_flat_profile(items, tmp_path):
    blind = FunctionScorer("picture", lambda clip: float(clip.frames.mean()), BOTH)
    summary = profile(items, blind, tmp_path)
    rows = list(read_jsonl(tmp_path / "profiles.jsonl"))
    assert len(rows) == len(items) and all(r["peak_s"] is None for r in rows)
    for row in rows:  # one picture window at every offset: one score
        assert len(row["profile"]) == 17 and len(set(row["profile"])) == 1
    assert summary["peak_within_one_step"] == {"share": 0.0, "ci95": [0.0, 0.0], "flat": len(items)}
    assert {f["auroc"] for f in summary["auroc_in_sync_vs_offset"].values()} == {0.5}


def test_a_scorer_that_reads_the_ground_truth_peaks_at_zero(items, lag_world, tmp_path):
    # 4 s windows hold enough events that another offset rarely lines them up by chance
    summary = profile(items, ground_truth_scorer(lag_world), tmp_path, LagGrid(max_offset=1.0, window=4.0))
    assert summary["profiled"] == len(items) and summary["errors"] == 0
    assert summary["peak_within_one_step"]["share"] >= 5 / 6
    assert all(figure["auroc"] >= 0.9 for figure in summary["auroc_in_sync_vs_offset"].values())
    by_offset = {p["offset_s"]: p["mean"] for p in summary["mean_profile"]}
    assert max(by_offset, key=by_offset.get) == 0.0
    assert (tmp_path / "lag_profile.json").is_file() and (tmp_path / "lag_profile.png").stat().st_size > 1000


def test_the_cuts_are_the_recipes_crop_of_the_sound_against_one_picture(items):
    clip = clip_of(items[0], BOTH)
    grid = LagGrid(max_offset=1.0, step=0.5, window=3.0)
    cuts = grid.cuts(clip)
    assert [c.start for c in cuts] == [clip.start + 1.0] * 5  # one picture window
    rate = clip.sample_rate
    for cut, offset in zip(cuts, grid.offsets):
        first = int(round((1.0 - offset) * rate))  # positive: the sound of an earlier moment, played late
        np.testing.assert_array_equal(cut.audio, clip.audio[:, first : first + 3 * rate])
        np.testing.assert_array_equal(cut.frames, cuts[0].frames)


def test_summaries_equal_hand_computed_figures():
    grid = LagGrid(max_offset=1.0, step=0.5)
    rows = [  # offsets -1, -0.5, 0, 0.5, 1
        {"id": "a", "profile": [0.1, 0.2, 0.9, 0.3, 0.0], "peak_s": 0.0},
        {"id": "b", "profile": [0.4, 0.5, 0.45, 0.2, 0.1], "peak_s": -0.5},
        {"id": "c", "profile": None, "peak_s": None, "error": "unreadable"},
    ]
    summary = summarise(rows, grid, draws=200)
    # in sync (0.9, 0.45) against ±0.5 s (0.2, 0.3, 0.5, 0.2): 0.9 beats all 4, 0.45 beats 3 -> 7 / 8
    assert summary["auroc_in_sync_vs_offset"]["0.5"]["auroc"] == pytest.approx(7 / 8)
    assert summary["auroc_in_sync_vs_offset"]["1"]["auroc"] == pytest.approx(1.0)
    assert summary["peak_within_one_step"]["share"] == 1.0 and summary["errors"] == 1
    low, high = summary["auroc_in_sync_vs_offset"]["0.5"]["ci95"]
    assert low <= 7 / 8 <= high
    assert summary["mean_profile"][2]["offset_s"] == 0.0 and summary["mean_profile"][2]["mean"] == 0.675
    assert peak_offset([1, 3, 2, 1, 3], grid.offsets) == -0.5  # of equal peaks, the nearest 0
    assert peak_offset([1, None, 2, 3, 1], grid.offsets) is None


def test_a_clip_too_short_or_unreadable_is_its_own_error_and_a_rerun_resumes(items, lag_world, tmp_path, corrupt):
    grid = LagGrid(max_offset=2.0, step=1.0, window=2.5)  # 6 s clips are too short for 2.5 s at ±2 s
    mixed = [*items[:2], {"id": "broken", "video": corrupt}]
    summary = profile(mixed, ground_truth_scorer(lag_world), tmp_path, grid)
    rows = {r["id"]: r for r in read_jsonl(tmp_path / "profiles.jsonl")}
    assert summary["profiled"] == 0 and summary["errors"] == 3
    assert "too short for offsets of ±2 s around a 2.5 s window" in rows[items[0]["id"]]["error"]
    assert rows["broken"]["error"] and rows["broken"]["profile"] is None

    def never(clip):
        raise AssertionError("a resumed run scored a clip it holds")

    again = profile(mixed, FunctionScorer("truth", never, BOTH), tmp_path, grid)
    assert again["clips"] == 3 and len(list(read_jsonl(tmp_path / "profiles.jsonl"))) == 3


@pytest.mark.parametrize(
    "grid, words",
    [
        (dict(max_offset=1.0, step=0.3), "not a whole number of steps"),
        (dict(max_offset=0.1, step=0.25), "0 < step <= max_offset"),
        (dict(window=-1.0), "window must be positive"),
    ],
)
def test_a_grid_that_cannot_be_cut_is_refused(grid, words):
    with pytest.raises(ConfigError, match=words):
        LagGrid(**grid)


def test_a_clip_without_sound_cannot_be_profiled(items):
    clip = clip_of(items[0], BOTH)
    with pytest.raises(MediaError, match="needs both a picture and a sound"):
        LagGrid().cuts(clip.replace(audio=None))


def test_the_command_profiles_a_judge_on_a_folder_of_clips(items, lag_world, tiny_judges, tmp_path, capsys):
    out = tmp_path / "lag"
    args = ["bench", "lag", "--input", str(lag_world / "clips"), "--judge", f"av={tiny_judges['qwen2_5_omni']}",
            "--max-offset", "2", "--step", "0.5", "--bootstrap", "100", "--out", str(out), "--no-progress"]  # fmt: skip
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert f"{len(items)} of {len(items)} clips profiled with av" in printed and "in sync vs ±1 s: AUROC" in printed
    summary = json.loads((out / "lag_profile.json").read_text())
    assert summary["scorer"] == "av" and summary["offsets_s"] == [-2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2]
    rows = list(read_jsonl(out / "profiles.jsonl"))
    scores = [s for r in rows for s in r["profile"]]
    assert len(scores) == 9 * len(items) and all(0 < s < 1 for s in scores) and len(set(scores)) > 9
    # refused before a model loads: a grid that cannot be cut, more than one scorer
    assert main(args[:-3] + ["--step", "0.3", "--out", str(tmp_path / "x")]) == 2
    assert main(args[:-3] + ["--dim", "av,desync", "--out", str(tmp_path / "y")]) == 2
    assert "--dim takes one dimension" in capsys.readouterr().err


@pytest.mark.usefixtures("tiny_synchformer")
def test_a_sync_metric_whose_lower_value_is_better_peaks_at_zero():
    """DeSync through the scoring core (its network scripted to read the flash and the click: `ScriptedSync`): the
    offset it reports, negated, is highest where the sound is not moved."""
    from avjudge.media import from_arrays
    from avjudge.metrics import get_metric
    from avjudge.scoring import MetricScorer

    from .test_desync import FPS, SAMPLE_RATE, ScriptedSync, flash_click_clip

    metric = get_metric("desync", device="cpu")
    metric.network = ScriptedSync()
    clips = {}
    for at in (3.0, 3.6):  # a flash and its click together, where every cut keeps them
        frames, audio = flash_click_clip([(at, at)], 6.8)
        clips[f"at {at}"] = from_arrays(frames, float(FPS), audio[None], SAMPLE_RATE)
    grid = LagGrid(max_offset=1.0, step=0.25, window=4.8)  # DeSync reads 4.8 s windows
    rows = []
    for name, clip in clips.items():
        results = scoring_cuts(Scoring([MetricScorer(metric)], workers=1), "desync", "desync", False)(grid.cuts(clip))
        profile = [value for value, _ in results]
        assert all(why is None for _, why in results)
        rows.append({"id": name, "profile": profile, "peak_s": peak_offset(profile, grid.offsets)})
        # a class nearest each offset (0.2 s classes; 0.5 s lies between two), negated
        assert np.all(np.abs(np.array(profile) + np.abs(grid.offsets)) <= 0.1 + 1e-6), profile
    summary = summarise(rows, grid, draws=50)
    assert [r["peak_s"] for r in rows] == [0.0, 0.0] and summary["peak_within_one_step"]["share"] == 1.0
    assert {f["auroc"] for f in summary["auroc_in_sync_vs_offset"].values()} == {1.0}
