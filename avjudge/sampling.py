"""How a judge samples a clip, and the time grid that leaves it: the one place both are named.

Qwen2.5-Omni's vision tower merges ``temporal_patch`` = 2 consecutive sampled frames into one token group, so the
picture it reads moves in steps of ``temporal_patch / fps`` seconds (the *grid step*: 2 s at AVBench's 1 fps, 0.25 s
at 8 fps); its audio tokens are 40 ms apart. A mismatch in time shorter than the grid step cannot be represented at
the judge's input (`avjudge.data.perceivability` measures it per negative type). Frames cost tokens as pixels do,
(pixels / 28²) per group, so many small frames cost no more than a few large ones: sync models read 25 fps at 224 px
(Synchformer) or a 5-frame window on a mouth crop (SyncNet).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .config import ConfigError


def frame_plan(duration_s: float, fps: float, max_frames: int) -> tuple[int, float]:
    """(how many frames a judge is shown of ``duration_s`` seconds, the rate they are at): one every 1 / ``fps`` s,
    at least one, and a longer clip's spread over ``max_frames`` (its rate then falls below ``fps``)."""
    n = max(1, math.ceil(duration_s * fps - 1e-9))
    return (n, fps) if n <= max_frames else (max_frames, max_frames / duration_s)


@dataclass(frozen=True)
class Sampling:
    """What a judge is shown of a clip's picture, and how its model groups it in time.

    Attributes:
        fps: frames a second sampled from the clip.
        max_pixels: pixels per frame at most (frames are scaled down to it, aspect kept).
        max_frames: a longer clip's frames are spread over this many (its rate then falls below ``fps``).
        temporal_patch: sampled frames merged into one visual token group (Qwen2.5-Omni, Qwen3-Omni: 2).
    """

    fps: float
    max_pixels: int
    max_frames: int = 64
    temporal_patch: int = 2

    @property
    def grid_s(self) -> float:
        """Seconds one visual token group spans: the shortest step in time the picture side can show."""
        return self.temporal_patch / self.fps

    def grid_at(self, duration_s: float) -> float:
        """The grid step on a ``duration_s``-second clip: longer than `grid_s` where ``max_frames`` lowers the rate."""
        return self.temporal_patch / frame_plan(duration_s, self.fps, self.max_frames)[1]

    def frame_times(self, start: float, duration_s: float) -> list[float]:
        """The moments of the frames a judge is shown of ``duration_s`` seconds from ``start`` (`frame_plan`)."""
        n, rate = frame_plan(duration_s, self.fps, self.max_frames)
        return [start + k / rate for k in range(n)]

    def describe(self) -> str:
        return (
            f"{self.fps:g} fps, at most {self.max_pixels:,} pixels a frame, {self.temporal_patch} frames a token "
            f"group: a {self.grid_s:g} s grid"
        )


# Named samplings: ``avbench`` is the paper's (its judges read 1 fps at 480x640); ``sync`` trades pixels for frames
# where synchronisation lives: 8 fps at a sixteenth of the pixels, a 0.25 s grid for half of avbench's visual tokens
# a second (the measured table: docs/figures.md, "Frames traded for pixels"); up to 16 s at its full rate.
SAMPLINGS = {
    "avbench": Sampling(fps=1.0, max_pixels=480 * 640),
    "avbench_vt": Sampling(fps=1.0, max_pixels=360 * 420),
    "sync": Sampling(fps=8.0, max_pixels=480 * 640 // 16, max_frames=128),
}

# Each task's default sampling. The AV judge compares sound with picture in time: ``sync``. The others read what
# is shown, not when: AVBench's. Multiple-choice questions (the omni benchmarks) keep AVBench's AV sampling.
TASK_SAMPLING = {"av": "sync", "vt": "avbench_vt", "at": "avbench", "choice_av": "avbench", "choice_a": "avbench"}


def sampling(name: str) -> Sampling:
    try:
        return SAMPLINGS[name]
    except KeyError:
        raise ConfigError(f"unknown sampling {name!r}; choose one of {', '.join(sorted(SAMPLINGS))}") from None


def task_sampling(task: str) -> Sampling:
    """The sampling a judge of ``task`` is shown clips at by default."""
    return SAMPLINGS[TASK_SAMPLING[task]]
