"""Opening media with PyAV (a file, or encoded bytes in memory), turning every failure into a MediaError that names
the input."""

from __future__ import annotations

import io
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import av

from .errors import MediaError

Encoded = str | Path | bytes  # a media file's path, or its encoded bytes


def media_name(source: Encoded) -> str:
    """How messages name an input: its path, or the size of bytes in memory (never their content)."""
    return f"<{len(source):,} bytes in memory>" if isinstance(source, (bytes, bytearray)) else str(source)


def check_readable(path: str | Path) -> Path:
    p = Path(path)
    try:
        if not p.exists():
            raise MediaError(p, "no such file")
        if p.is_dir():
            raise MediaError(p, "is a directory, not a media file")
        if p.stat().st_size == 0:
            raise MediaError(p, "file is empty (0 bytes); it was probably not written completely")
    except OSError as err:  # a name over the file system's limit, a folder it may not enter...
        raise MediaError(_short(p), f"cannot be read ({err.strerror or err})") from err
    return p


def _short(path: Path) -> str:
    """A path for a message, cut where it is too long to be a file name at all."""
    text = str(path)
    return text if len(text) <= 200 else f"{text[:120]}...({len(text):,} characters)"


@contextmanager
def open_media(source: Encoded) -> Iterator[av.container.InputContainer]:
    if isinstance(source, (bytes, bytearray)):
        if not source:
            raise MediaError(media_name(source), "no bytes: the media is empty")
        target, name = io.BytesIO(source), media_name(source)
    else:
        target = name = str(check_readable(source))
    try:
        container = av.open(target, metadata_errors="ignore")
    except av.error.FFmpegError as err:
        raise MediaError(
            name,
            f"not a readable audio/video file ({err.strerror or err}); it may be truncated, "
            "corrupt, or not media at all",
        ) from err
    try:
        yield container
    finally:
        container.close()
