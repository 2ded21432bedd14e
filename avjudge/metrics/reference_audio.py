"""A clip's audio as av-benchmark reads it for its audio extractors (hkchengrex/av-benchmark @ 050a5cdb,
``av_bench/data/audio_dataset.py``, ``AudioDataset``): the channels averaged, 16 kHz, the mean removed, the first
8 s. Its resampling is torchaudio's; here it is the decoder's (FFmpeg's), so waveforms differ slightly there."""

from __future__ import annotations

import numpy as np

from ..media import MediaClip, resample
from .base import MetricError

SAMPLE_RATE = 16000
SECONDS = 8.0


def reference_waveform(clip: MediaClip) -> np.ndarray:
    """The clip's audio as av-benchmark's extractors take it: 16 kHz mono, its mean removed, 8 s at most."""
    if clip.audio is None or clip.audio.shape[-1] == 0:
        raise MetricError(f"{clip.source or 'clip'} has no audio")
    audio = clip.audio.mean(axis=0)
    if clip.sample_rate != SAMPLE_RATE:
        audio = resample(audio[None], clip.sample_rate, SAMPLE_RATE)[0]
    audio = audio - audio.mean()
    return audio[: int(SAMPLE_RATE * SECONDS)].astype(np.float32)
