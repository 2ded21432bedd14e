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
