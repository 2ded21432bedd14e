"""Signal helpers shared by the audio strategies (numpy / scipy only)."""

from __future__ import annotations

import math

import numpy as np


def fit_length(audio: np.ndarray, n: int) -> np.ndarray:
    """Crop or zero-pad (C, M) audio to (C, n)."""
    if audio.shape[1] >= n:
        return audio[:, :n]
    return np.pad(audio, ((0, 0), (0, n - audio.shape[1])))


def power(x: np.ndarray) -> float:
    return float(np.mean(np.square(x, dtype=np.float64)))


def mix_at_snr(signal: np.ndarray, noise: np.ndarray, snr_db: float) -> np.ndarray:
    """signal + noise scaled so that 10 log10(P_signal / P_noise) = snr_db over the clip."""
    ps, pn = power(signal), power(noise)
    if pn == 0:
        raise ValueError("noise is silent")
    if ps == 0:
        raise ValueError("signal is silent: an SNR is undefined")
    gain = np.sqrt(ps / (pn * 10 ** (snr_db / 10)))
    return (signal + gain * noise).astype(np.float32)


def pink_noise(n: int, rng: np.random.Generator) -> np.ndarray:
    """1/f noise by shaping white noise's spectrum."""
    spectrum = np.fft.rfft(rng.standard_normal(n))
    f = np.arange(len(spectrum), dtype=np.float64)
    f[0] = 1.0
    return np.fft.irfft(spectrum / np.sqrt(f), n)


# a negative whose sound differs from its source's by less than this (dB against the source's level) is the source
# again: AAC at 128 kb/s re-encodes a clip with errors about this far down, so no listener, and no judge fed a file,
# could tell the two apart
UNCHANGED_DB = -40.0


def difference_db(source: np.ndarray, changed: np.ndarray) -> float:
    """How far ``changed`` is from ``source`` (both (C, N), over their common length): the power of the difference
    in dB against the source's power (-inf where they are equal; a silent source counts as a level of 1e-8)."""
    n = min(source.shape[-1], changed.shape[-1])
    difference = power(changed[..., :n].astype(np.float64) - source[..., :n])
    if difference == 0:
        return -math.inf
    return 10 * math.log10(difference / max(power(source[..., :n].astype(np.float64)), 1e-8))
