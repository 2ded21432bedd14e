"""Arrays from outside (a trainer's tensors, a request's packed clip) checked once, at the edge, before anything uses
or allocates for them: `from_arrays` and `avjudge.media.unpack_clip` both build their clips here, so every adapter,
`avjudge.rewards.clip_item` and the server refuse the same things with the same words. A refused input is that
sample's `MediaError` (the sample fails alone), never a silently wrong score.

- Frames: ``(T, H, W, 3)`` or ``(T, 3, H, W)``, at least one of at least 1 x 1 pixels; uint8, or float in [0, 1].
- Audio: ``(N,)`` mono or ``(C, N)``; ``(N, C)`` with fewer channels (at most `MAX_CHANNELS`) than samples is read as
  channels last and transposed. Integer samples are scaled by their type's range (int16 by 32768); float samples
  must be finite and lie in [-1, 1] (within `AUDIO_TOLERANCE`): a waveform scaled otherwise is refused, not scored.
- Rates and length: fps in [`MIN_FPS`, `MAX_FPS`], a sample rate in [`MIN_SAMPLE_RATE`, `MAX_SAMPLE_RATE`], finite;
  a clip at most `MAX_SECONDS` long.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import MediaError

MIN_FPS, MAX_FPS = 0.1, 1000.0
MIN_SAMPLE_RATE, MAX_SAMPLE_RATE = 1000, 768_000
MAX_SECONDS = 3600.0  # an hour: longer is no generated clip, and would ask for unbounded memory downstream
MAX_CHANNELS = 32
AUDIO_TOLERANCE = 1e-3


def rate(value, name: str, low: float, high: float, source: str) -> float:
    """A finite rate within [low, high]."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise MediaError(source, f"{name} must be a number, not {value!r}") from None
    if not math.isfinite(value) or not low <= value <= high:
        raise MediaError(source, f"{name} {value:g} is outside [{low:g}, {high:g}]")
    return value


def seconds(value, name: str, source: str) -> float:
    """A finite length of time within [0, `MAX_SECONDS`]."""
    return rate(value, name, 0.0, MAX_SECONDS, source)


def picture(frames, source: str) -> np.ndarray:
    """Frames as (T, H, W, 3) uint8."""
    frames = np.asarray(frames)
    if frames.ndim != 4 or 3 not in (frames.shape[-1], frames.shape[1]):
        raise MediaError(source, f"frames in memory are (T, H, W, 3) or (T, 3, H, W), not shape {frames.shape}")
    if frames.shape[-1] != 3:  # channels first, as torch lays images out
        frames = np.moveaxis(frames, 1, -1)
    if min(frames.shape[:3]) < 1:
        raise MediaError(source, f"frames in memory hold no picture: shape {frames.shape}")
    if frames.dtype == np.uint8:
        return np.ascontiguousarray(frames)
    if not np.issubdtype(frames.dtype, np.floating):
        raise MediaError(source, f"frames in memory are uint8 or float in [0, 1], not {frames.dtype}")
    if not np.isfinite(frames).all() or frames.min() < -1e-3 or frames.max() > 1 + 1e-3:
        raise MediaError(source, "float frames in memory must lie in [0, 1]")
    return np.ascontiguousarray(np.round(np.clip(frames, 0, 1) * 255).astype(np.uint8))


def waveform(audio, source: str) -> np.ndarray:
    """Audio as (C, N) float32 in [-1, 1]."""
    audio = np.asarray(audio)
    if audio.ndim == 1:
        audio = audio[None]
    if audio.ndim != 2 or min(audio.shape) < 1:
        raise MediaError(source, f"audio in memory is (N,) or (C, N) samples, not shape {audio.shape}")
    if audio.shape[0] > MAX_CHANNELS:
        if audio.shape[1] > MAX_CHANNELS:
            raise MediaError(source, f"audio of shape {audio.shape}: more than {MAX_CHANNELS} channels either way")
        audio = audio.T  # (N, C): channels last, as soundfile and most audio libraries lay them out
    elif audio.shape[1] < audio.shape[0]:
        audio = audio.T
    if audio.dtype == np.bool_ or not (np.issubdtype(audio.dtype, np.number)):
        raise MediaError(source, f"audio samples are numbers, not {audio.dtype}")
    if np.issubdtype(audio.dtype, np.complexfloating):
        raise MediaError(source, "audio samples are real numbers, not complex")
    if np.issubdtype(audio.dtype, np.integer):
        info = np.iinfo(audio.dtype)
        middle = (int(info.max) + int(info.min) + 1) / 2  # 0 for signed types, 128 for uint8
        return np.ascontiguousarray((audio.astype(np.float64) - middle) / (info.max - middle + 1), dtype=np.float32)
    audio = np.asarray(audio, dtype=np.float32)
    if not np.isfinite(audio).all():
        raise MediaError(source, "audio in memory holds NaN or infinite samples")
    peak = float(np.abs(audio).max())
    if peak > 1 + AUDIO_TOLERANCE:
        raise MediaError(
            source,
            f"float audio in memory lies in [-1, 1]; its peak is {peak:.4g}: scale it, or hand integer PCM as its "
            "integer type (int16 is read as such)",
        )
    return np.ascontiguousarray(audio)


def checked_extent(frames: np.ndarray | None, fps, audio: np.ndarray | None, sample_rate, source: str):
    """(fps, sample rate, duration) of arrays, each rate checked and the clip at most `MAX_SECONDS` long."""
    fps = None if frames is None else rate(fps, "fps", MIN_FPS, MAX_FPS, source)
    sample_rate = None if audio is None else rate(sample_rate, "sample_rate", MIN_SAMPLE_RATE, MAX_SAMPLE_RATE, source)
    duration = max(
        len(frames) / fps if frames is not None else 0.0, audio.shape[1] / sample_rate if audio is not None else 0.0
    )
    return fps, sample_rate, seconds(duration, "the clip's length (s)", source)
