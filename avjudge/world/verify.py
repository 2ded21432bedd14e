"""Check decoded clips against their ground truth, looking only at pixels and samples.

Nothing here calls the renderer or the synthesiser: events are found from object colours
in the decoded frames and onsets from the decoded waveform, then matched to world.jsonl.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..media import MediaClip
from . import vocab

COLOUR_TOLERANCE = 40  # max per-channel distance of a decoded pixel from its object's colour
ONSET_TOLERANCE_S = 0.005


@dataclass
class VerifyResult:
    visual_expected: int = 0
    visual_found: int = 0
    visual_spurious: int = 0
    onsets_expected: int = 0
    onsets_found: int = 0
    onsets_spurious: int = 0
    onsets_checked: bool = False
    max_visual_error_s: float = 0.0
    max_onset_error_s: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def colour_mask(frames: np.ndarray, rgb) -> np.ndarray:
    """Pixels of ``frames`` within COLOUR_TOLERANCE of ``rgb`` in every channel. Compared in uint8 one channel at a
    time: an int16 copy of every frame for each object made this the slowest step of checking a world."""
    mask = np.ones(frames.shape[:-1], bool)
    for channel, value in enumerate(rgb):
        plane = frames[..., channel]
        if value - COLOUR_TOLERANCE >= 0:
            mask &= plane > value - COLOUR_TOLERANCE
        if value + COLOUR_TOLERANCE <= 255:
            mask &= plane < value + COLOUR_TOLERANCE
    return mask


MIN_EVENT_S = 0.1  # world events last at least 0.15 s: a shorter blip is coding noise, not an event


def _runs(active: np.ndarray, min_length: int = 1) -> list[int]:
    """Start indices of runs of True at least ``min_length`` long."""
    edges = np.diff(np.concatenate([[0], active.astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return [int(s) for s, e in zip(starts, ends) if e - s >= min_length]


def _robust_trend(
    t: np.ndarray, y: np.ndarray, degree: int, usable: np.ndarray | None = None, events_raise: bool = False
) -> np.ndarray:
    """Polynomial fit refitted on the half of the ``usable`` frames (default all) closest to it, so
    events do not bend it; ``events_raise``: events only raise ``y``, so only frames above the fit by more than the
    median distance are left out, which drops events that cover nearly half the frames and keeps every frame
    below (an object leaving the picture shrinks by steps)."""
    usable = np.ones_like(t, bool) if usable is None else usable
    keep = usable
    for _ in range(4):
        coef = np.polyfit(t[keep], y[keep], degree)
        residual = y - np.polyval(coef, t)
        limit = np.quantile(np.abs(residual[usable]), 0.5)
        keep = usable & ((residual if events_raise else np.abs(residual)) <= limit)
    return np.polyval(coef, t)


def _object_activity(clip: MediaClip, obj: dict) -> np.ndarray:
    """Frames in which the object shows its event look, found from its colour alone.

    Objects move and scale linearly in time, so area follows a quadratic and the centroid a
    line; an event is a departure from that trend.
    """
    own = colour_mask(clip.frames, vocab.COLOURS[obj["colour"]])
    area = own.sum(axis=(1, 2)).astype(float)
    t = clip.timestamps
    # a flash turns the whole object white (area 0): those frames never shape the trend, however many;
    # a pulse only enlarges it
    base_area = _robust_trend(t, area, 2, usable=area > 0, events_raise=obj["event_kind"] == "pulse")
    if obj["event_kind"] == "flash":
        return area < 0.3 * base_area
    if obj["event_kind"] == "pulse":
        return area > 1.4 * base_area
    ys = np.arange(clip.frames.shape[1])[None, :]
    cy = (own.sum(axis=2) * ys).sum(axis=1) / np.maximum(area, 1)
    radius_px = np.sqrt(np.maximum(base_area, 1) / np.pi)
    return _robust_trend(t, cy, 1) - cy > 0.35 * radius_px


def _match(found: list[float], expected: list[float], tolerance: float) -> tuple[int, int, float]:
    """Greedy one-to-one matching: (matched, spurious, largest error of a match)."""
    left = list(expected)
    matched, worst = 0, 0.0
    for t in found:
        if not left:
            break
        j = int(np.argmin([abs(t - e) for e in left]))
        if abs(t - left[j]) <= tolerance:
            worst = max(worst, abs(t - left[j]))
            matched += 1
            left.pop(j)
    return matched, len(found) - matched, worst


def detect_onsets(signal: np.ndarray, sample_rate: int, threshold: float = 0.05, min_gap_s: float = 0.1) -> np.ndarray:
    """Times where |signal| rises above threshold after at least min_gap_s below it."""
    loud = np.flatnonzero(np.abs(signal) > threshold)
    if loud.size == 0:
        return np.zeros(0)
    starts = [loud[0]] + [b for a, b in zip(loud[:-1], loud[1:]) if b - a > min_gap_s * sample_rate]
    return np.asarray(starts, float) / sample_rate


def verify_clip(clip: MediaClip, record: dict) -> VerifyResult:
    """Match the clip's visual events and (in clips without ambience or speech) its onsets."""
    scene = record["scene"]
    result = VerifyResult()
    frame_step = 1.0 / clip.fps
    for i, obj in enumerate(scene["objects"]):
        expected = [e["time"] for e in scene["events"] if e["object"] == i]
        min_frames = max(1, int(MIN_EVENT_S * clip.fps))
        found = [float(clip.timestamps[k]) for k in _runs(_object_activity(clip, obj), min_frames)]
        matched, spurious, worst = _match(found, expected, frame_step + 1e-6)
        result.visual_expected += len(expected)
        result.visual_found += matched
        result.visual_spurious += spurious
        result.max_visual_error_s = max(result.max_visual_error_s, worst)
    if result.visual_found < result.visual_expected or result.visual_spurious:
        result.problems.append(
            f"visual events: {result.visual_found}/{result.visual_expected} found, {result.visual_spurious} spurious"
        )
    quiet = scene["ambience"] == "none" and scene["speech"] is None
    if quiet and clip.audio is not None:
        result.onsets_checked = True
        expected = record["onsets"]
        found = detect_onsets(clip.mono_audio(), clip.sample_rate).tolist()
        matched, spurious, worst = _match(found, expected, ONSET_TOLERANCE_S)
        result.onsets_expected, result.onsets_found, result.onsets_spurious = len(expected), matched, spurious
        result.max_onset_error_s = worst
        if matched < len(expected) or spurious:
            result.problems.append(
                f"audio onsets: {matched}/{len(expected)} within {ONSET_TOLERANCE_S * 1e3:.0f} ms, {spurious} spurious"
            )
    return result
