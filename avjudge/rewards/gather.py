"""Per-sample reward calls awaited together, scored as batches: a trainer that asks for each sample's reward in its
own coroutine (verl's reward loop gathers one per sample of the rollout) still gets the judge's batched forward
passes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from .reward import Reward, RewardBatch


class SampleGatherer:
    """Samples awaited on an event loop join a batch; a batch is scored (in a worker thread, so the loop goes on)
    when ``max_batch_size`` samples wait or the first has waited ``max_wait_ms``. Each caller gets ``answer(batch,
    k)`` of its own sample, or the batch's exception."""

    def __init__(
        self, reward: Reward, answer: Callable[[RewardBatch, int], object], max_batch_size=16, max_wait_ms=20.0
    ):
        self.reward, self.answer = reward, answer
        self.max_batch_size, self.max_wait = max_batch_size, max_wait_ms / 1000
        self._waiting: dict[asyncio.AbstractEventLoop, list] = {}  # a trainer may run several loops
        self._timers: dict[asyncio.AbstractEventLoop, asyncio.TimerHandle] = {}

    async def score(self, sample: dict):
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        waiting = self._waiting.setdefault(loop, [])
        waiting.append((sample, future))
        if len(waiting) >= self.max_batch_size:
            self._flush(loop)
        elif loop not in self._timers:
            self._timers[loop] = loop.call_later(self.max_wait, self._flush, loop)
        return await future

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        timer = self._timers.pop(loop, None)
        if timer is not None:
            timer.cancel()
        batch = self._waiting.pop(loop, [])
        if not batch:
            return
        scored = loop.run_in_executor(None, self.reward.score, [s for s, _ in batch])

        def settle(done: asyncio.Future) -> None:
            for k, (_, future) in enumerate(batch):
                if future.done():  # its caller was cancelled
                    continue
                if done.exception() is not None:
                    future.set_exception(done.exception())
                else:
                    future.set_result(self.answer(done.result(), k))

        scored.add_done_callback(settle)
