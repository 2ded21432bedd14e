"""What a media file holds, read from its headers (and its first video frame for rotation)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import av

from ._open import open_media
from .errors import MediaError


@dataclass(frozen=True)
class VideoInfo:
    codec: str
    width: int  # as displayed, rotation applied
    height: int
    fps: float | None
    frames: int | None
    rotation: int  # degrees counter-clockwise that the display applies
    pix_fmt: str | None


@dataclass(frozen=True)
class AudioInfo:
    codec: str
    sample_rate: int
    channels: int
    layout: str


@dataclass(frozen=True)
class MediaInfo:
    path: str
    format: str
    duration: float | None
    size_bytes: int
    start_time: float
    video: VideoInfo | None
    audio: AudioInfo | None

    def to_dict(self) -> dict:
        return asdict(self)


def stream_origin(container: av.container.InputContainer) -> float:
    """The file's time zero: timestamps are reported relative to it."""
    return 0.0 if container.start_time is None else container.start_time / av.time_base


def stream_end(stream, origin: float) -> float | None:
    """Where ``stream`` says it ends on the file's clock (its own start plus its own duration); None where its
    headers do not say."""
    if not stream.duration or not stream.time_base:
        return None
    begin = stream.start_time * stream.time_base if stream.start_time is not None else 0
    return float(begin + stream.duration * stream.time_base) - origin


def container_duration(container: av.container.InputContainer) -> float | None:
    if container.duration is not None and container.duration > 0:
        return container.duration / av.time_base
    durations = [float(s.duration * s.time_base) for s in container.streams if s.duration and s.time_base]
    return max(durations) if durations else None


def first_frame_rotation(container: av.container.InputContainer, stream: av.video.stream.VideoStream) -> int:
    try:
        for frame in container.decode(stream):
            return int(round(frame.rotation)) % 360
    except av.error.FFmpegError:
        return 0
    return 0


def probe(path: str | Path) -> MediaInfo:
    """Read stream facts without decoding the whole file."""
    with open_media(path) as c:
        video = audio = None
        if c.streams.video:
            vs = c.streams.video[0]
            cc = vs.codec_context
            rotation = first_frame_rotation(c, vs)
            w, h = cc.width, cc.height
            if rotation in (90, 270):
                w, h = h, w
            rate = vs.average_rate or vs.guessed_rate
            video = VideoInfo(
                codec=cc.name,
                width=w,
                height=h,
                fps=float(rate) if rate else None,
                frames=vs.frames or None,
                rotation=rotation,
                pix_fmt=cc.pix_fmt,
            )
        if c.streams.audio:
            aus = c.streams.audio[0]
            cc = aus.codec_context
            audio = AudioInfo(codec=cc.name, sample_rate=cc.sample_rate, channels=cc.channels, layout=cc.layout.name)
        if video is None and audio is None:
            raise MediaError(path, "contains neither a video nor an audio stream")
        return MediaInfo(
            path=str(path),
            format=c.format.name,
            duration=container_duration(c),
            size_bytes=Path(path).stat().st_size,
            start_time=stream_origin(c),
            video=video,
            audio=audio,
        )
