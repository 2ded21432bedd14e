"""The local engine: a job's chunks one after another in this process."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import ClassVar, Iterator

from ..ahead import map_ahead
from ..errors import is_run_fault
from .chunks import ClipJob, Process, process_rows


def _decoded(job: ClipJob, chunk: list[dict]) -> list[dict] | None:
    """The chunk decoded, or None where decoding raised for it (the chunk then goes through `process_rows` whole,
    which finds the item at fault); a fault of the run raises."""
    try:
        return job.decode(chunk)
    except Exception as err:
        if is_run_fault(err):
            raise
        return None


@dataclass(frozen=True)
class LocalEngine:
    """Chunks one after another in this process. A `ClipJob`'s next chunk is decoded, in a thread of its own, while
    this one scores: a model on a GPU does not wait for the CPU between chunks (one more chunk is held decoded)."""

    name: ClassVar[str] = "local"
    scores_here: ClassVar[bool] = True

    def run(self, todo: list[dict], process: Process, chunk_size: int) -> Iterator[list[dict]]:
        chunks = [todo[i : i + chunk_size] for i in range(0, len(todo), chunk_size)]
        if not isinstance(process, ClipJob):
            for chunk in chunks:
                yield process_rows(process, chunk)
            return
        for chunk, decoded in zip(chunks, map_ahead(partial(_decoded, process), chunks), strict=True):
            yield process_rows(process, chunk) if decoded is None else process_rows(process.score, decoded)
