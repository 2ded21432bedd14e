"""Meters that measure a stimulus' physical attributes from its samples alone, independent of how it was rendered:
the stimulus generator labels an item only where these agree with what it meant to render.

Each takes float samples (mono ``(n,)``, or ``(n, 2)`` for the binaural meters) and the sample rate.
"""

from __future__ import annotations

import numpy as np
from scipy.signal import correlate, fftconvolve, lfilter

FRAME = 0.010  # seconds, for envelopes


def _mono(x: np.ndarray) -> np.ndarray:
    return x.mean(axis=1) if x.ndim == 2 else x


def frame_rms_db(x: np.ndarray, sr: int, frame: float = FRAME) -> np.ndarray:
    """RMS level (dBFS) of consecutive frames."""
    x = _mono(x)
    n = max(1, int(frame * sr))
    frames = x[: len(x) // n * n].reshape(-1, n)
    return 10 * np.log10(np.mean(frames**2, axis=1) + 1e-12)


# ---- level -----------------------------------------------------------------------------------------------------


def _k_weighting(sr: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """ITU-R BS.1770's two K-weighting stages (a high shelf, then a high-pass), designed for any sample rate."""
    K = np.tan(np.pi * 1681.974450955533 / sr)
    Vh, Q = 10 ** (3.999843853973347 / 20), 0.7071752369554196
    Vb = Vh**0.4996667741545416
    a0 = 1 + K / Q + K * K
    shelf = (
        np.array([(Vh + Vb * K / Q + K * K) / a0, 2 * (K * K - Vh) / a0, (Vh - Vb * K / Q + K * K) / a0]),
        np.array([1.0, 2 * (K * K - 1) / a0, (1 - K / Q + K * K) / a0]),
    )
    K, Q = np.tan(np.pi * 38.13547087602444 / sr), 0.5003270373238773
    a0 = 1 + K / Q + K * K
    highpass = (np.array([1.0, -2.0, 1.0]), np.array([1.0, 2 * (K * K - 1) / a0, (1 - K / Q + K * K) / a0]))
    return [shelf, highpass]


def integrated_loudness(x: np.ndarray, sr: int) -> float:
    """Integrated loudness in LUFS (ITU-R BS.1770-4): K-weighting, 400 ms blocks at 75 % overlap, the absolute gate
    at -70 LUFS and the relative gate 10 LU below the absolutely gated loudness."""
    channels = x.T if x.ndim == 2 else x[None, :]
    weighted = []
    for ch in channels:
        for b, a in _k_weighting(sr):
            ch = lfilter(b, a, ch)
        weighted.append(ch)
    block, step = int(0.4 * sr), int(0.1 * sr)
    if channels.shape[1] < block:
        return float("-inf")
    starts = range(0, channels.shape[1] - block + 1, step)
    z = np.array([[np.mean(ch[s : s + block] ** 2) for s in starts] for ch in weighted]).sum(axis=0)
    loudness = -0.691 + 10 * np.log10(z + 1e-20)
    kept = z[loudness > -70]
    if not len(kept):
        return float("-inf")
    relative = -0.691 + 10 * np.log10(kept.mean()) - 10
    kept = z[(loudness > -70) & (loudness > relative)]
    return float(-0.691 + 10 * np.log10(kept.mean()))


def active_duration(x: np.ndarray, sr: int, below_peak_db: float = 30.0) -> float:
    """Seconds from the first to the last frame within ``below_peak_db`` of the loudest frame."""
    level = frame_rms_db(x, sr)
    active = np.flatnonzero(level > level.max() - below_peak_db)
    return float((active[-1] - active[0] + 1) * FRAME) if len(active) else 0.0


def onset_times(x: np.ndarray, sr: int, rise_db: float = 15.0, min_gap: float = 0.08) -> np.ndarray:
    """Times of sound events: where the frame level rises above (loudest - 25 dB) after having been ``rise_db``
    below it (hysteresis), at least ``min_gap`` apart."""
    level = frame_rms_db(x, sr, 0.005)
    high, low = level.max() - 25.0, level.max() - 25.0 - rise_db
    onsets, armed = [], True
    for i, value in enumerate(level):
        if armed and value > high and (not onsets or i * 0.005 - onsets[-1] >= min_gap):
            onsets.append(i * 0.005)
            armed = False
        elif value < low:
            armed = True
    return np.array(onsets)


def attack_ratio_db(x: np.ndarray, sr: int) -> float:
    """How far the loudest 5 ms frame of the onset's first 50 ms stands above the sound's sustained level (the
    median level of its sounding frames)."""
    level = frame_rms_db(x, sr, 0.005)
    start = int(np.argmax(level > level.max() - 30))
    active = level[start:][level[start:] > level.max() - 40]
    return float(level[start : start + 10].max() - np.median(active))


# ---- pitch and spectrum -------------------------------------------------------------------------------------------


def fundamental(x: np.ndarray, sr: int, fmin: float = 50.0, fmax: float = 2000.0) -> float:
    """f0 in Hz by the YIN difference function (cumulative-mean normalised, threshold 0.1, parabolic refinement)
    on the loudest 200 ms of the sound."""
    x = _mono(x)
    n = int(0.2 * sr)
    level = frame_rms_db(x, sr, 0.2)
    seg = x[int(np.argmax(level)) * n :][:n]
    tau_max = min(int(sr / fmin), len(seg) // 2)
    w = len(seg) - tau_max
    d = np.array([np.sum((seg[:w] - seg[t : t + w]) ** 2) for t in range(tau_max)])
    cmnd = d.copy()
    cmnd[1:] = d[1:] * np.arange(1, tau_max) / np.maximum(np.cumsum(d[1:]), 1e-12)
    cmnd[0] = 1.0
    tau_min = int(sr / fmax)
    below = np.flatnonzero(cmnd[tau_min:] < 0.1)
    if len(below):
        t = tau_min + below[0]
        while t + 1 < tau_max and cmnd[t + 1] < cmnd[t]:
            t += 1
    else:
        t = tau_min + int(np.argmin(cmnd[tau_min:]))
    if 0 < t < tau_max - 1:
        a, b, c = cmnd[t - 1], cmnd[t], cmnd[t + 1]
        t = t + 0.5 * (a - c) / (a - 2 * b + c) if a - 2 * b + c else t
    return float(sr / t)


def midi(f0: float) -> float:
    return float(69 + 12 * np.log2(f0 / 440.0))


def _spectrum(x: np.ndarray, sr: int) -> tuple[np.ndarray, np.ndarray]:
    """Frequencies and power of the sound's active part (frames within 30 dB of the loudest), Hann-windowed."""
    x = _mono(x)
    level = frame_rms_db(x, sr)
    active = np.flatnonzero(level > level.max() - 30)
    n = int(FRAME * sr)
    seg = x[active[0] * n : (active[-1] + 1) * n]
    power = np.abs(np.fft.rfft(seg * np.hanning(len(seg)))) ** 2
    return np.fft.rfftfreq(len(seg), 1 / sr), power


def spectral_centroid(x: np.ndarray, sr: int) -> float:
    """The power spectrum's centre of mass in Hz."""
    freqs, power = _spectrum(x, sr)
    return float(np.sum(freqs * power) / np.sum(power))


def even_to_odd_db(x: np.ndarray, sr: int) -> float:
    """Energy of the even harmonics (2, 4, ...) against the odd ones above the fundamental (3, 5, ...), in dB, at
    the measured f0: low for a hollow, clarinet-like tone."""
    f0 = fundamental(x, sr)
    freqs, power = _spectrum(x, sr)
    bin_hz = freqs[1]

    def harmonic(k: int) -> float:
        near = np.abs(freqs - k * f0) <= max(2 * bin_hz, 0.03 * k * f0)
        return float(power[near].sum())

    top = int(min(sr / 2 * 0.9, 4000) // f0)
    even = sum(harmonic(k) for k in range(2, top + 1, 2))
    odd = sum(harmonic(k) for k in range(3, top + 1, 2))
    return float(10 * np.log10((even + 1e-20) / (odd + 1e-20)))


def modulation_depth(x: np.ndarray, sr: int, band: tuple[float, float] = (20.0, 120.0)) -> float:
    """Amplitude-modulation depth of the envelope in ``band`` (roughness): twice the strongest modulation component
    over the envelope's mean, on the active part."""
    x = _mono(x)
    level = frame_rms_db(x, sr)
    active = np.flatnonzero(level > level.max() - 20)
    n = int(FRAME * sr)
    seg = np.abs(x[(active[0] + 5) * n : (active[-1] - 4) * n])
    envelope = fftconvolve(seg, np.ones(int(sr / 400)) / int(sr / 400), mode="same")  # rectify and smooth
    spectrum = np.abs(np.fft.rfft(envelope - envelope.mean())) / len(envelope)
    freqs = np.fft.rfftfreq(len(envelope), 1 / sr)
    inside = (freqs >= band[0]) & (freqs <= band[1])
    return float(2 * spectrum[inside].max() / envelope.mean())


# ---- time ---------------------------------------------------------------------------------------------------------


def tempo_bpm(x: np.ndarray, sr: int) -> float:
    """Tempo from the median inter-onset interval of the sound's events (`onset_times`)."""
    onsets = onset_times(x, sr)
    return float(60 / np.median(np.diff(onsets))) if len(onsets) > 1 else 0.0


# ---- space --------------------------------------------------------------------------------------------------------

HEAD_RADIUS, SPEED_OF_SOUND = 0.0875, 343.0


def interaural_time_difference(x: np.ndarray, sr: int, max_itd: float = 0.001) -> float:
    """Seconds the left channel lags the right (positive: the source is to the right), by cross-correlation,
    refined by a parabola through the peak."""
    left, right = x[:, 0], x[:, 1]
    lag_max = int(max_itd * sr) + 1
    full = correlate(left, right, mode="full")
    centre = len(right) - 1
    window = full[centre - lag_max : centre + lag_max + 1]
    k = int(np.argmax(window))
    shift = float(k)
    if 0 < k < len(window) - 1:
        a, b, c = window[k - 1], window[k], window[k + 1]
        shift = k + 0.5 * (a - c) / (a - 2 * b + c) if a - 2 * b + c else k
    return (shift - lag_max) / sr


def interaural_level_difference(x: np.ndarray) -> float:
    """Right over left level in dB (positive: louder on the right)."""
    return float(10 * np.log10(np.mean(x[:, 1] ** 2) / np.mean(x[:, 0] ** 2)))


def azimuth(x: np.ndarray, sr: int) -> float:
    """Degrees to the right (negative: left) from the ITD by the Woodworth spherical-head formula, checked against
    the ILD's side (NaN when the two cues disagree)."""
    itd = interaural_time_difference(x, sr)
    grid = np.radians(np.linspace(-90, 90, 1801))
    itds = HEAD_RADIUS / SPEED_OF_SOUND * (grid + np.sin(grid))
    angle = float(np.degrees(grid[np.argmin(np.abs(itds - itd))]))
    ild = interaural_level_difference(x)
    return angle if abs(angle) < 5 or np.sign(ild) == np.sign(angle) else float("nan")


def direct_to_reverberant_db(x: np.ndarray, sr: int, direct: float = 0.0025) -> float:
    """Energy of the first ``direct`` seconds after each impulsive event against the energy of the rest of its
    decay (until the next event), in dB, averaged over the events."""
    x = _mono(x)
    onsets = onset_times(x, sr)
    ratios = []
    bounds = [*onsets, len(x) / sr]
    for start, stop in zip(bounds[:-1], bounds[1:]):
        s = int(start * sr)
        peak = s + int(np.argmax(np.abs(x[s : s + int(0.01 * sr)])))
        d = int(direct * sr)
        head = x[max(0, peak - d // 2) : peak + d // 2 + 1]
        tail = x[peak + d // 2 + 1 : int(stop * sr)]
        ratios.append(10 * np.log10(np.sum(head**2) / (np.sum(tail**2) + 1e-20)))
    return float(np.mean(ratios))


def reverberation_time(x: np.ndarray, sr: int) -> float:
    """RT60 in seconds of the first impulsive event's decay: Schroeder backward integration, a line fitted from -5
    to -25 dB (T20), extrapolated to 60 dB."""
    x = _mono(x)
    onsets = onset_times(x, sr)
    start = int(onsets[0] * sr)
    stop = int(onsets[1] * sr) if len(onsets) > 1 else len(x)
    seg = x[start:stop]
    seg = seg[int(np.argmax(np.abs(seg))) :]
    energy = np.cumsum(seg[::-1] ** 2)[::-1]
    decay = 10 * np.log10(energy / energy[0] + 1e-20)
    inside = np.flatnonzero((decay <= -5) & (decay >= -25))
    if len(inside) < 10:
        return 0.0
    slope = np.polyfit(inside / sr, decay[inside], 1)[0]
    return float(-60 / slope) if slope < 0 else float("inf")
