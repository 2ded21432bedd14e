"""Sound sources that negatives mix in: an extra voice (espeak-ng) and place ambiences.

They live with the negatives that use them; the synthetic world renders its own speech and
ambience from the same functions, so a swapped-in ambience sounds like the world's own.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import wave

import numpy as np
from scipy.signal import butter, sosfilt

from ..media import resample

VOICES: dict[str, str] = {"male": "en+m3", "female": "en+f3"}
AMBIENCE_LEVEL = {"none": 0.0, "hum": 0.05, "babble": 0.06, "rain": 0.05, "wind": 0.06}


def espeak_available() -> bool:
    return shutil.which("espeak-ng") is not None


def synthesize(text: str, voice: str, sample_rate: int, words_per_minute: int = 160) -> np.ndarray:
    """Mono float32 speech at ``sample_rate``; ``voice`` is a key of VOICES."""
    if not espeak_available():
        raise RuntimeError("espeak-ng is not installed (apt-get install espeak-ng); make the world with speech off")
    out = subprocess.run(
        ["espeak-ng", "-v", VOICES[voice], "-s", str(words_per_minute), "--stdout", text],
        check=True,
        capture_output=True,
    ).stdout
    with wave.open(io.BytesIO(out)) as w:
        rate = w.getframerate()
        pcm = np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float32) / 32768.0
    return resample(pcm[None, :], rate, sample_rate)[0]


def ambience(kind: str, n: int, sample_rate: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "none":
        return np.zeros(n, np.float32)
    t = np.arange(n) / sample_rate
    if kind == "hum":
        x = sum(np.sin(2 * np.pi * 50 * k * t) / k for k in (1, 2, 3, 4))
    elif kind == "rain":
        x = sosfilt(
            butter(4, min(4000, 0.45 * sample_rate), "low", fs=sample_rate, output="sos"), rng.standard_normal(n)
        )
        drops = rng.random(n) < 30 / sample_rate  # ~30 droplets a second
        x = x + sosfilt(
            butter(2, [1500, min(6000, 0.45 * sample_rate)], "band", fs=sample_rate, output="sos"), drops * 8.0
        )
    elif kind == "wind":
        x = sosfilt(butter(2, 400, "low", fs=sample_rate, output="sos"), rng.standard_normal(n))
        x *= 0.6 + 0.4 * np.sin(2 * np.pi * 0.3 * t + rng.uniform(0, 2 * np.pi))
    elif kind == "babble":
        # speech-shaped noise with a syllabic (~4 Hz) envelope per simulated talker
        x = np.zeros(n)
        shaped = butter(2, [200, min(3000, 0.45 * sample_rate)], "band", fs=sample_rate, output="sos")
        for _ in range(5):
            rate = rng.uniform(3.0, 5.0)
            syll = np.clip(np.sin(2 * np.pi * rate * t + rng.uniform(0, 2 * np.pi)), 0, None) ** 2
            x += sosfilt(shaped, rng.standard_normal(n)) * syll
    else:
        raise ValueError(f"unknown ambience {kind!r}")
    x = np.asarray(x, np.float64)
    return (AMBIENCE_LEVEL[kind] * x / max(np.abs(x).max(), 1e-9)).astype(np.float32)
