"""A decoded clip handed from a decoding process to the model's process through shared memory.

Through a pipe, a clip of a few megabytes arrives in 64 KiB reads, and each read gives up Python's lock and waits to
get it back: beside a model that holds the lock (a GPU model launching kernels) each wait is up to a switch interval
(5 ms). Here the decoding process writes the clip's arrays into one shared block and sends only its name and layout;
the model's process copies them out in one step and removes the block. Beside such a model, a world clip decoded in
a process and handed back took 0.204 s through the pipe, 0.094 s this way (`benchmarks/pipeline_overlap.py`).

Each block is named after the run's process (``avjudge_<pid>_<random>``): a block that is never received (the
receiving process died) is removed by `multiprocessing`'s resource tracker when the decoding processes end (they end
with the process that started them, `avjudge.media.processes`), and, should the tracker have been killed too, by the
next pool's start (`sweep_blocks`), which removes every avjudge block whose run no longer runs.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import secrets
from dataclasses import dataclass
from multiprocessing import shared_memory
from pathlib import Path

import numpy as np

from .clip import MediaClip

ALIGN = 64  # each array starts on a cache line
PREFIX = "avjudge_"
SHM = Path("/dev/shm")  # where Linux keeps named shared blocks


def block_name() -> str:
    """A new block's name: the run's process (the pool's starter; this process where it starts none) and a random
    part."""
    run = os.getppid() if multiprocessing.parent_process() is not None else os.getpid()
    return f"{PREFIX}{run}_{secrets.token_hex(6)}"


def sweep_blocks() -> int:
    """Remove the shared blocks of avjudge runs that no longer run; how many."""
    swept = 0
    for path in SHM.glob(f"{PREFIX}*_*") if SHM.is_dir() else ():
        run = path.name[len(PREFIX) :].split("_")[0]
        if run.isdigit() and not _running(int(run)):
            path.unlink(missing_ok=True)
            swept += 1
    return swept


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


@dataclass(frozen=True)
class SharedClip:
    """Where a `MediaClip`'s arrays wait in shared memory: the block's name, each array's (field, offset, shape,
    dtype), and the clip's other fields."""

    block: str
    layout: tuple[tuple[str, int, tuple[int, ...], str], ...]
    fields: dict


def share(clip: MediaClip) -> SharedClip:
    """``clip``'s arrays written to a new shared block (in the decoding process); `receive` reads them back."""
    arrays, fields, layout, size = {}, {}, [], 0
    for f in dataclasses.fields(clip):
        value = getattr(clip, f.name)
        if isinstance(value, np.ndarray):
            arrays[f.name] = np.ascontiguousarray(value)
            layout.append((f.name, size, value.shape, value.dtype.str))
            size += -(-value.nbytes // ALIGN) * ALIGN
        else:
            fields[f.name] = value
    block = shared_memory.SharedMemory(name=block_name(), create=True, size=max(size, 1))
    try:
        for name, offset, shape, dtype in layout:
            np.ndarray(shape, dtype, buffer=block.buf, offset=offset)[...] = arrays[name]
    finally:
        block.close()  # the block outlives this process's handle: `receive` removes it
    return SharedClip(block.name, tuple(layout), fields)


def receive(shared: SharedClip) -> MediaClip:
    """The clip `share` wrote, its arrays copied out; the block is removed."""
    block = shared_memory.SharedMemory(name=shared.block)
    try:
        arrays = {
            name: np.ndarray(shape, dtype, buffer=block.buf, offset=offset).copy()
            for name, offset, shape, dtype in shared.layout
        }
    finally:
        block.close()
        block.unlink()
    return MediaClip(**shared.fields, **arrays)


def shared(value):
    """``value`` with every `MediaClip` in it (in lists, tuples and dict values) handed to shared memory."""
    return _mapped(value, MediaClip, share)


def received(value):
    """``value`` with every `SharedClip` in it read back (`receive`)."""
    return _mapped(value, SharedClip, receive)


def _mapped(value, kind: type, fn):
    if isinstance(value, kind):
        return fn(value)
    if isinstance(value, dict):
        return {key: _mapped(v, kind, fn) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_mapped(v, kind, fn) for v in value)
    return value
