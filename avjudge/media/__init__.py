"""Decode once (files, bytes or arrays in memory), encode, probe: the only place avjudge touches media files."""

from .budget import DecodeBudget, fit_pixels
from .clip import MediaClip, bytes_hash, file_hash
from .decode import decode, remix, resample
from .encode import VIDEO_PROFILES, atomic_path, encode_audio, encode_video, replace_audio
from .errors import MediaError
from .needs import NATIVE_FPS, DecodeNeeds, frame_indices, merge_needs
from .probe import AudioInfo, MediaInfo, VideoInfo, probe
from .processes import decoding_pool, in_decoding_process
from .source import conform, from_arrays, load_clip
from .wire import pack_clip, unpack_clip

__all__ = [
    "AudioInfo",
    "DecodeBudget",
    "DecodeNeeds",
    "MediaClip",
    "MediaError",
    "MediaInfo",
    "NATIVE_FPS",
    "VIDEO_PROFILES",
    "VideoInfo",
    "atomic_path",
    "bytes_hash",
    "conform",
    "decode",
    "decoding_pool",
    "in_decoding_process",
    "encode_audio",
    "encode_video",
    "file_hash",
    "fit_pixels",
    "frame_indices",
    "from_arrays",
    "load_clip",
    "merge_needs",
    "pack_clip",
    "probe",
    "remix",
    "replace_audio",
    "resample",
    "unpack_clip",
]
