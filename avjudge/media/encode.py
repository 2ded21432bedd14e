"""Write frames + audio to a video file, audio to wav/flac, and swap a video's audio track.

Files are written to a temporary name beside the target and renamed at the end, so an
interrupted job never leaves a half-written file under the final name.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Iterator

import av
import numpy as np

from ._open import open_media
from .errors import MediaError


@dataclass(frozen=True)
class VideoProfile:
    video_codec: str
    audio_codec: str
    pix_fmt: str
    options: dict


# x264's macroblock-tree rate control gave different bytes (and pictures) for the same frames from one encode to the
# next, even single-threaded, so a world remade from its seed split differently (splits hash the file); without it
# every encode is the same, at 1.5x the bytes
_X264 = {"preset": "veryfast", "x264-params": "mbtree=0"}
# One profile per container extension: the codecs every common player reads.
VIDEO_PROFILES: dict[str, VideoProfile] = {
    ".mp4": VideoProfile("libx264", "aac", "yuv420p", _X264),
    ".mov": VideoProfile("libx264", "aac", "yuv420p", _X264),
    ".mkv": VideoProfile("libx264", "aac", "yuv420p", _X264),
    ".webm": VideoProfile("libvpx-vp9", "libopus", "yuv420p", {"deadline": "realtime", "cpu-used": "8"}),
}
# Audio-only containers and their sample codecs.
AUDIO_CODECS: dict[str, str] = {".wav": "pcm_s16le", ".flac": "flac"}
# Opus only runs at these rates; other rates are resampled by the encoder's input.
_OPUS_RATE = 48000


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path in the target's directory, renamed onto ``path`` on success, with the permissions any file
    the process writes gets (its umask: mkstemp's own 0600 would leave media readable by its owner only)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=target.suffix, dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~UMASK)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _umask() -> int:
    """The process's umask (read by setting it, so set straight back): read once, at import, before any thread
    writes a file under the momentary 0."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


UMASK = _umask()


def _layout(channels: int) -> str:
    layouts = {1: "mono", 2: "stereo", 6: "5.1"}
    if channels not in layouts:
        raise ValueError(f"can encode 1, 2 or 6 audio channels, not {channels}")
    return layouts[channels]


def _check_audio(audio: np.ndarray, sample_rate: int, clip: bool = True) -> np.ndarray:
    audio = np.asarray(audio)
    if audio.ndim == 1:
        audio = audio[None, :]
    if audio.ndim != 2 or not np.issubdtype(audio.dtype, np.floating):
        raise ValueError(f"audio must be (channels, samples) float, got {audio.shape} {audio.dtype}")
    if sample_rate <= 0:
        raise ValueError(f"sample_rate must be positive, got {sample_rate}")
    if not np.isfinite(audio).all():
        raise ValueError("audio contains NaN or infinite samples")
    return np.ascontiguousarray(np.clip(audio, -1.0, 1.0) if clip else audio, dtype=np.float32)


def _encode_audio_stream(container, stream, audio: np.ndarray, sample_rate: int) -> None:
    layout = _layout(audio.shape[0])
    chunk = 4096
    for i in range(0, audio.shape[1], chunk):
        frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(audio[:, i : i + chunk]), format="fltp", layout=layout)
        frame.sample_rate = sample_rate
        frame.pts = i
        frame.time_base = Fraction(1, sample_rate)
        for packet in stream.encode(frame):
            container.mux(packet)
    for packet in stream.encode(None):
        container.mux(packet)


def _add_audio_stream(container, codec: str, audio: np.ndarray, sample_rate: int):
    rate = _OPUS_RATE if codec == "libopus" else sample_rate
    stream = container.add_stream(codec, rate=rate)
    stream.layout = _layout(audio.shape[0])
    if codec == "aac":
        stream.bit_rate = 64000 * audio.shape[0]
    return stream, rate


