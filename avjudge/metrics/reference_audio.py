"""A clip's audio as av-benchmark reads it for its audio extractors (hkchengrex/av-benchmark @ 050a5cdb,
``av_bench/data/audio_dataset.py``, ``AudioDataset.read_from_file``): the channels averaged, the mean removed at the
file's rate, resampled by torchaudio's ``Resample`` (`avjudge.metrics.sinc_resample`, the same filter) to 16 kHz
(32 kHz for PaSST, 48 kHz for CLAP), the first 8 s. A clip decoded at another rate than the file's (CLAP's own
plan) is resampled by the decoder first, so its waveform differs slightly from av-benchmark's."""

from __future__ import annotations

import numpy as np

from ..media import MediaClip
from .base import MetricError
from .sinc_resample import sinc_resample

SAMPLE_RATE = 16000
SECONDS = 8.0


def reference_waveform(clip: MediaClip, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """The clip's audio as av-benchmark's extractors take it: mono at ``sample_rate``, its mean removed, 8 s at
    most."""
    if clip.audio is None or clip.audio.shape[-1] == 0:
        raise MetricError(f"{clip.source or 'clip'} has no audio")
    audio = clip.audio.mean(axis=0, dtype=np.float32)
    audio = audio - audio.mean()
    if clip.sample_rate != sample_rate:
        audio = sinc_resample(audio, clip.sample_rate, sample_rate)
    return audio[: int(sample_rate * SECONDS)].astype(np.float32)
