"""Ordered maps that work ahead of their consumer in threads: the CPU prepares what comes next while the consumer
(a model's forward pass, a chunk's scoring) uses what it holds."""

from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, TypeVar

In = TypeVar("In")
Out = TypeVar("Out")


def map_ahead(fn: Callable[[In], Out], items: Iterable[In], threads: int = 1, ahead: int = 1) -> Iterator[Out]:
    """``fn`` over ``items``, in order, in ``threads`` threads, at most ``ahead`` results computed beyond the one the
    consumer holds (so a long iterable never sits in memory at once). An exception comes out where its item would."""
    with ThreadPoolExecutor(threads) as pool:
        pending: deque = deque()
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) > ahead:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
