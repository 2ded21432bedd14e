"""The local engine: a job's chunks one after another in this process."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Iterator

from .chunks import Process, process_rows


@dataclass(frozen=True)
class LocalEngine:
    """Chunks one after another in this process."""

    name: ClassVar[str] = "local"
    scores_here: ClassVar[bool] = True

    def run(self, todo: list[dict], process: Process, chunk_size: int) -> Iterator[list[dict]]:
        for i in range(0, len(todo), chunk_size):
            yield process_rows(process, todo[i : i + chunk_size])
