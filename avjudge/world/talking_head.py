"""A cartoon talking head whose mouth opens with the loudness of its speech: lip-sync clips with an exact
ground truth (the audio can be delayed by a known number of frames), found by ordinary face detectors."""

from __future__ import annotations

import numpy as np
from scipy.ndimage import gaussian_filter

SKIN, EYE_WHITE, PUPIL, BROW, MOUTH, BACKDROP = (
    (220, 180, 150),
    (250, 250, 250),
    (30, 30, 30),
    (50, 40, 40),
    (120, 30, 40),
    (120, 90, 60),
)


def mouth_openness(audio: np.ndarray, sample_rate: int, fps: float, frames: int) -> np.ndarray:
    """(frames,) in [0, 1]: RMS of the audio under each frame, relative to the loudest frame."""
    hop = sample_rate / fps
    rms = np.array(
        [
            np.sqrt(np.mean(audio[int(k * hop) : int((k + 1) * hop)] ** 2)) if int(k * hop) < len(audio) else 0.0
            for k in range(frames)
        ]
    )
    return np.clip(rms / max(rms.max(), 1e-9), 0.0, 1.0)


def _ellipse(yy, xx, cy, cx, ry, rx) -> np.ndarray:
    return ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1.0


def render_face(openness: float, width: int = 320, height: int = 240, radius: float = 80.0) -> np.ndarray:
    """(H, W, 3) uint8 RGB frontal face centred in the frame; the mouth's height follows ``openness``."""
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    cy, cx, s = height / 2, width / 2, radius
    img = np.empty((height, width, 3), np.float32)
    img[:] = BACKDROP
    img[_ellipse(yy, xx, cy, cx, s, 0.8 * s)] = SKIN
    for side in (-0.35, 0.35):
        ex, ey = cx + side * s, cy - 0.25 * s
        img[_ellipse(yy, xx, ey - 0.18 * s, ex, 0.05 * s, 0.22 * s)] = BROW
        img[_ellipse(yy, xx, ey, ex, 0.08 * s, 0.16 * s)] = EYE_WHITE
        img[_ellipse(yy, xx, ey, ex, 0.07 * s, 0.07 * s)] = PUPIL
    img[_ellipse(yy, xx, cy + 0.5 * s, cx, max(0.25 * s * openness, 1.0), 0.3 * s)] = MOUTH
    return np.clip(gaussian_filter(img, sigma=(1.0, 1.0, 0.0)), 0, 255).astype(np.uint8)


def talking_head(
    audio: np.ndarray, sample_rate: int, fps: float = 25.0, delay_frames: int = 0, width: int = 320, height: int = 240
) -> tuple[np.ndarray, np.ndarray]:
    """(frames, audio): a face mouthing ``audio`` (mono), with the returned audio delayed by
    ``delay_frames`` frames (negative: ahead of the picture), same length as the input."""
    frames = int(len(audio) / sample_rate * fps)
    video = np.stack([render_face(o, width, height) for o in mouth_openness(audio, sample_rate, fps, frames)])
    shift = int(round(delay_frames * sample_rate / fps))
    shifted = np.zeros_like(audio)
    if shift >= 0:
        shifted[shift:] = audio[: len(audio) - shift]
    else:
        shifted[:shift] = audio[-shift:]
    return video, shifted
