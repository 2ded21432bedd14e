"""A sample's media as the scoring core takes it, from whatever a trainer holds.

Per sample: a file's path, its encoded bytes, a `avjudge.media.MediaClip`, a dict of decoded arrays
(``{"frames" | "video", "fps", "audio" | "waveform", "sample_rate" | "audio_sample_rate"}``), or frames alone as an
array with the fps the adapter is given. Arrays may be numpy or torch (on any device; moved to the CPU): frames
``(T, H, W, 3)`` uint8 or ``(T, 3, H, W)`` / ``(T, H, W, 3)`` float in [0, 1]; audio ``(N,)`` mono or ``(C, N)`` in
[-1, 1]. A batch is a list of such samples or one batched array (its first axis the sample). Nothing is written to
disk.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..config import ConfigError
from ..media import MediaClip, MediaError, from_arrays

FRAME_KEYS = ("frames", "video")
AUDIO_KEYS = ("audio", "waveform")
RATE_KEYS = ("sample_rate", "audio_sample_rate")


def as_array(value) -> np.ndarray:
    """A numpy array of a numpy array or a torch tensor (detached, on the CPU; bfloat16 as float32)."""
    if hasattr(value, "detach"):  # a torch tensor, without importing torch here
        if str(getattr(value, "device", "")) == "meta":  # a shape without data (a model built without weights)
            raise ValueError("a tensor on the meta device holds no data")
        value = value.detach().cpu()
        if str(value.dtype) == "torch.bfloat16":
            value = value.float()
        return value.numpy()
    return np.asarray(value)


def _first(mapping: dict, keys: tuple[str, ...]):
    return next((mapping[k] for k in keys if mapping.get(k) is not None), None)


def clip_item(media, fps: float | None = None, audio=None, sample_rate: int | None = None) -> dict:
    """The scoring core's media fields of one sample (``video`` / ``media``), see the module's docstring; ``audio``
    and ``sample_rate``: a waveform held apart from the frames (verl-omni's ``extra_info``, Flow-Factory's ``audio``).
    Arrays that are not a clip give ``{"error": why}``: that sample fails alone, as an unreadable file does.
    """
    try:
        return _clip_item(media, fps, audio, sample_rate)
    except MediaError as err:
        return {"error": str(err)}
    except (ValueError, TypeError) as err:  # ragged frames, a tensor or object numpy cannot read: this sample's fault
        return {"error": f"the sample's media is not an array of a clip: {err}"}


def _clip_item(media, fps, audio, sample_rate) -> dict:
    if isinstance(media, MediaClip):
        return {"media": media}
    if isinstance(media, (str, Path)):
        if not str(media).strip():
            raise MediaError(None, "the sample names no clip (an empty path)")
        return {"video": str(media)}
    if isinstance(media, (bytes, bytearray)):
        return {"video": bytes(media)}
    if isinstance(media, dict):
        frames, fps = _first(media, FRAME_KEYS), media.get("fps", fps)
        audio, sample_rate = _first(media, AUDIO_KEYS), _first(media, RATE_KEYS) or sample_rate
    else:
        frames = media
    if frames is None and audio is None:
        raise MediaError(None, "a sample has no media: give a file, its bytes, a MediaClip, frames or audio")
    return {
        "media": from_arrays(
            None if frames is None else as_array(frames),
            fps,
            None if audio is None else as_array(audio),
            sample_rate,
            source="<trainer sample>",
        )
    }


def same_lengths(**lists) -> int:
    """The one length of the lists a trainer hands a reward (None ones left out); a `ConfigError` naming each list's
    length where they differ: a reward per sample, never fewer without a word."""
    lengths = {name: len(values) for name, values in lists.items() if values is not None}
    if len(set(lengths.values())) > 1:
        raise ConfigError(
            "the reward's inputs differ in length: " + ", ".join(f"{name} {n}" for name, n in lengths.items())
        )
    return next(iter(lengths.values()), 0)


def batch_items(
    media, fps: float | None = None, audio=None, sample_rate: int | Sequence[int] | None = None
) -> list[dict]:
    """`clip_item` of each sample of a batch: ``media`` and ``audio`` each a list, or one batched array (split along
    its first axis); ``sample_rate`` one rate, or one per sample."""
    clips = _samples(media)
    sounds = _samples(audio) if audio is not None else [None] * len(clips)
    rates = list(sample_rate) if isinstance(sample_rate, (list, tuple)) else [sample_rate] * len(clips)
    same_lengths(media=clips, audio=sounds, sample_rates=rates)
    return [clip_item(m, fps, a, r) for m, a, r in zip(clips, sounds, rates)]


def _samples(batch) -> list:
    if isinstance(batch, (list, tuple)):
        return list(batch)
    if hasattr(batch, "shape"):  # one batched array or tensor: a sample per row
        return [batch[k] for k in range(batch.shape[0])]
    raise MediaError(None, f"a batch is a list of samples or a batched array, not {type(batch).__name__}")
