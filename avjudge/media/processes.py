"""Decoding in other processes. Decoding needs the GIL for nearly all of its work: beside one thread running Python
a decoding thread kept 0.06× its rate (`benchmarks/decode_gil.py`), and a model's forward pass on a GPU is such a
thread (its kernel launches). In processes of their own the two overlap.

One pool per size, shared by the process: started by ``spawn`` (safe beside CUDA and threads) when first asked for,
shut down at exit. A script that starts one at import time needs ``if __name__ == "__main__":``, as with any
``spawn`` pool.
"""

from __future__ import annotations

import atexit
from concurrent.futures import ProcessPoolExecutor
from functools import lru_cache
from multiprocessing import get_context


@lru_cache(maxsize=None)
def decoding_pool(processes: int) -> ProcessPoolExecutor:
    """The process-wide pool of ``processes`` decoding processes."""
    if processes < 1:
        raise ValueError(f"a decoding pool needs at least one process, not {processes}")
    pool = ProcessPoolExecutor(processes, mp_context=get_context("spawn"))
    atexit.register(pool.shutdown, wait=False, cancel_futures=True)
    return pool


def in_decoding_process(processes: int, fn, *args):
    """``fn(*args)`` in one of the process-wide pool's ``processes`` processes, or here where there are none (0)."""
    if processes <= 0:
        return fn(*args)
    return decoding_pool(processes).submit(fn, *args).result()
