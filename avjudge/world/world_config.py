"""The world's configuration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..config import ConfigError
from ..perturb import sources as tts

MAX_FPS = 120.0
MIN_SAMPLE_RATE, MAX_SAMPLE_RATE = 8000, 192000
MAX_FRAMES_GIB = 4.0


@dataclass(frozen=True)
class WorldConfig:
    n: int = 20
    seed: int = 0
    duration: float = 8.0
    max_duration: float | None = None  # durations drawn uniformly from [duration, max_duration]
    width: int = 256
    height: int = 256
    fps: float = 25.0
    sample_rate: int = 16000
    min_objects: int = 1
    max_objects: int = 4
    sounding_prob: float = 0.8
    ambience_prob: float = 0.6
    speech: Literal["auto", "on", "off"] = "auto"  # auto: speak when espeak-ng is installed
    speech_prob: float = 0.5

    def __post_init__(self) -> None:
        if self.n < 1 or self.seed < 0:
            raise ConfigError(f"n must be at least 1 and seed 0 or more, got {self.n} and {self.seed}")
        if not 1.0 <= self.fps <= MAX_FPS or not MIN_SAMPLE_RATE <= self.sample_rate <= MAX_SAMPLE_RATE:
            raise ConfigError(
                f"fps must be within 1..{MAX_FPS:g} and sample_rate within {MIN_SAMPLE_RATE}..{MAX_SAMPLE_RATE} Hz, "
                f"got {self.fps} and {self.sample_rate}"
            )
        shares = {"sounding_prob": self.sounding_prob, "ambience_prob": self.ambience_prob,
                  "speech_prob": self.speech_prob}  # fmt: skip
        outside = {name: share for name, share in shares.items() if not 0.0 <= share <= 1.0}
        if outside:
            raise ConfigError(f"probabilities are shares within [0, 1], got {outside}")
        lo = self.duration
        hi = self.max_duration if self.max_duration is not None else lo
        if not 1.0 <= lo <= hi <= 60.0:
            raise ConfigError(f"durations must satisfy 1 <= duration <= max_duration <= 60, got {lo}..{hi}")
        if self.width % 2 or self.height % 2 or min(self.width, self.height) < 32:
            raise ConfigError(
                f"size must be even and at least 32x32 (H.264 needs even sizes), got {self.width}x{self.height}"
            )
        if not 1 <= self.min_objects <= self.max_objects <= 4:
            raise ConfigError("objects per clip must satisfy 1 <= min_objects <= max_objects <= 4")
        frames_gib = hi * self.fps * self.width * self.height * 3 / 2**30
        if frames_gib > MAX_FRAMES_GIB:  # a clip's frames are rendered in memory before they are encoded
            raise ConfigError(
                f"a {hi:g} s clip of {self.width}x{self.height} at {self.fps:g} fps holds {frames_gib:.1f} GiB of "
                f"frames while it is rendered, over {MAX_FRAMES_GIB:g} GiB: shorten it, or lower its size or fps"
            )
        if self.speech == "on" and not tts.espeak_available():
            raise ConfigError("speech=on needs espeak-ng (apt-get install espeak-ng); or use speech=off")

    @property
    def effective_speech_prob(self) -> float:
        if self.speech == "off" or (self.speech == "auto" and not tts.espeak_available()):
            return 0.0
        return self.speech_prob
