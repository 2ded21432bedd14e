"""Progress within a chunk: a job's bar moves per clip, not per chunk. `run_job` listens while it runs a chunk in
this process; whatever scores there (the scoring core) calls `advance` as items get done. An engine that scores
elsewhere (Ray's actors) reports per chunk only."""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_listener: contextvars.ContextVar[Callable[[float], None] | None] = contextvars.ContextVar(
    "avjudge_progress", default=None
)


def advance(items: float) -> None:
    """``items`` (fractions allowed: a clip half scored) of the running chunk are done."""
    listener = _listener.get()
    if listener is not None:
        listener(items)


@contextmanager
def listening(listener: Callable[[float], None]) -> Iterator[None]:
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)
