"""Decoding in other processes. Decoding needs the GIL for nearly all of its work: beside one thread running Python
a decoding thread kept 0.06× its rate (`benchmarks/decode_gil.py`), and a model's forward pass on a GPU is such a
thread (its kernel launches). In processes of their own the two overlap.

One pool per size, shared by the process: started by ``spawn`` (safe beside CUDA and threads) when first asked for,
shut down at exit. What a decoding process returns comes back with its clips through shared memory
(`avjudge.media.shared`), not through the pool's pipe. A script that starts one at import time needs
``if __name__ == "__main__":``, as with any ``spawn`` pool.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
import warnings
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import lru_cache
from multiprocessing import get_context

from ..errors import AvjudgeError
from . import threads as ffmpeg_threads
from .shared import received, shared, sweep_blocks

_decoding_process = False  # set in the pool's processes: what runs there decodes in place, it starts no pool
PARENT_CHECK_S = 0.2  # how often a decoding process looks whether the process that started it still runs


class DecoderDied(AvjudgeError, BrokenProcessPool):
    """A decoding process died mid-run (killed, most often for memory): the run stops, what it wrote stays, and the
    next call starts a new pool. A `BrokenExecutor`, so it stops a run rather than fail one clip."""

    def __init__(self):
        super().__init__(
            "a decoding process died (killed, most often for memory): the run stopped and what it wrote stays; rerun "
            "the same command to resume, with fewer --decode-processes if memory is short"
        )


def _mark_decoding_process(parent: int) -> None:
    global _decoding_process
    _decoding_process = True
    ffmpeg_threads.decoder = 1  # the pool's processes are the parallelism: each decodes on one core
    # a process whose starter was killed (kill -9, or SIGTERM before its exit handlers ran) is adopted by another:
    # it ends then, instead of decoding on, holding the job's output open and its shared blocks
    threading.Thread(target=_end_with, args=(parent,), daemon=True, name="parent-watch").start()


def _end_with(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_S)
    os._exit(1)


def machine_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def decoding_processes(asked: int | None = None, model_holds_interpreter: bool = True) -> int:
    """The decoding processes a job runs with: ``asked``; by default, where its model holds Python's lock while it
    works (a model on a GPU launching kernels), the cores the model's process leaves (one at least), else none (a
    model on the CPU lets the lock go in its kernels: threads of its process decode meanwhile, with no processes to
    start)."""
    if asked is not None:
        if asked > machine_cores():  # more would only share the cores, each holding its clips in memory
            warnings.warn(
                f"--decode-processes {asked} is more than this machine's {machine_cores()} cores: using "
                f"{machine_cores()}",
                stacklevel=2,
            )
            return machine_cores()
        return asked
    return max(1, machine_cores() - 1) if model_holds_interpreter else 0


@lru_cache(maxsize=None)
def decoding_pool(processes: int) -> ProcessPoolExecutor:
    """The process-wide pool of ``processes`` decoding processes."""
    if processes < 1:
        raise ValueError(f"a decoding pool needs at least one process, not {processes}")
    sweep_blocks()  # blocks a killed run left behind
    pool = ProcessPoolExecutor(
        processes, mp_context=get_context("spawn"), initializer=_mark_decoding_process, initargs=(os.getpid(),)
    )
    atexit.register(pool.shutdown, wait=False, cancel_futures=True)
    return pool


def _handed_back(fn, *args):
    """In a decoding process: ``fn(*args)`` with its clips put in shared memory for the caller."""
    return shared(fn(*args))


def submit_decoding(processes: int, fn, *args) -> Future:
    """``fn(*args)`` started in one of the process-wide pool's ``processes`` processes; its future's result is read
    back with `collect`. A pool whose process died (out of memory) is replaced for the next call."""
    pool = decoding_pool(processes)
    try:
        return pool.submit(_handed_back, fn, *args)
    except BrokenProcessPool:
        decoding_pool.cache_clear()
        raise DecoderDied() from None


def collect(future: Future):
    """The result of a `submit_decoding` future, its clips read back from shared memory."""
    try:
        return received(future.result())
    except BrokenProcessPool:
        decoding_pool.cache_clear()
        raise DecoderDied() from None


def in_decoding_process(processes: int, fn, *args):
    """``fn(*args)`` in one of the process-wide pool's ``processes`` processes, or here where there are none (0) or
    this is a decoding process already."""
    if processes <= 0 or _decoding_process:
        return fn(*args)
    return collect(submit_decoding(processes, fn, *args))
