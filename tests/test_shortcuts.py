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
    "white_noise": ("audio", lambda c, r: get_strategy("noise_addition", {"kind": "white", "snr_db": [0, 10]})(c, r)[0]),
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


def audited(world, recipe_path, folder, overrides=()) -> dict:
    recipe, source = load_recipe(recipe_path, [f"source={world / MANIFEST}", *overrides])
    build_dataset(recipe, source, folder, progress=False)
    report_path = folder / "shortcuts.json"
    argv = ["data", "audit", "--input", str(folder), "--judges", "av", "--out", str(report_path), "--no-progress"]
    assert main(argv) == 0
    return json.loads(report_path.read_text())["av"]


def test_the_papers_silence_padded_shifts_leak_and_the_shipped_cut_shifts_do_not(long_world, tmp_path, capsys):
    (tmp_path / "paper.yaml").write_text(SILENCE_RECIPE)
    paper = audited(long_world, tmp_path / "paper.yaml", tmp_path / "paper")
    for kind in ("time_shift_medium", "time_shift_micro"):
        assert paper["audio"]["per_type"][kind] >= 0.85, paper["audio"]
    assert {"time_shift_medium", "time_shift_micro"} <= set(paper["leaks"])
    assert "LEAK time_shift_medium: the audio alone" in capsys.readouterr().out

    shipped = audited(long_world, "world_demo", tmp_path / "demo", ["judges.av.pairs=2000", "splits={train: 0.6, test: 0.4}"])
    for kind in ("time_shift_medium", "time_shift_micro", "random_mismatch"):
        for side in ("audio", "video"):
            assert shipped[side]["per_type"][kind] <= 0.65, (kind, side, shipped[side])
    assert not set(shipped["leaks"]) & {"time_shift_medium", "time_shift_micro", "random_mismatch"}
    assert shipped["audio"]["per_type"]["filter"] >= 0.9 and "filter" not in shipped["leaks"]  # its declared tell
    assert shipped["tells"]["filter"] == "audio" and shipped["tells"]["time_shift_medium"] == "none"
