"""A decoded clip over the wire: its arrays and timing as a compressed NumPy archive in base64, read back as exactly
the same `MediaClip` (so a clip scored on a server scores as it does in process)."""

from __future__ import annotations

import base64
import binascii
import io
import zipfile

import numpy as np

from . import arrays
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


MAX_UNPACKED_BYTES = 1 << 30  # what one packed clip may ask to allocate, by its declared shapes (1 GiB)
FIELDS = {"frames", "fps", "timestamps", "audio", "sample_rate", "duration", "start"}


def declared_bytes(archive: zipfile.ZipFile, name: str) -> int:
    """The bytes the array ``name`` of an ``.npz`` declares in its header, read without loading it."""
    with archive.open(name) as f:
        version = np.lib.format.read_magic(f)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = read(f)
    if dtype.hasobject:
        raise ValueError(f"{name} holds Python objects")
    return int(np.prod(shape, dtype=np.int64)) * dtype.itemsize if shape else dtype.itemsize


def unpack_clip(data: str, name: str, max_bytes: int = MAX_UNPACKED_BYTES) -> MediaClip:
    """The clip `pack_clip` packed, checked as a clip in memory is (`avjudge.media.arrays`). Its arrays' declared
    sizes are checked against ``max_bytes`` before any is read; a payload that is not a packed clip, or one over the
    bound, is a `MediaError` naming it."""
    try:
        raw = base64.b64decode(data, validate=True)
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            members = {member.removesuffix(".npy"): member for member in archive.namelist()}
            unknown = sorted(set(members) - FIELDS)
            if unknown:
                raise ValueError(f"unknown arrays {unknown}")
            asked = sum(declared_bytes(archive, member) for member in members.values())
        if asked > max_bytes:
            raise MediaError(name, f"a packed clip of {asked:,} bytes unpacked: over this server's {max_bytes:,}")
        with np.load(io.BytesIO(raw), allow_pickle=False) as archive:
            fields = {key: archive[key] for key in archive.files}
    except (binascii.Error, ValueError, KeyError, OSError, zipfile.BadZipFile, TypeError) as err:
        raise MediaError(name, f"not a packed clip (avjudge.media.pack_clip): {err}") from err
    video, sound = fields.get("frames"), fields.get("audio")
    if video is None and sound is None:
        raise MediaError(name, "a packed clip holds frames, audio or both")
    if video is not None and "fps" not in fields or sound is not None and "sample_rate" not in fields:
        raise MediaError(name, "a packed clip gives the rate of each stream it holds (fps, sample_rate)")
    video = None if video is None else arrays.picture(video, name)
    sound = None if sound is None else arrays.waveform(sound, name)
    fps, sample_rate, length = arrays.checked_extent(video, fields.get("fps"), sound, fields.get("sample_rate"), name)
    timestamps = None
    if video is not None:
        timestamps = np.asarray(fields.get("timestamps", np.arange(len(video)) / fps), dtype=np.float64)
        if timestamps.shape != (len(video),) or not np.isfinite(timestamps).all() or np.any(np.diff(timestamps) < 0):
            raise MediaError(name, "a packed clip's timestamps are one finite, non-decreasing time per frame")
    return MediaClip(
        frames=video,
        fps=fps,
        timestamps=timestamps,
        audio=sound,
        sample_rate=None if sound is None else int(round(sample_rate)),
        duration=arrays.seconds(fields.get("duration", length), "duration", name),
        start=arrays.seconds(fields.get("start", 0.0), "start", name),
        source=name,
    )
