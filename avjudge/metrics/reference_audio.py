"""A clip's audio as av-benchmark reads it for its audio extractors (hkchengrex/av-benchmark @ 050a5cdb,
``av_bench/data/audio_dataset.py``, ``AudioDataset``): the channels averaged, 16 kHz (48 kHz for CLAP), the mean
removed, the first 8 s. Its resampling is torchaudio's; here it is the decoder's (FFmpeg's), so waveforms differ
slightly there."""

from __future__ import annotations

import numpy as np

from ..media import MediaClip, resample
from .base import MetricError

SAMPLE_RATE = 16000
SECONDS = 8.0


def reference_waveform(clip: MediaClip, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """The clip's audio as av-benchmark's extractors take it: mono at ``sample_rate``, its mean removed, 8 s at
    most."""
    if clip.audio is None or clip.audio.shape[-1] == 0:
        raise MetricError(f"{clip.source or 'clip'} has no audio")
    audio = clip.audio.mean(axis=0)
    if clip.sample_rate != sample_rate:
        audio = resample(audio[None], clip.sample_rate, sample_rate)[0]
    audio = audio - audio.mean()
    return audio[: int(sample_rate * SECONDS)].astype(np.float32)
