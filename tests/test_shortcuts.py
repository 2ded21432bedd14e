"""The shortcut audit: each one-side classifier catches what it must (silence padding, a filter, white noise and a loop
by ear; black, frozen and looping frames by eye) and nothing where there is nothing; on built datasets, the paper's
silence-padded shifts are leaks and the shipped recipes' cut shifts are not (`avjudge data audit` run for real)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from avjudge.cli import main
from avjudge.data import build_dataset, load_recipe
from avjudge.data.shortcuts import (
    AUDIO_FEATURES,
    LEAK_LOWER_BOUND,
    VIDEO_FEATURES,
    audio_features,
    side_report,
    video_features,
)
from avjudge.media import MediaClip
from avjudge.perturb import Context, get_strategy
from avjudge.world import MANIFEST, WorldConfig, make_world

SR, FPS = 16000, 8.0


def natural_sound(rng: np.random.Generator, seconds: float = 3.0) -> np.ndarray:
    """A few harmonic sound events over room tone: loud and quiet stretches, never digital silence."""
    n = int(seconds * SR)
    t = np.arange(n) / SR
    sound = rng.standard_normal(n) * 10 ** rng.uniform(-3.5, -2.5)  # room tone
    for _ in range(rng.integers(1, 4)):
        f0, start = rng.uniform(120, 900), rng.uniform(0, seconds - 0.5)
        envelope = (t >= start) & (t < start + rng.uniform(0.3, 1.5))
        sound += envelope * sum(np.sin(2 * np.pi * k * f0 * t) / k for k in range(1, 5)) * rng.uniform(0.05, 0.3)
    return sound.astype(np.float32)


def moving_picture(rng: np.random.Generator, seconds: float = 3.0, size: int = 48) -> np.ndarray:
    """A square of one colour moving over a noisy background of another."""
    count = int(seconds * FPS)
    frames = np.empty((count, size, size, 3), np.uint8)
    background, colour = rng.integers(30, 200, 3), rng.integers(0, 256, 3)
    position, velocity = rng.uniform(0, size - 12, 2), rng.uniform(-4, 4, 2)
    for k in range(count):
        frame = background + rng.normal(0, 6, (size, size, 3))
        x, y = (np.abs((position + k * velocity) % (2 * (size - 12)) - (size - 12))).astype(int)
        frame[y : y + 12, x : x + 12] = colour
        frames[k] = np.clip(frame, 0, 255)
    return frames


def clip_of(rng: np.random.Generator) -> MediaClip:
    frames = moving_picture(rng)
    audio = natural_sound(rng)[None]
    return MediaClip(frames, FPS, np.arange(len(frames)) / FPS, audio, SR, duration=3.0)


NEGATIVES = {  # name -> (side, how a negative is made from a fresh natural clip)
    "silence_padded_shift": ("audio", lambda c, r: get_strategy("time_shift_medium", {"fill": "silence"})(c, r)[0]),
    "filter": ("audio", lambda c, r: get_strategy("filter")(c, r)[0]),
    "white_noise": (
        "audio",
        lambda c, r: get_strategy("noise_addition", {"kind": "white", "snr_db": [0, 10]})(c, r)[0],
    ),
    "audio_loop": ("audio", lambda c, r: get_strategy("looped_first_second").apply(c, {}, Context())),
    "black_frames": ("video", lambda c, r: get_strategy("black_frames").apply(c, {}, Context())),
    "frozen_frame": ("video", lambda c, r: get_strategy("frozen_frame").apply(c, {}, Context())),
    "video_loop": ("video", lambda c, r: get_strategy("looped_first_second").apply(c, {}, Context())),
}


def side_of(clip: MediaClip, side: str) -> np.ndarray:
    return audio_features(clip.audio[0], SR) if side == "audio" else video_features(clip.frames, FPS)


def split(kind: str, side: str, make, n: int, seed: int):
    """``n`` natural clips and ``n`` negatives of ``kind`` (each from a fresh natural clip): features, labels, types."""
    rng = np.random.default_rng(seed)
    rows, labels = [], []
    for _ in range(n):
        rows.append(side_of(clip_of(rng), side))
        rows.append(side_of(make(clip_of(rng), rng), side))
        labels += [1, 0]
    labels = np.array(labels)
    return np.array(rows), labels, np.where(labels == 1, "positive", kind)


@pytest.mark.parametrize("kind", sorted(NEGATIVES))
def test_each_one_side_classifier_catches_its_tell(kind):
    side, make = NEGATIVES[kind]
    features = AUDIO_FEATURES if side == "audio" else VIDEO_FEATURES
    report = side_report(split(kind, side, make, 60, 1), split(kind, side, make, 40, 2), features)
    assert report["per_type"][kind] >= 0.9, report
    assert report["ci95"][kind][0] > LEAK_LOWER_BOUND
    if kind == "silence_padded_shift":
        assert any(word in report["gives_away"][kind] for word in ("silence", "quiet", "louder")), report


@pytest.mark.parametrize("side", ["audio", "video"])
def test_a_negative_made_like_the_positives_tells_nothing(side):
    """Negatives drawn exactly as positives are: the classifier finds no tell (within the interval's reach)."""
    features = AUDIO_FEATURES if side == "audio" else VIDEO_FEATURES
    report = side_report(
        split("alike", side, lambda c, r: c, 60, 3), split("alike", side, lambda c, r: c, 40, 4), features
    )
    assert 0.35 <= report["per_type"]["alike"] <= 0.65 and report["ci95"]["alike"][0] <= LEAK_LOWER_BOUND


SILENCE_RECIPE = """name: paper_shifts
seed: 0
splits: {train: 0.6, test: 0.4}
judges:
  av:
    pairs: 2000
    crop: false
    strategies: {random_mismatch: 0.2, time_shift_medium: 0.2, time_shift_micro: 0.2, filter: 0.2, pitch_shift: 0.2}
    strategy_params:
      time_shift_medium: {shift_s: [1.0, 2.0], fill: silence}
      time_shift_micro: {fill: silence}
"""


@pytest.fixture(scope="module")
def long_world(tmp_path_factory):
    """A world of 5 s clips (room for the demo recipe's 3 s windows and 2 s shifts), small frames."""
    out = tmp_path_factory.mktemp("long_world")
    make_world(WorldConfig(n=48, seed=7, duration=5.0, width=96, height=96, ambience_prob=1.0), out, progress=False)
    return out


def audited(dataset, judges: str, report) -> dict:
    """`avjudge data audit` as a user runs it; the report it wrote."""
    argv = ["data", "audit", "--input", str(dataset), "--judges", judges, "--out", str(report), "--no-progress"]
    assert main(argv) == 0
    return json.loads(report.read_text())


@pytest.fixture(scope="module")
def demo_pairs(long_world, tmp_path_factory):
    """The shipped world_demo recipe's pairs of the long world (2000 AV pairs, 600 VT, 240 AT), 40 % held out."""
    recipe, source = load_recipe(
        "world_demo",
        [
            f"source={long_world / MANIFEST}",
            "judges.av.pairs=2000",
            "judges.vt.pairs=600",
            "splits={train: 0.6, test: 0.4}",
        ],
    )
    out = tmp_path_factory.mktemp("demo_pairs")
    build_dataset(recipe, source, out, progress=False)
    return out


def test_the_papers_silence_padded_shifts_leak_and_the_shipped_cut_shifts_do_not(
    long_world, demo_pairs, tmp_path, capsys
):
    (tmp_path / "paper.yaml").write_text(SILENCE_RECIPE)
    recipe, source = load_recipe(tmp_path / "paper.yaml", [f"source={long_world / MANIFEST}"])
    build_dataset(recipe, source, tmp_path / "paper", progress=False)
    paper = audited(tmp_path / "paper", "av", tmp_path / "paper.json")["av"]
    for kind in ("time_shift_medium", "time_shift_micro"):
        assert paper["audio"]["per_type"][kind] >= 0.85, paper["audio"]
    assert {"time_shift_medium", "time_shift_micro"} <= set(paper["leaks"])
    assert "LEAK time_shift_medium: the audio alone" in capsys.readouterr().out

    shipped = audited(demo_pairs, "av", tmp_path / "demo.json")["av"]
    for kind in ("time_shift_medium", "time_shift_micro", "random_mismatch"):
        for side in ("audio", "video"):
            assert shipped[side]["per_type"][kind] <= 0.65, (kind, side, shipped[side])
    assert not set(shipped["leaks"]) & {"time_shift_medium", "time_shift_micro", "random_mismatch"}
    assert shipped["audio"]["per_type"]["filter"] >= 0.9 and "filter" not in shipped["leaks"]  # its declared tell
    assert shipped["tells"]["filter"] == "audio" and shipped["tells"]["time_shift_medium"] == "none"


def test_caption_edits_are_audited_by_their_words_and_by_the_media_they_leave_alone(demo_pairs, tmp_path, capsys):
    """VT and AT pairs: the text side (the caption's words alone) and the one media side each judge sees. Caption edits
    that bring a word no positive uses leak through the text; the picture or sound alone tells them nothing."""
    import shutil

    report = audited(demo_pairs, "vt,at", tmp_path / "audit.json")
    assert set(report) == {"vt", "at"} and set(report["vt"]) >= {"text", "video"} and "audio" in report["at"]
    for task, side in (("vt", "video"), ("at", "audio")):
        for kind, value in report[task][side]["per_type"].items():
            assert value is None or value <= 0.75, (task, side, kind, value)  # 60 held-out pairs: a wide interval
        assert not {leak["type"] for leak in report[task]["leak_details"] if leak["side"] == side}
    tampered = tmp_path / "tampered"
    shutil.copytree(demo_pairs, tampered)
    for split in ("train", "test"):
        path = tampered / "pairs" / "vt" / f"{split}.jsonl"
        records = [json.loads(line) for line in path.read_text().splitlines()]
        for record in records:
            if not record["label"]:
                record["text"] += " It is mauve."
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    capsys.readouterr()
    leaky = audited(tampered, "vt", tmp_path / "tampered.json")["vt"]
    assert leaky["text"]["overall"] > 0.95 and {leak["side"] for leak in leaky["leak_details"]} == {"text"}
    assert "LEAK" in capsys.readouterr().out


@pytest.mark.slow
def test_the_shipped_100k_recipe_leaks_no_shift_or_mismatch(tmp_path):
    """avbench_av_100k on a world of 8 s clips (its sources are 8-12 s): every strategy of the paper's mix, the sound
    cut from inside the source for shifts; no shift or mismatch is told apart by one side alone."""
    make_world(WorldConfig(n=100, seed=5, duration=8.0, width=96, height=96, ambience_prob=1.0), tmp_path / "w",
               progress=False)  # fmt: skip
    recipe, source = load_recipe(
        "avbench_av_100k",
        [f"source={tmp_path / 'w' / MANIFEST}", "judges.av.pairs=4000", "splits={train: 0.6, val: 0.0, test: 0.4}"],
    )
    build_dataset(recipe, source, tmp_path / "d", progress=False)
    report = audited(tmp_path / "d", "av", tmp_path / "audit.json")["av"]
    cut = {"time_shift_medium", "time_shift_micro", "random_mismatch", "semantic_mismatch"}
    assert cut <= set(report["audio"]["per_type"])
    for kind in cut:
        for side in ("audio", "video"):
            assert report[side]["per_type"][kind] <= 0.65, (kind, side, report[side])
    assert not set(report["leaks"]) & cut
    assert report["audio"]["per_type"]["filter"] >= 0.9 and report["tells"]["speed_change"] == "audio"


def test_data_build_audits_a_sample_when_it_ends(small_world, tmp_path, capsys):
    out = tmp_path / "pairs"
    argv = ["data", "build", "--recipe", "world_demo", "--input", str(small_world / MANIFEST), "--out", str(out)]
    assert main([*argv, "--set", "judges.av.pairs=64", "--audit-sample", "40", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "shortcut audit of 40 pairs a split" in printed
    report = json.loads((out / "audit.json").read_text())
    assert set(report) == {"av", "vt", "at"} and report["av"]["pairs"]["train"] == 40
    assert main([*argv[:-1], str(tmp_path / "quiet"), "--set", "judges.av.pairs=64", "--audit-sample", "0"]) == 0
    assert not (tmp_path / "quiet" / "audit.json").exists() and "shortcut audit" not in capsys.readouterr().out


def test_a_type_with_too_few_held_out_pairs_is_reported_as_na_with_its_count():
    from avjudge.data.shortcuts import MIN_REPORTED, audit_lines

    rng = np.random.default_rng(0)

    def split(n_pos, n_a, n_b):
        kinds = np.array(["positive"] * n_pos + ["filter"] * n_a + ["pitch_shift"] * n_b)
        labels = (kinds == "positive").astype(int)
        x = rng.normal(size=(len(kinds), 3)) + (kinds == "filter")[:, None] * 2.0
        return x, labels, kinds

    report = side_report(split(40, 40, 40), split(20, 20, 1), AUDIO_FEATURES[:3])
    assert report["per_type"]["pitch_shift"] is None and report["ci95"]["pitch_shift"] is None
    assert report["per_type"]["filter"] > 0.8  # enough held out: its AUROC
    entry = {
        "pairs": {"train": 120, "test": 41},
        "audio": report,
        "tells": {"filter": "audio", "pitch_shift": "audio"},
        "held_out": {"filter": 20, "pitch_shift": 1},
        "leak_details": [],
        "unreadable": {},
    }
    lines = audit_lines({"at": {**entry, "text": {"overall": None, "per_type": {}, "ci95": {}}}})
    row = next(line for line in lines if line.strip().startswith("pitch_shift"))
    assert "n/a (1 held out)" in row and "0.00" not in row
    assert MIN_REPORTED > 1
