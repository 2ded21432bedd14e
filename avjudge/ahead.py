"""Ordered maps that work ahead of their consumer in threads: the CPU prepares what comes next while the consumer
(a model's forward pass, a chunk's scoring) uses what it holds."""

from __future__ import annotations

from collections import deque
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import nullcontext
from typing import Callable, Iterable, Iterator, TypeVar

In = TypeVar("In")
Out = TypeVar("Out")


def map_ahead(
    fn: Callable[[In], Out], items: Iterable[In], threads: int = 1, ahead: int = 1, executor: Executor | None = None
) -> Iterator[Out]:
    """``fn`` over ``items``, in order, in ``threads`` threads (or ``executor``'s workers, a process pool), at most
    ``ahead`` results computed beyond the one the consumer holds (so a long iterable never sits in memory at once,
    as an executor's own ``map`` would hold it). An exception comes out where its item would."""
    with ThreadPoolExecutor(threads) if executor is None else nullcontext(executor) as pool:
        pending: deque = deque()
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) > ahead:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
