"""Clips as OpenAI-compatible chat content parts: the one encoder of media into requests, for served judges (vLLM's
frame-list video and WAV ``audio_url``) and for the omni benchmarks' endpoints (``image_url`` frames, ``video_url``
files, ``input_audio``)."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np
from scipy.io import wavfile

VIDEO_MIME = {".mp4": "video/mp4", ".webm": "video/webm", ".mov": "video/quicktime", ".mkv": "video/x-matroska"}


def base64_of(data: bytes) -> str:
    return base64.b64encode(data).decode()


def file_base64(path: str | Path) -> str:
    return base64_of(Path(path).read_bytes())


def jpeg_base64(frame: np.ndarray, quality: int, size: tuple[int, int] | None = None) -> str:
    """An RGB frame as base64 JPEG, resized first (bicubic) where ``size`` (width, height) differs from its own."""
    from PIL import Image  # the judges extra installs it

    image = Image.fromarray(frame)
    if size is not None and image.size != size:
        image = image.resize(size, Image.BICUBIC)
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality)
    return base64_of(buffer.getvalue())


def wav_base64(audio: np.ndarray, rate: int, float32: bool = False) -> str:
    """Mono audio (N,) in [-1, 1] as base64 WAV: 16-bit PCM, or 32-bit float, which decodes back bit-identically."""
    samples = audio.astype(np.float32) if float32 else np.round(np.clip(audio, -1, 1) * 32767).astype(np.int16)
    buffer = io.BytesIO()
    wavfile.write(buffer, rate, samples)
    return base64_of(buffer.getvalue())


def image_part(data: str, mime: str = "image/jpeg") -> dict:
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}


def video_file_part(path: str | Path) -> dict:
    """A video file as it is (its type from its suffix, MP4 where unknown)."""
    mime = VIDEO_MIME.get(Path(path).suffix.lower(), "video/mp4")
    return {"type": "video_url", "video_url": {"url": f"data:{mime};base64,{file_base64(path)}"}}


def frame_list_part(jpegs: list[str]) -> dict:
    """Frames as one video, vLLM's way: ``data:video/jpeg;base64,`` and the JPEGs joined by commas."""
    return {"type": "video_url", "video_url": {"url": "data:video/jpeg;base64," + ",".join(jpegs)}}


def input_audio_part(data: str, fmt: str) -> dict:
    return {"type": "input_audio", "input_audio": {"data": data, "format": fmt}}


def audio_url_part(wav: str) -> dict:
    return {"type": "audio_url", "audio_url": {"url": "data:audio/wav;base64," + wav}}


def text_part(text: str) -> dict:
    return {"type": "text", "text": text}
