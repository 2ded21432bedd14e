"""What runs on a chunk of a job's items, whichever engine runs it: a process function, its per-item fault rule,
and `ClipJob`, a process in two stages (decoding, then scoring) that an engine may run apart."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import is_run_fault, reason

Process = Callable[[list[dict]], list[dict]]


def process_rows(process: Process, chunk: list[dict]) -> list[dict]:
    """``process``'s records for ``chunk``. Where it raises, the items are redone one at a time and an item that
    raises alone gets a record with its ``error``: one bad clip never takes its chunk down (nor, on Ray, its block).
    A fault of the run (`avjudge.errors.is_run_fault`: a bug, running out of memory, a server that did not answer)
    stops the run instead: a rerun scores those clips."""
    try:
        records = process(chunk)
    except Exception as err:
        if is_run_fault(err):
            raise
        if len(chunk) == 1:
            return [{"id": chunk[0]["id"], "error": reason(err)}]
        return [record for item in chunk for record in process_rows(process, [item])]
    if [r["id"] for r in records] != [item["id"] for item in chunk]:
        raise RuntimeError("a job's process function must return one record per item, in order")
    return records


@dataclass(frozen=True)
class ClipJob:
    """A job's process in two stages: ``decode`` each item's media (no model), then ``score`` the chunk.

    Called on a chunk, it runs both here. The Ray engine runs them apart: decoding in CPU tasks (only ``decode``
    travels to them), scoring in the actors that hold the models.

    Attributes:
        decode: items -> the same items with their ``clip`` (`avjudge.scoring.Decoder`: a `MediaClip`, or why it
            could not be decoded); it holds no model.
        score: decoded items -> one record each.
        decode_apart: ``score`` keeps a Python thread of its process busy (a model on a GPU launching kernels), so
            clips are best decoded in processes of their own (`avjudge.media.processes.decoding_processes`).
    """

    decode: Process
    score: Process
    decode_apart: bool = False

    def __call__(self, chunk: list[dict]) -> list[dict]:
        return self.score(self.decode(chunk))
