"""A decoded clip over the wire: its arrays and timing as a compressed NumPy archive in base64, read back as exactly
the same `MediaClip` (so a clip scored on a server scores as it does in process)."""

from __future__ import annotations

import base64
import binascii
import io
import zipfile

import numpy as np

from .clip import MediaClip
from .errors import MediaError


def pack_clip(clip: MediaClip) -> str:
    """``clip`` as base64 of a compressed ``.npz``: frames, timestamps, audio and their rates, duration, start."""
    arrays = {"duration": np.float64(clip.duration), "start": np.float64(clip.start)}
    if clip.frames is not None:
        arrays.update(frames=clip.frames, fps=np.float64(clip.fps), timestamps=clip.timestamps)
    if clip.audio is not None:
        arrays.update(audio=clip.audio, sample_rate=np.int64(clip.sample_rate))
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return base64.b64encode(buffer.getvalue()).decode()


def unpack_clip(data: str, name: str) -> MediaClip:
    """The clip `pack_clip` packed; a payload that is not one is a `MediaError` naming it."""
    try:
        with np.load(io.BytesIO(base64.b64decode(data, validate=True)), allow_pickle=False) as archive:
            fields = {key: archive[key] for key in archive.files}
        video = "frames" in fields
        return MediaClip(
            frames=fields["frames"] if video else None,
            fps=float(fields["fps"]) if video else None,
            timestamps=fields["timestamps"] if video else None,
            audio=fields.get("audio"),
            sample_rate=int(fields["sample_rate"]) if "audio" in fields else None,
            duration=float(fields["duration"]),
            start=float(fields["start"]),
            source=name,
        )
    except (binascii.Error, ValueError, KeyError, OSError, zipfile.BadZipFile, TypeError) as err:
        raise MediaError(name, f"not a packed clip (avjudge.media.pack_clip): {err}") from err
