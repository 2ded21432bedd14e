"""How long each stage of a clip job kept busy in this process: decoding (in the thread that works a chunk ahead)
and scoring. The local engine overlaps the two, so a job takes about as long as its busier stage: the one that
bounds it, which the job's summary and progress bar name (a model that waits for decoding wants more decoding
workers or processes; decoding that waits for the model, a faster model)."""

from __future__ import annotations

import threading
import time
from typing import Callable

from .chunks import ClipJob, Process

STAGES = ("decode", "score")


class StageClock:
    """Busy seconds per stage of the `ClipJob`s it wraps."""

    def __init__(self):
        self.busy = dict.fromkeys(STAGES, 0.0)
        self._lock = threading.Lock()

    def _timed(self, stage: str, fn: Process) -> Process:
        def run(chunk: list[dict]) -> list[dict]:
            start = time.perf_counter()
            try:
                return fn(chunk)
            finally:
                with self._lock:
                    self.busy[stage] += time.perf_counter() - start

        return run

    def wrap(self, job: ClipJob) -> ClipJob:
        """``job`` with its stages timed (in this process: a job that travels to other processes is not wrapped)."""
        return ClipJob(self._timed("decode", job.decode), self._timed("score", job.score))

    @property
    def bound_by(self) -> str:
        return max(STAGES, key=self.busy.__getitem__)

    def postfix(self) -> str:
        """For a progress bar: each stage's busy seconds, the busier one marked."""
        bound = self.bound_by
        return ", ".join(f"{s} {self.busy[s]:.0f}s" + ("*" if s == bound else "") for s in STAGES)

    def report(self) -> dict:
        """For a job's summary: ``{"decode_busy_s", "score_busy_s", "bound_by"}``."""
        return {f"{s}_busy_s": round(self.busy[s], 3) for s in STAGES} | {"bound_by": self.bound_by}


def clocked(process: Callable, scores_here: bool) -> tuple[Callable, StageClock | None]:
    """``process`` with its stages timed where it is a `ClipJob` run in this process, and the clock (else None)."""
    if not (scores_here and isinstance(process, ClipJob)):
        return process, None
    clock = StageClock()
    return clock.wrap(process), clock
