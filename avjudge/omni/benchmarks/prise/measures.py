"""PriSe's truth measured again on the decoded clip by code that does not know how it was drawn: the shape's fill
of its bounding box, the mean colour of the lit pixels, the centroid and its path, the lit area, the edge sharpness,
the f0 and spectral flatness, the onsets of the sound and the frames where each object lights up."""

from __future__ import annotations

import numpy as np

from ... import meters
from .stimuli import COLOURS, FPS, POSITIONS, RATE, SIZE, SIZES


def _lit(frame: np.ndarray, floor: int = 60) -> np.ndarray:
    return frame.max(axis=-1) > floor


def _shape_of(frames, audio) -> dict:
    lit = _lit(frames[len(frames) // 2])
    ys, xs = np.nonzero(lit)
    fill = lit.sum() / ((ys.max() - ys.min() + 1) * (xs.max() - xs.min() + 1))
    return {"shape": "square" if fill > 0.92 else "circle" if fill > 0.65 else "triangle"}


def _colour_of(frames, audio) -> dict:
    frame = frames[len(frames) // 2]
    mean = frame[_lit(frame)].mean(axis=0)
    return {"colour": min(COLOURS, key=lambda c: np.sum((np.array(COLOURS[c]) - mean) ** 2))}


def _centroid(frame: np.ndarray) -> np.ndarray:
    ys, xs = np.nonzero(_lit(frame))
    return np.array([xs.mean(), ys.mean()])


def _position_of(frames, audio) -> dict:
    centre = _centroid(frames[len(frames) // 2])
    nearest = min(POSITIONS, key=lambda p: np.sum((np.array(POSITIONS[p]) - centre) ** 2))
    return {"position": nearest, "centre": centre.tolist()}


def _size_of(frames, audio) -> dict:
    """The radius of a disc of the lit area."""
    return {"radius": float(np.sqrt(_lit(frames[len(frames) // 2]).sum() / np.pi))}


def _motion_of(frames, audio) -> dict:
    dx, dy = _centroid(frames[-1]) - _centroid(frames[0])
    horizontal = abs(dx) > abs(dy)
    return {"direction": ("right" if dx > 0 else "left") if horizontal else ("down" if dy > 0 else "up")}


def _blur_of(frames, audio) -> dict:
    grey = frames[len(frames) // 2].astype(np.float64).mean(axis=-1)
    edge = max(np.abs(np.diff(grey, axis=0)).max(), np.abs(np.diff(grey, axis=1)).max())
    return {"blurred": bool(edge < 40)}


def _pitch_of(frames, audio) -> dict:
    return {"high": bool(meters.fundamental(audio, RATE) > 600)}


def _noise_of(frames, audio) -> dict:
    power = np.abs(np.fft.rfft(audio)) ** 2 + 1e-12
    flatness = np.exp(np.mean(np.log(power))) / np.mean(power)
    return {"noise": bool(flatness > 0.1)}


def _beats_of(frames, audio) -> dict:
    return {"onsets": meters.onset_times(audio, RATE, min_gap=0.1).tolist()}


def _flashes_of(frames, audio) -> dict:
    """When each half of the picture first lights up (seconds), and the sound's onsets."""
    times = []
    for half in (frames[:, :, : SIZE // 2], frames[:, :, SIZE // 2 :]):
        lit = half.max(axis=(1, 2, 3)) > 150
        times.append(float(np.argmax(lit)) / FPS if lit.any() else None)
    return {"flash_times": times, "onsets": meters.onset_times(audio, RATE, min_gap=0.1).tolist()}


MEASURES = {
    "shape": _shape_of,
    "colour": _colour_of,
    "position": _position_of,
    "size": _size_of,
    "motion": _motion_of,
    "blur": _blur_of,
    "pitch": _pitch_of,
    "noise": _noise_of,
    "beat_count": _beats_of,
    "sounds_first": _flashes_of,
    "av_offset": _flashes_of,
}
ONSET_TOLERANCE = 0.005  # seconds, for the sound; one frame for the picture


def agrees(task: str, truth: dict, measured: dict) -> bool:
    """Whether what was measured on the decoded clip is the truth it was drawn with."""
    if task == "shape":
        return measured["shape"] == truth["shape"]
    if task == "colour":
        return measured["colour"] == truth["colour"]
    if task == "position":
        return measured["position"] == truth["position"] and np.allclose(measured["centre"], truth["centre"], atol=1)
    if task == "size":
        low, high = SIZES[truth["size"]]
        return low - 1 <= measured["radius"] <= high + 1 and abs(measured["radius"] - truth["radius"]) <= 1
    if task == "motion":
        return measured["direction"] == truth["direction"]
    if task == "blur":
        return measured["blurred"] == (truth["blur_sigma"] > 0)
    if task == "pitch":
        return measured["high"] == (truth["frequency"] > 600)
    if task == "noise":
        return measured["noise"] == truth["noise"]
    if task == "beat_count":
        found = measured["onsets"]
        return len(found) == truth["count"] and all(
            abs(a - b) <= ONSET_TOLERANCE for a, b in zip(found, truth["onsets"])
        )
    flashes = truth["flash_times"] if task == "sounds_first" else [truth["flash"]]
    seen = [t for t in measured["flash_times"] if t is not None]
    if len(seen) != len(flashes) or any(abs(a - b) > 1 / FPS for a, b in zip(seen, flashes)):
        return False
    heard = measured["onsets"]
    sounds = sorted(flashes) if task == "sounds_first" else [truth["flash"] + truth["offset"]]
    return len(heard) == len(sounds) and all(abs(a - b) <= ONSET_TOLERANCE for a, b in zip(heard, sounds))
