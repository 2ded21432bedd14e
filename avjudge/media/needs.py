"""What a consumer of clips reads of them, and one decode plan that serves many consumers.

Every judge and metric says what it reads of a clip as a `DecodeNeeds`: its streams, the frame rate it samples
(`NATIVE_FPS`: the file's own frames), the audio rate and channel count it takes. `merge_needs` makes one plan for
all of them, so that a clip is decoded once per job: frames at the highest rate any of them samples (the file's own
where one samples those), audio at the rate and channel count they share (else the file's own). Each consumer then
takes its own rate from the clip (`frames_at`, `avjudge.media.resample`).

Frames are decoded at their own size, or scaled down as they are decoded to the most pixels any consumer takes
(``max_pixels``: a judge's processor resizes its frames to at most that many); each model then resizes them as its
processor does.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

NATIVE_FPS = math.inf  # the fps of a consumer that samples the file's own frames (DOVER)


@dataclass(frozen=True)
class DecodeNeeds:
    """What of a clip one consumer reads.

    Attributes:
        video: it reads frames.
        audio: it reads the sound.
        fps: the rate it samples frames at (`NATIVE_FPS`: the file's own frames); with ``video`` only.
        sample_rate: the rate it takes audio at (None: the clip's own).
        channels: the channels it takes (None: the clip's own).
        audio_to_end: it reads every decoded sample, past the declared duration too (an AAC stream's last frame),
            as FFmpeg's command line writes the stream (av-benchmark's set metrics read audio so).
        max_pixels: the most pixels per frame it reads (its frames are scaled down to that, aspect kept, before it
            sees them); None: frames at their own size.
        max_seconds: it reads only the clip's first this many seconds (a judge that scores a long clip's head):
            nothing past them is decoded; None: the whole clip.
        longest: it refuses a clip longer than this many seconds (a judge whose audio window the clip overruns,
            ``long_audio=error``): refused from the headers, before anything is decoded; None: any length.
    """

    video: bool = False
    audio: bool = False
    fps: float | None = None
    sample_rate: int | None = None
    channels: int | None = None
    audio_to_end: bool = False
    max_pixels: int | None = None
    max_seconds: float | None = None
    longest: float | None = None

    def __post_init__(self):
        if self.video and self.fps is None:
            raise ValueError("a consumer of frames says the rate it samples them at (NATIVE_FPS: the file's own)")

    def options(self) -> dict:
        """`avjudge.media.decode`'s keyword arguments for these needs."""
        return {
            "video": self.video,
            "audio": self.audio,
            "fps": None if not self.video or self.fps == NATIVE_FPS else self.fps,
            "sample_rate": self.sample_rate if self.audio else None,
            "channels": self.channels if self.audio else None,
            "audio_to_end": self.audio and self.audio_to_end,
            "max_pixels": self.max_pixels if self.video else None,
            "end": self.max_seconds,
            "longest": self.longest,
        }


def _shared(values: list):
    return values[0] if values and all(v == values[0] for v in values) else None


def merge_needs(needs: Iterable[DecodeNeeds]) -> DecodeNeeds:
    """One plan that serves every consumer: frames at the highest rate any samples (the file's own where one
    samples those), audio at the rate and channels they all take (else the clip's own, each converting it), to the
    stream's end where they all read it so; frames at the largest size any reads (their own where one reads that);
    as far into the clip as any reads; a clip refused for its length only where every one refuses it."""
    needs = list(needs)
    rates = [n.fps for n in needs if n.video]
    sizes = [n.max_pixels for n in needs if n.video]
    lengths = [n.max_seconds for n in needs]
    limits = [n.longest for n in needs]
    sound = [n for n in needs if n.audio]
    return DecodeNeeds(
        video=bool(rates),
        audio=bool(sound),
        fps=max(rates) if rates else None,  # NATIVE_FPS is infinite: it wins
        sample_rate=_shared([n.sample_rate for n in sound]),
        channels=_shared([n.channels for n in sound]),
        audio_to_end=bool(sound) and all(n.audio_to_end for n in sound),
        max_pixels=None if not sizes or None in sizes else max(sizes),
        max_seconds=None if not lengths or None in lengths else max(lengths),
        longest=None if not limits or None in limits else max(limits),  # refused only where no reader takes it
    )


def frame_indices(
    timestamps: np.ndarray, start: float, duration: float, fps: float, count: int | None = None
) -> np.ndarray:
    """Indices of the frames on screen at ``start + k / fps``, for the clip's whole duration or ``count`` moments
    (frames repeat or drop, as a constant-rate conversion does): what `avjudge.media.decode` returns for ``fps``, and
    the one rule every reader of frames (a judge, a metric) picks them by."""
    n = int(np.ceil(duration * fps - 1e-9)) if count is None else count
    shown = np.searchsorted(timestamps, start + np.arange(n) / fps + 1e-6, side="right") - 1
    return np.clip(shown, 0, len(timestamps) - 1)
