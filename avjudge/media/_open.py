"""Opening files with PyAV, turning every failure into a MediaError that names the file."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import av

from .errors import MediaError


def check_readable(path: str | Path) -> Path:
    p = Path(path)
    if not p.exists():
        raise MediaError(p, "no such file")
    if p.is_dir():
        raise MediaError(p, "is a directory, not a media file")
    if p.stat().st_size == 0:
        raise MediaError(p, "file is empty (0 bytes); it was probably not written completely")
    return p


@contextmanager
def open_media(path: str | Path) -> Iterator[av.container.InputContainer]:
    p = check_readable(path)
    try:
        container = av.open(str(p), metadata_errors="ignore")
    except av.error.FFmpegError as err:
        raise MediaError(
            p,
            f"not a readable audio/video file ({err.strerror or err}); it may be truncated, "
            "corrupt, or not media at all",
        ) from err
    try:
        yield container
    finally:
        container.close()
