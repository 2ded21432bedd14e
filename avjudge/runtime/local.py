"""The local engine: a job's chunks scored one after another in this process, a `ClipJob`'s clips decoded ahead of
them.

Where the model holds Python's lock while it works (one on a GPU launching kernels), the model's process only
scores: each clip is decoded in a decoding process (`avjudge.media.processes`, by default one per core the model's
process leaves), its frames already at the size the judge keeps, and handed back through shared memory
(`avjudge.media.shared`). Elsewhere a thread decodes. At most ``ahead`` chunks are decoded beyond the one being
scored (a bounded queue: a long job never sits in memory), so a job runs at the pace of its slower stage, not at
their sum (`benchmarks/pipeline_overlap.py`).
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from typing import ClassVar, Iterator

from ..ahead import map_ahead
from ..errors import is_run_fault
from ..media.processes import collect, decoding_processes, submit_decoding
from .chunks import ClipJob, Process, process_rows
from .stages import StageClock


@dataclass(frozen=True)
class LocalEngine:
    """Chunks one after another in this process; a `ClipJob`'s next chunks decoded meanwhile.

    Attributes:
        decode_processes: processes that decode a `ClipJob`'s clips (None: where its model holds Python's lock, as
            one on a GPU does, one per core this process leaves, else none; 0: a thread of this process decodes).
        ahead: chunks decoded beyond the one being scored.
    """

    name: ClassVar[str] = "local"
    scores_here: ClassVar[bool] = True
    decode_processes: int | None = None
    ahead: int = 2

    def __post_init__(self):
        if self.ahead < 1 or (self.decode_processes is not None and self.decode_processes < 0):
            raise ValueError("a local engine decodes at least one chunk ahead, in 0 or more processes")

    def run(
        self, todo: list[dict], process: Process, chunk_size: int, clock: StageClock | None = None
    ) -> Iterator[list[dict]]:
        chunks = [todo[i : i + chunk_size] for i in range(0, len(todo), chunk_size)]
        if not isinstance(process, ClipJob):
            for chunk in chunks:
                yield process_rows(process, chunk)
            return
        clock = clock or StageClock()
        processes = decoding_processes(self.decode_processes, process.decode_apart)
        decoded = (
            _decoded_in_processes(process.decode, chunks, processes, self.ahead, clock)
            if processes
            else map_ahead(partial(_decoded_here, process.decode, clock), chunks, ahead=self.ahead)
        )
        for chunk, clips in zip(chunks, decoded, strict=True):
            with clock.timing("score"):
                # a chunk whose decoding raised goes through `process_rows` whole, which finds the item at fault
                records = process_rows(process, chunk) if clips is None else process_rows(process.score, clips)
            yield records


def _decoded_here(decode: Process, clock: StageClock, chunk: list[dict]) -> list[dict] | None:
    """The chunk decoded in this process, or None where decoding raised for it; a fault of the run raises."""
    with clock.timing("decode"):
        try:
            return decode(chunk)
        except Exception as err:
            if is_run_fault(err):
                raise
            return None


def _decoded_in_processes(
    decode: Process, chunks: list[list[dict]], processes: int, ahead: int, clock: StageClock
) -> Iterator[list[dict] | None]:
    """Each chunk decoded, a clip per task in the decoding processes, at most ``ahead`` chunks beyond the one the
    consumer holds; None for a chunk where decoding raised."""
    pending: deque[list[Future]] = deque()

    def hand_over(chunk: list[dict]) -> list[Future]:
        futures = []
        for item in chunk:
            future = submit_decoding(processes, decode, [item])
            clock.begin("decode")  # ended by the callback, at once where the future is done already
            future.add_done_callback(lambda _: clock.end("decode"))
            futures.append(future)
        return futures

    try:
        for chunk in chunks:
            pending.append(hand_over(chunk))
            if len(pending) > ahead:
                yield _gathered(pending.popleft())
        while pending:
            yield _gathered(pending.popleft())
    finally:  # the consumer stopped early: what was handed over is not decoded, what was decoded is let go
        for futures in pending:
            _gathered(futures, cancel=True)


def _gathered(futures: list[Future], cancel: bool = False) -> list[dict] | None:
    """A chunk's decoded items from their futures (every one read back, so no shared block is left), or None where
    decoding raised for one; a fault of the run raises. ``cancel``: the items not started are not decoded."""
    items, failure = [], None
    for future in futures:
        if cancel and future.cancel():
            continue
        try:
            items += collect(future)
        except Exception as err:
            failure = err if failure is None or is_run_fault(err) else failure
    if failure is not None and is_run_fault(failure) and not cancel:
        raise failure
    return None if failure is not None else items
