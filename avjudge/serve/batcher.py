"""A request batcher: items of concurrent requests share forward passes.

Items wait in one first-in-first-out queue. A batch starts when ``max_batch_size`` items wait or the oldest has
waited ``max_wait_ms``, takes up to ``max_batch_size`` items (a large request spans several batches), and is
scored in one worker thread, so the event loop keeps accepting requests meanwhile. A request's answer is ready
when all its items are. A full queue refuses new requests at once (`QueueFull`) rather than letting them wait
unboundedly, except a request larger than the whole queue, which waits for the queue to empty; on close, queued
items are scored and later requests refused (`ShuttingDown`).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from .telemetry import Telemetry


class QueueFull(Exception):
    """More items are waiting than the server holds; ask again after ``retry_after`` seconds."""

    def __init__(self, waiting: int, limit: int, retry_after: int = 1):
        super().__init__(f"{waiting} items are waiting, the most this server holds is {limit}; retry shortly")
        self.retry_after = retry_after


class ShuttingDown(Exception):
    """The server is stopping and takes no new work."""


@dataclass
class _Request:
    size: int
    future: asyncio.Future
    results: list = field(default_factory=list)
    remaining: int = 0

    def __post_init__(self):
        self.results = [None] * self.size
        self.remaining = self.size


class Batcher:
    def __init__(
        self,
        score: Callable[[Sequence], list],
        max_batch_size: int = 16,
        max_wait_ms: float = 10.0,
        max_queue: int = 1024,
        telemetry: Telemetry | None = None,
    ):
        if max_batch_size < 1 or max_queue < 1 or max_wait_ms < 0:
            raise ValueError("max_batch_size and max_queue must be at least 1, max_wait_ms at least 0")
        self.score, self.max_batch_size, self.max_wait = score, max_batch_size, max_wait_ms / 1000
        self.max_queue, self.telemetry = max_queue, telemetry or Telemetry()
        self.queue: deque[tuple[object, _Request, int, float]] = deque()  # (item, request, index, arrival)
        self.closing = False
        self._arrived: asyncio.Event | None = None
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="avjudge-score")
        self._task: asyncio.Task | None = None

    @property
    def depth(self) -> int:
        return len(self.queue)

    def start(self) -> None:
        self._arrived, self._emptied, self._oversized = asyncio.Event(), asyncio.Event(), asyncio.Lock()
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def submit(self, items: Sequence) -> list:
        """Every item's result, in order, once all are scored. A request larger than the whole queue is admitted
        when the queue is empty, one such request at a time (a trainer that sends its rollout batch in one request
        is answered, not told to retry forever); a smaller one that does not fit now is refused (`QueueFull`)."""
        if self.closing:
            raise ShuttingDown("the server is shutting down")
        if not items:
            return []
        if len(items) > self.max_queue:
            async with self._oversized:
                while self.queue:
                    self._emptied.clear()
                    await self._emptied.wait()
                return await self._enqueue(items)
        if len(self.queue) + len(items) > self.max_queue:
            raise QueueFull(len(self.queue) + len(items), self.max_queue)
        return await self._enqueue(items)

    async def _enqueue(self, items: Sequence) -> list:
        request = _Request(len(items), asyncio.get_running_loop().create_future())
        now = time.monotonic()
        self.queue.extend((item, request, k, now) for k, item in enumerate(items))
        self.telemetry.queue_depth = len(self.queue)
        self._arrived.set()
        return await request.future

    async def close(self) -> None:
        """Refuse new requests, score what is queued, then stop."""
        self.closing = True
        if self._arrived is not None:
            self._arrived.set()
        if self._task is not None:
            await self._task
        self._worker.shutdown(wait=True)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            while not self.queue:
                if self.closing:
                    return
                self._arrived.clear()
                await self._arrived.wait()
            # wait for the batch to fill, at most until the oldest item has waited max_wait
            while len(self.queue) < self.max_batch_size and not self.closing:
                left = self.queue[0][3] + self.max_wait - time.monotonic()
                if left <= 0:
                    break
                self._arrived.clear()
                try:
                    await asyncio.wait_for(self._arrived.wait(), left)
                except asyncio.TimeoutError:
                    break
            batch = [self.queue.popleft() for _ in range(min(self.max_batch_size, len(self.queue)))]
            self.telemetry.queue_depth = len(self.queue)
            if not self.queue:
                self._emptied.set()
            self.telemetry.batch(len(batch))
            if not await self._scored(loop, batch):
                # one request's items broke a batch of several requests: each request alone, so only it fails
                by_request: dict[int, list] = {}
                for entry in batch:
                    by_request.setdefault(id(entry[1]), []).append(entry)
                for entries in by_request.values():
                    await self._scored(loop, entries)

    async def _scored(self, loop, entries: list) -> bool:
        """Score ``entries`` and answer their requests. Where scoring raises: False if they are of several requests
        (to be scored apart), else their request gets the exception (a fault of the scorer itself fails its
        request, never the server)."""
        try:
            results = await loop.run_in_executor(self._worker, self.score, [entry[0] for entry in entries])
        except Exception as err:  # noqa: BLE001 - answered as said above
            if len({id(entry[1]) for entry in entries}) > 1:
                return False
            for request in {id(entry[1]): entry[1] for entry in entries}.values():
                if not request.future.done():
                    request.future.set_exception(err)
            return True
        for (_, request, index, _), outcome in zip(entries, results):
            request.results[index] = outcome
            request.remaining -= 1
            if request.remaining == 0 and not request.future.done():
                request.future.set_result(request.results)
        return True