def encode_video(
    path: str | Path,
    frames: np.ndarray,
    fps: float,
    audio: np.ndarray | None = None,
    sample_rate: int | None = None,
    *,
    crf: int = 18,
    gop: int | None = None,
) -> Path:
    """Encode (T, H, W, 3) uint8 frames (and optional (C, N) float audio) by file extension; ``gop``: a keyframe at
    least every this many frames (None: the encoder's default, 250 for x264)."""
    path = Path(path)
    profile = VIDEO_PROFILES.get(path.suffix.lower())
    if profile is None:
        raise ValueError(f"{path}: unsupported video extension; use one of {sorted(VIDEO_PROFILES)}")
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8 or len(frames) == 0:
        raise ValueError(f"frames must be non-empty (T, H, W, 3) uint8, got {frames.shape} {frames.dtype}")
    height, width = frames.shape[1:3]
    if width % 2 or height % 2:
        raise ValueError(
            f"{path}: {profile.video_codec} with {profile.pix_fmt} needs an even width and "
            f"height, got {width}x{height}; crop or pad the frames by one pixel"
        )
    if fps <= 0:
        raise ValueError(f"fps must be positive, got {fps}")
    if audio is not None:
        if sample_rate is None:
            raise ValueError("audio needs a sample_rate")
        audio = _check_audio(audio, sample_rate)
    rate = Fraction(fps).limit_denominator(1001)
    with atomic_path(path) as tmp:
        with av.open(str(tmp), "w", format=None) as container:
            vs = container.add_stream(profile.video_codec, rate=rate)
            vs.width, vs.height, vs.pix_fmt = width, height, profile.pix_fmt
            options = dict(profile.options)
            options["crf"] = str(crf)
            vs.options = options
            if gop is not None:
                vs.codec_context.gop_size = gop
            if audio is not None:
                aus, arate = _add_audio_stream(container, profile.audio_codec, audio, sample_rate)
            for i, rgb in enumerate(frames):
                frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
                frame.pts = i
                frame.time_base = 1 / rate
                for packet in vs.encode(frame):
                    container.mux(packet)
            for packet in vs.encode(None):
                container.mux(packet)
            if audio is not None:
                _encode_audio_stream(container, aus, audio, sample_rate)
    return path


def encode_audio(path: str | Path, audio: np.ndarray, sample_rate: int, float32: bool = False) -> Path:
    """Write (C, N) or (N,) float audio to .wav (16-bit PCM) or .flac.

    ``float32=True`` writes a 32-bit float WAV that decodes back bit-identically (no clipping).
    """
    path = Path(path)
    codec = AUDIO_CODECS.get(path.suffix.lower())
    if codec is None:
        raise ValueError(f"{path}: unsupported audio extension; use one of {sorted(AUDIO_CODECS)}")
    if float32:
        if path.suffix.lower() != ".wav":
            raise ValueError(f"{path}: float32 audio is written as .wav")
        codec = "pcm_f32le"
    audio = _check_audio(audio, sample_rate, clip=not float32)
    with atomic_path(path) as tmp:
        with av.open(str(tmp), "w") as container:
            stream = container.add_stream(codec, rate=sample_rate)
            stream.layout = _layout(audio.shape[0])
            _encode_audio_stream(container, stream, audio, sample_rate)
    return path


def replace_audio(video_path: str | Path, audio: np.ndarray, sample_rate: int, out_path: str | Path) -> Path:
    """Copy ``video_path``'s picture packets untouched and encode ``audio`` as its new track."""
    out_path = Path(out_path)
    profile = VIDEO_PROFILES.get(out_path.suffix.lower())
    if profile is None:
        raise ValueError(f"{out_path}: unsupported video extension; use one of {sorted(VIDEO_PROFILES)}")
    audio = _check_audio(audio, sample_rate)
    with open_media(video_path) as src:
        if not src.streams.video:
            raise MediaError(video_path, "has no video stream to keep")
        vin = src.streams.video[0]
        with atomic_path(out_path) as tmp:
            with av.open(str(tmp), "w") as container:
                vout = container.add_stream_from_template(vin)
                aus, _ = _add_audio_stream(container, profile.audio_codec, audio, sample_rate)
                try:
                    for packet in src.demux(vin):
                        if packet.dts is None:
                            continue
                        packet.stream = vout
                        container.mux(packet)
                except av.error.FFmpegError as err:
                    raise MediaError(video_path, f"cannot copy its video packets ({err})") from err
                _encode_audio_stream(container, aus, audio, sample_rate)
    return out_path
