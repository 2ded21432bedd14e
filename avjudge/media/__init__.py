"""Decode once, encode, probe: the only place avjudge touches media files."""

from .clip import MediaClip, file_hash
from .decode import decode, decode_or_reason, remix, resample
from .encode import VIDEO_PROFILES, atomic_path, encode_audio, encode_video, replace_audio
from .errors import MediaError
from .probe import AudioInfo, MediaInfo, VideoInfo, probe

__all__ = [
    "AudioInfo",
    "MediaClip",
    "MediaError",
    "MediaInfo",
    "VIDEO_PROFILES",
    "VideoInfo",
    "atomic_path",
    "decode",
    "decode_or_reason",
    "encode_audio",
    "encode_video",
    "file_hash",
    "probe",
    "remix",
    "replace_audio",
    "resample",
]
