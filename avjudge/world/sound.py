"""Synthesise a scene's audio: event notes of each object's timbre, ambience, optional speech."""

from __future__ import annotations

import numpy as np

from ..perturb.sources import ambience
from .scene import Scene

NOTE_LEVEL = 0.3
SPEECH_PEAK = 0.5


def envelope(n: int, sample_rate: int, attack_s: float = 0.003, release_s: float = 0.01) -> np.ndarray:
    """Linear attack, exponential decay over the note, linear release to exactly zero."""
    t = np.arange(n) / sample_rate
    env = np.exp(-t / max(n / sample_rate / 2.5, 1e-3))
    a = min(int(attack_s * sample_rate), n)
    env[:a] *= np.linspace(0.0, 1.0, a, endpoint=False)
    r = min(int(release_s * sample_rate), n)
    env[n - r :] *= np.linspace(1.0, 0.0, r)
    return env


def harmonic_tone(f0: float, n: int, sample_rate: int, amplitudes, decays=None) -> np.ndarray:
    """Sum of harmonics k*f0 below Nyquist with amplitude a_k (and per-harmonic decay rates)."""
    t = np.arange(n) / sample_rate
    out = np.zeros(n)
    for k, amp in enumerate(amplitudes, start=1):
        if k * f0 >= sample_rate / 2 or amp == 0:
            continue
        part = amp * np.sin(2 * np.pi * k * f0 * t)
        if decays is not None:
            part *= np.exp(-decays[k - 1] * t)
        out += part
    return out / max(np.abs(out).max(), 1e-9)


def note(timbre: str, f0: float, duration: float, sample_rate: int, rng: np.random.Generator) -> np.ndarray:
    n = int(round(duration * sample_rate))
    harmonics = max(int(sample_rate / 2 / max(f0, 1.0)), 1)
    ks = np.arange(1, harmonics + 1)
    if timbre == "sine":
        wave = harmonic_tone(f0, n, sample_rate, [1.0])
    elif timbre == "square":
        wave = harmonic_tone(f0, n, sample_rate, np.where(ks % 2 == 1, 1.0 / ks, 0.0))
    elif timbre == "saw":
        wave = harmonic_tone(f0, n, sample_rate, 1.0 / ks)
    elif timbre == "pluck":
        wave = harmonic_tone(f0, n, sample_rate, 1.0 / ks, decays=4.0 * ks)
    elif timbre == "noise_burst":
        wave = rng.standard_normal(n)
        wave /= np.abs(wave).max()
    else:
        raise ValueError(f"unknown timbre {timbre!r}")
    return (NOTE_LEVEL * wave * envelope(n, sample_rate)).astype(np.float32)


def render_audio(scene: Scene, speech: np.ndarray | None = None) -> np.ndarray:
    """(1, N) float32 mono track of the scene; ``speech`` is a mono waveform at the scene's rate."""
    sr = scene.sample_rate
    n = int(round(scene.duration * sr))
    rng = np.random.default_rng([scene.seed, scene.index, 7])
    mix = ambience(scene.ambience, n, sr, rng).astype(np.float64)
    for ev in scene.events:
        sound = scene.objects[ev.object].sound
        if sound is None:
            continue
        x = note(sound["timbre"], sound["f0"], ev.duration, sr, rng)
        i = int(round(ev.time * sr))
        mix[i : i + len(x)] += x[: max(0, n - i)]
    if speech is not None and scene.speech is not None:
        i = int(round(scene.speech.start * sr))
        voice = SPEECH_PEAK * speech / max(np.abs(speech).max(), 1e-9)
        mix[i : i + len(voice)] += voice[: max(0, n - i)]
    peak = np.abs(mix).max()
    if peak > 0.95:
        mix *= 0.95 / peak
    return mix.astype(np.float32)[None, :]
