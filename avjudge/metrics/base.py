"""Signal metrics: one registry; each metric says which media it needs and which checkpoints it loads."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import ClassVar

import numpy as np

from ..devices import device_name
from ..errors import AvjudgeError
from ..media import NATIVE_FPS, DecodeNeeds, MediaClip, frame_indices, resample
from ..registry import Registry


class MetricError(AvjudgeError):
    """A clip a metric cannot score (no audio, too short, no face...): recorded, never scored as 0."""


@dataclass(frozen=True)
class AudioNeeds:
    sample_rate: int | None  # None: the clip's own rate (metrics whose features depend on it, e.g. NISQA)
    channels: int = 1


class Metric:
    """A signal metric of clips.

    Subclasses set ``name``, ``description``, what they need (``audio``: an `AudioNeeds`; ``video_fps``: the
    frame rate they sample, None for no frames, NATIVE_FPS for the file's own) and ``checkpoints`` (manifest
    entries they load), register with ``@register``, and implement `compute`. A clip is decoded once for every
    metric that scores it; each takes its own rate and channels from it.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    audio: ClassVar[AudioNeeds | None] = None
    video_fps: ClassVar[float | None] = None  # frames per second it samples; None: no frames; NATIVE_FPS
    checkpoints: ClassVar[tuple[str, ...]] = ()  # manifest entries it loads
    # it takes ``device=`` ("cpu", "cuda", ...) and runs its model there; the others run on the CPU
    takes_device: ClassVar[bool] = False
    # what it judges (a reward term's aspect): sync, video, audio, video-text or audio-text
    aspect: ClassVar[str | None] = None
    # the documented range of each output a reward may take, its main one first (its midpoint: a neutral value)
    scales: ClassVar[dict[str, tuple[float, float]]] = {}
    built_with: dict = {}  # the options `get_metric` built it with

    @property
    def needs(self) -> DecodeNeeds:
        """What it reads of a clip, for the decode plan (`avjudge.media.merge_needs`)."""
        return DecodeNeeds(
            video=self.video_fps is not None,
            audio=self.audio is not None,
            fps=self.video_fps,
            sample_rate=self.audio.sample_rate if self.audio else None,
            channels=self.audio.channels if self.audio else None,
        )

    def __reduce__(self):
        # a metric travels (to a Ray actor) as what builds it: its model loads there, on that machine's device
        return partial(get_metric, self.name, **self.built_with), ()

    def compute(self, clip: MediaClip, **ctx) -> dict[str, float]:
        """Score one clip.

        Args:
            clip: the decoded clip, with at least the streams this metric needs.
            **ctx: what else the metric may use, e.g. ``captions`` (the prompt's video, audio and utterance).

        Returns:
            Output name -> value (a metric may give several, e.g. NISQA's MOS and its four dimensions).

        Raises:
            MetricError: the clip cannot be scored (no audio, no face, too short...): recorded, never 0.
        """
        raise NotImplementedError

    def audio_of(self, clip: MediaClip) -> np.ndarray:
        """The clip's audio as this metric wants it: mono (or the channel count) at its rate."""
        if clip.audio is None:
            raise MetricError(f"{clip.source or 'clip'} has no audio for {self.name}")
        audio = clip.audio.mean(axis=0, keepdims=True) if self.audio.channels == 1 else clip.audio
        if self.audio.sample_rate and clip.sample_rate != self.audio.sample_rate:
            audio = resample(audio, clip.sample_rate, self.audio.sample_rate)
        return audio[0] if self.audio.channels == 1 else audio

    def frames_of(self, clip: MediaClip) -> np.ndarray:
        """The clip's frames at this metric's rate: the frame on screen at ``start + k / video_fps``
        (frames repeat or drop, as a constant-rate conversion does)."""
        if clip.frames is None:
            raise MetricError(f"{clip.source or 'clip'} has no video for {self.name}")
        if self.video_fps == NATIVE_FPS or abs(clip.fps - self.video_fps) < 1e-6:
            return clip.frames
        return clip.frames[frame_indices(clip.timestamps, clip.start, clip.duration, self.video_fps)]


def load_torch_file(path):
    """A torch checkpoint read with ``weights_only=True``: tensors and plain data, never pickled code."""
    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - torch raises several types for a file it will not unpickle
        raise MetricError(
            f"{path} is not a plain state dict of tensors and data (avjudge never unpickles code "
            f"from a checkpoint): {err}"
        ) from err


def load_strict(module, state: dict, path, what: str):
    """``load_state_dict(strict=True)`` in eval mode; a checkpoint of another shape is an error naming the file."""
    try:
        module.load_state_dict(state, strict=True)
    except RuntimeError as err:
        raise MetricError(f"{path} is not {what}: {err}") from err
    return module.eval()


METRICS = Registry("metric", MetricError, "`avjudge metrics list` describes them")
register = METRICS.register


def get_metric(name: str, **options) -> Metric:
    """The metric called ``name``; a ``device`` of ``auto`` is CUDA where this machine has one."""
    built = {**options, "device": device_name(options["device"])} if "device" in options else options
    metric = METRICS.lookup(name)(**built)
    metric.built_with = options
    return metric


def load_metrics(names: list[str], device: str = "auto") -> list[Metric]:
    """The named metrics, those that run a model placed on ``device`` (auto: CUDA when there is one)."""
    return [get_metric(n, **({"device": device} if METRICS.lookup(n).takes_device else {})) for n in names]
