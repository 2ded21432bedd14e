"""torchaudio's windowed-sinc resampler (``torchaudio.transforms.Resample``, its defaults: a Hann window over 6 zero
crossings, rolloff 0.99, the kernel computed in float64 and kept as float32), written in numpy without torchaudio:
av-benchmark resamples every clip with it before its extractors (hkchengrex/av-benchmark @ 050a5cdb,
``av_bench/data/audio_dataset.py``, ``AudioDataset.read_from_file``), so parity with its figures needs it. Checked
against torchaudio 2.9.1's own ``_get_sinc_resample_kernel`` / ``_apply_sinc_resample_kernel``
(``torchaudio/functional/functional.py``) on stored outputs: within 3e-5, torch summing the taps in float32 where
this sums them in float64."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

ZERO_CROSSINGS = 6
ROLLOFF = 0.99


@lru_cache(maxsize=16)
def _kernel(orig: int, new: int) -> tuple[np.ndarray, int]:
    """(new, 2 width + orig) float32 filters, one per output phase, and the width each side: the rates reduced by
    their gcd, the sinc at the lower rate times the rolloff, windowed, scaled to unit gain."""
    base = min(orig, new) * ROLLOFF
    width = math.ceil(ZERO_CROSSINGS * orig / base)
    offsets = np.arange(-width, width + orig, dtype=np.float64)[None] / orig
    t = (np.arange(0, -new, -1, dtype=np.float64)[:, None] / new + offsets) * base
    t = np.clip(t, -ZERO_CROSSINGS, ZERO_CROSSINGS)
    window = np.cos(t * math.pi / ZERO_CROSSINGS / 2) ** 2
    t *= math.pi
    with np.errstate(invalid="ignore", divide="ignore"):
        sinc = np.where(t == 0, 1.0, np.sin(t) / t)
    return (sinc * window * (base / orig)).astype(np.float32), width


def sinc_resample(waveform: np.ndarray, orig_rate: int, new_rate: int) -> np.ndarray:
    """``waveform`` (..., N) at ``orig_rate`` resampled to ``new_rate`` as ``torchaudio.transforms.Resample`` does:
    ``ceil(N new / orig)`` samples, float32."""
    waveform = np.asarray(waveform, dtype=np.float32)
    if orig_rate == new_rate:
        return waveform
    gcd = math.gcd(int(orig_rate), int(new_rate))
    orig, new = int(orig_rate) // gcd, int(new_rate) // gcd
    kernel, width = _kernel(orig, new)
    rows = waveform.reshape(-1, waveform.shape[-1])
    length = rows.shape[-1]
    padded = np.pad(rows, ((0, 0), (width, width + orig)))
    taps = kernel.shape[1]
    steps = (padded.shape[-1] - taps) // orig + 1
    windows = np.lib.stride_tricks.sliding_window_view(padded, taps, axis=-1)[:, ::orig][:, :steps]
    out = np.einsum("bsk,pk->bsp", windows.astype(np.float64), kernel.astype(np.float64)).reshape(len(rows), -1)
    out = out[:, : math.ceil(new * length / orig)].astype(np.float32)
    return out.reshape(*waveform.shape[:-1], out.shape[-1])
