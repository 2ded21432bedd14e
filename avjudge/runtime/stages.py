"""How long each stage of a clip job kept busy in this run: decoding (in the decoding processes, or a thread, working
chunks ahead) and scoring. The local engine overlaps the two, so a job takes about as long as its busier stage: the
one that bounds it, which the job's summary and progress bar name (a model that waits for decoding wants more
decoding processes; decoding that waits for the model, a faster model).

A stage is busy while it has work in hand: decoding from a chunk's handing to the decoding processes until its last
clip is back, scoring while a chunk is scored. Several chunks decoding at once count once, so a stage's busy time is
never more than the run's wall time."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Iterator

STAGES = ("decode", "score")


class StageClock:
    """Busy seconds per stage: the time during which at least one piece of work of the stage was under way."""

    def __init__(self):
        self.busy = dict.fromkeys(STAGES, 0.0)
        self._active = dict.fromkeys(STAGES, 0)
        self._since = dict.fromkeys(STAGES, 0.0)
        self._lock = threading.Lock()

    def begin(self, stage: str) -> None:
        """One more piece of ``stage``'s work is under way (from any thread)."""
        with self._lock:
            if self._active[stage] == 0:
                self._since[stage] = time.perf_counter()
            self._active[stage] += 1

    def end(self, stage: str) -> None:
        """A piece of ``stage``'s work `begin` counted is done."""
        with self._lock:
            self._active[stage] -= 1
            if self._active[stage] == 0:
                self.busy[stage] += time.perf_counter() - self._since[stage]

    @contextmanager
    def timing(self, stage: str) -> Iterator[None]:
        self.begin(stage)
        try:
            yield
        finally:
            self.end(stage)

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
