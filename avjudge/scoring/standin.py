"""A stand-in for a judge on a GPU, for tests and benchmarks on machines without one.

What a model on a GPU does to the CPU is what bounds a scoring pipeline there: its Python thread launches kernels,
holding Python's lock, for most of a forward pass (its CPU time was 759 ms of 790 ms, 96 %, in the H100 profile
`benchmarks/results/end_to_end_h100_w6.profile.txt`), and waits on the device for the rest, releasing it. The
stand-in does exactly that per clip of a batch, for set times, and reads the real judge's inputs (clips decoded by
its `DecodeNeeds`) and gives its outputs (`avjudge.judges.ScoreResult`'s numbers): with it, a pipeline's overlap is
measured honestly on a CPU.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..judges.scorer import ScoreResult
from ..media import DecodeNeeds, MediaClip
from .scorers import Outcome, judge_outcome

KERNEL_LAUNCH_SHARE = 0.96  # of a forward pass's wall time, its thread held Python's lock (H100 profile)


def hold_interpreter(seconds: float) -> None:
    """Run Python for ``seconds``: Python's lock held, as a thread launching kernels holds it (it is let go only
    at the interpreter's switch interval, as any Python thread lets it go)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@dataclass
class StandInScorer:
    """A judge that takes ``seconds_per_clip`` of a batch's time per clip: ``held`` of it holding Python's lock, the
    rest waiting with it released. Its score of a clip is a fixed function of the clip's arrays.

    Attributes:
        needs: what the judge it stands in for reads (`avjudge.judges.Judge.needs`).
        seconds_per_clip: its forward time per clip (1 / its clips per second).
        held: the share of that time it holds Python's lock.
        batch_size: clips a forward pass.
        name: the task it stands in for.
    """

    kind: ClassVar[str] = "judge"
    batched: ClassVar[bool] = True
    holds_interpreter: ClassVar[bool] = True
    needs: DecodeNeeds
    seconds_per_clip: float
    held: float = KERNEL_LAUNCH_SHARE
    batch_size: int = 8
    name: str = "av"

    def score(self, clips: Sequence[MediaClip], captions: Sequence[dict]) -> list[Outcome]:
        outcomes = []
        for start in range(0, len(clips), self.batch_size):
            batch = clips[start : start + self.batch_size]
            forward = self.seconds_per_clip * len(batch)
            hold_interpreter(forward * self.held)
            time.sleep(forward * (1 - self.held))  # the device at work: the lock is free
            outcomes += [judge_outcome(self.result(clip)) for clip in batch]
        return outcomes

    @staticmethod
    def result(clip: MediaClip) -> ScoreResult:
        """Its result for a clip, from the clip's arrays: log-odds from its frames' mean brightness and its sound's
        loudness."""
        delta = 0.0
        if clip.frames is not None:
            delta += 4.0 * (float(clip.frames.mean()) / 255.0 - 0.5)
        if clip.audio is not None:
            delta += float(np.sqrt(np.mean(np.square(clip.audio, dtype=np.float64))))
        p_yes = 1.0 / (1.0 + math.exp(-delta))
        return ScoreResult(score=p_yes, delta=delta, mass=1.0, yes_prob=p_yes, no_prob=1.0 - p_yes)
