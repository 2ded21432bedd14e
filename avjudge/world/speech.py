"""Speech from espeak-ng, when it is installed."""

from __future__ import annotations

import io
import shutil
import subprocess
import wave

import numpy as np

from ..media import resample
from . import vocab


def espeak_available() -> bool:
    return shutil.which("espeak-ng") is not None


def synthesize(text: str, voice: str, sample_rate: int, words_per_minute: int = 160) -> np.ndarray:
    """Mono float32 speech at ``sample_rate``; ``voice`` is a key of vocab.VOICES."""
    if not espeak_available():
        raise RuntimeError("espeak-ng is not installed (apt-get install espeak-ng); make the world with speech off")
    out = subprocess.run(
        ["espeak-ng", "-v", vocab.VOICES[voice], "-s", str(words_per_minute), "--stdout", text],
        check=True,
        capture_output=True,
    ).stdout
    with wave.open(io.BytesIO(out)) as w:
        rate = w.getframerate()
        pcm = np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float32) / 32768.0
    return resample(pcm[None, :], rate, sample_rate)[0]
