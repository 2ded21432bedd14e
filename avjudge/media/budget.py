"""What one clip may cost to decode, checked from its headers before a frame is decoded, and frames brought down to
the size their readers take as each is decoded.

A small file can declare hours of 4K video: decoded whole at its own size it would take gigabytes and minutes. So a
clip is probed first (its declared duration, frame size, frame rate, audio rate and channels) and refused past a
`DecodeBudget`: longer than ``max_seconds``, frames larger than ``max_frame_pixels``, or more than ``max_decoded_mb``
of frames and samples held once decoded (estimated from the headers and the decode plan: the frames the plan keeps,
at the size it keeps them, and the audio at its own rate). ``timeout_s`` bounds the decoding itself, checked between
packets: a clip that decodes slowly fails alone, as that clip's error.

Frames larger than a plan's ``max_pixels`` (`avjudge.media.DecodeNeeds`: the most any of its readers takes) are
scaled down to it one at a time as they are decoded (`fit_pixels`), never held at their own size; a clip in memory is
scaled by the same function, so a file and its frames in memory give the same arrays.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import av
import numpy as np

from . import threads as ffmpeg_threads
from .errors import MediaError


@dataclass(frozen=True)
class DecodeBudget:
    """The most one clip may ask of the decoder (None: no bound).

    Attributes:
        max_seconds: the longest clip (the window read, where one is given).
        max_frame_pixels: the largest frame, width x height as stored.
        max_decoded_mb: the frames and samples held once decoded, estimated from the headers before decoding.
        timeout_s: how long decoding one clip may take.
    """

    max_seconds: float | None = 3600.0
    max_frame_pixels: int | None = 7680 * 4320  # 8K UHD
    max_decoded_mb: float | None = 8192.0
    timeout_s: float | None = None

    def __post_init__(self):
        for name in ("max_seconds", "max_frame_pixels", "max_decoded_mb", "timeout_s"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value > 0):
                raise ValueError(f"a decode budget's {name} is positive (or None: no bound), not {value!r}")

    def check(
        self,
        name: str,
        seconds: float,
        stored: tuple[int, int] | None = None,
        kept: tuple[int, int] | None = None,
        frame_rate: float | None = None,
        audio: tuple[int, int] | None = None,
    ) -> None:
        """Refuse a clip whose headers (or arrays) ask more than this budget, before decoding it.

        Args:
            name: how messages name the clip.
            seconds: the length read.
            stored: (width, height) of its frames as stored (each is decoded whole); None without frames.
            kept: (width, height) of the frames kept (scaled to a plan's pixels); None: as stored.
            frame_rate: the rate frames are kept at (None: unknown, not estimated).
            audio: (sample rate, channels) of the sound; None without sound.
        """
        if self.max_seconds is not None and seconds > self.max_seconds:
            raise MediaError(name, f"lasts {seconds:.1f} s, over the {self.max_seconds:g} s a clip may last here")
        if stored is not None and self.max_frame_pixels is not None:
            width, height = stored
            if width * height > self.max_frame_pixels:
                raise MediaError(
                    name,
                    f"has {width}x{height} frames, over the {self.max_frame_pixels:,} pixels a frame may have here",
                )
        if self.max_decoded_mb is None:
            return
        held = 0.0
        kept = kept or stored
        if kept is not None and frame_rate:
            held += math.ceil(seconds * frame_rate) * kept[0] * kept[1] * 3
        if audio is not None:
            held += seconds * audio[0] * audio[1] * 4
        if held > self.max_decoded_mb * 2**20:
            raise MediaError(
                name,
                f"would take {held / 2**20:,.0f} MB once decoded, over the {self.max_decoded_mb:g} MB a clip may take "
                "here; cut it, or send it at a lower resolution or rate",
            )

    def deadline(self) -> float:
        """The monotonic time by which decoding a clip begun now must end."""
        return math.inf if self.timeout_s is None else time.monotonic() + self.timeout_s

    def check_time(self, name: str, deadline: float, at: float) -> None:
        """Refuse a clip still decoding past ``deadline`` (``at``: how far into it, in seconds)."""
        if time.monotonic() > deadline:
            raise MediaError(
                name, f"took longer than the {self.timeout_s:g} s decoding may take here (stopped at {at:.1f} s)"
            )


def fitted_size(width: int, height: int, max_pixels: int | None) -> tuple[int, int]:
    """(width, height) scaled down, aspect kept, to at most ``max_pixels`` pixels (as it is where it has fewer)."""
    if max_pixels is None or width * height <= max_pixels:
        return width, height
    scale = math.sqrt(max_pixels / (width * height))
    return max(1, math.floor(width * scale)), max(1, math.floor(height * scale))


def fit_pixels(rgb: np.ndarray, max_pixels: int | None) -> np.ndarray:
    """One (H, W, 3) uint8 frame with at most ``max_pixels`` pixels: scaled down by area averaging (FFmpeg's
    ``area`` scaler) where it has more, else itself."""
    height, width = rgb.shape[:2]
    w, h = fitted_size(width, height, max_pixels)
    if (w, h) == (width, height):
        return rgb
    frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
    return frame.reformat(width=w, height=h, interpolation="AREA", threads=ffmpeg_threads.SCALER).to_ndarray()
