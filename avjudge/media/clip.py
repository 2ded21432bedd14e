"""The decoded-once contract shared by every perturbation, metric and judge."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True, eq=False)
class MediaClip:
    """Frames and audio of one clip, decoded once.

    ``frames`` is (T, H, W, 3) uint8 RGB with ``timestamps`` (T,) in seconds from the start
    of the file; ``audio`` is (C, N) float32 in [-1, 1] at ``sample_rate``. Either may be
    ``None`` when the clip has (or was decoded without) that stream. ``start`` is the
    window's start in the source file; audio sample 0 sits at ``start``.
    """

    frames: np.ndarray | None = None
    fps: float | None = None
    timestamps: np.ndarray | None = None
    audio: np.ndarray | None = None
    sample_rate: int | None = None
    duration: float = 0.0
    start: float = 0.0
    source: str | None = None
    content_hash: str | None = None

    def __post_init__(self) -> None:
        if self.frames is not None:
            if self.frames.ndim != 4 or self.frames.shape[-1] != 3 or self.frames.dtype != np.uint8:
                raise ValueError(f"frames must be (T, H, W, 3) uint8, got {self.frames.shape} {self.frames.dtype}")
            if self.fps is None or self.fps <= 0:
                raise ValueError("frames need a positive fps")
            if self.timestamps is None or len(self.timestamps) != len(self.frames):
                raise ValueError("frames need one timestamp each")
        if self.audio is not None:
            if self.audio.ndim != 2 or self.audio.dtype != np.float32:
                raise ValueError(f"audio must be (C, N) float32, got {self.audio.shape} {self.audio.dtype}")
            if not self.sample_rate or self.sample_rate <= 0:
                raise ValueError("audio needs a positive sample_rate")

    @property
    def num_frames(self) -> int:
        return 0 if self.frames is None else int(self.frames.shape[0])

    @property
    def size(self) -> tuple[int, int] | None:
        """(width, height) of the frames."""
        return None if self.frames is None else (int(self.frames.shape[2]), int(self.frames.shape[1]))

    @property
    def channels(self) -> int:
        return 0 if self.audio is None else int(self.audio.shape[0])

    def replace(self, **changes) -> "MediaClip":
        """A copy with some fields changed; a changed clip no longer matches its file hash."""
        if ("audio" in changes or "frames" in changes) and "content_hash" not in changes:
            changes["content_hash"] = None
        return dataclasses.replace(self, **changes)

    def window(self, offset: float, duration: float, audio_offset: float | None = None) -> "MediaClip":
        """The part of this clip ``offset`` seconds after its start, ``duration`` long: the frames shown in it and
        the audio from ``audio_offset`` (default ``offset``) on, so the two streams may come from different times
        (a time-shift negative cut from inside its source). The result starts at ``start + offset``.

        Raises:
            ValueError: the window reaches outside the clip's audio (by more than a sample of rounding).
        """
        audio_offset = offset if audio_offset is None else audio_offset
        # a shift rounded to whole samples may start a window up to half a sample before the clip: that is its start
        rounding = 1.0 / self.sample_rate if self.sample_rate else 1e-9
        if offset < -rounding or audio_offset < -rounding or duration <= 0:
            raise ValueError(f"window at {offset:.6f} s (audio {audio_offset:.6f} s) of {duration:.3f} s is invalid")
        offset, audio_offset = max(offset, 0.0), max(audio_offset, 0.0)
        changes: dict = {"start": self.start + offset, "duration": duration, "content_hash": None}
        if self.frames is not None:
            t0 = self.start + offset - 1e-6
            keep = (self.timestamps >= t0) & (self.timestamps < t0 + duration)
            changes.update(frames=self.frames[keep], timestamps=self.timestamps[keep])
        if self.audio is not None:
            first, count = int(round(audio_offset * self.sample_rate)), int(round(duration * self.sample_rate))
            audio = self.audio[:, first : first + count]
            if audio.shape[1] < count - 1:
                raise ValueError(
                    f"the window's audio ({audio_offset:.3f} s + {duration:.3f} s) reaches past the clip's "
                    f"{self.audio.shape[1] / self.sample_rate:.3f} s"
                )
            changes["audio"] = np.ascontiguousarray(audio)
        return dataclasses.replace(self, **changes)

    def mono_audio(self) -> np.ndarray:
        """(N,) float32 mean of the channels."""
        if self.audio is None:
            raise ValueError(f"{self.source or 'clip'} has no audio")
        return self.audio.mean(axis=0).astype(np.float32)


def bytes_hash(data: bytes) -> str:
    """sha256 of encoded media held in memory, as `file_hash` gives it for the same bytes in a file."""
    return hashlib.sha256(data).hexdigest()


def file_hash(path: str | Path, chunk: int = 1 << 20) -> str:
    """sha256 of a file's bytes, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()
