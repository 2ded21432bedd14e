"""A decoded clip handed from a decoding process to the model's process through shared memory.

Through a pipe, a clip of a few megabytes arrives in 64 KiB reads, and each read gives up Python's lock and waits to
get it back: beside a model that holds the lock (a GPU model launching kernels) each wait is up to a switch interval
(5 ms). Here the decoding process writes the clip's arrays into one shared block and sends only its name and layout;
the model's process copies them out in one step and removes the block. Beside such a model, a world clip decoded in
a process and handed back took 0.204 s through the pipe, 0.094 s this way (`benchmarks/pipeline_overlap.py`).

A block that is never received (the receiving process died) is removed by `multiprocessing`'s resource tracker
when the process that started the pool exits.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from multiprocessing import shared_memory

import numpy as np

from .clip import MediaClip

ALIGN = 64  # each array starts on a cache line


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
    block = shared_memory.SharedMemory(create=True, size=max(size, 1))
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
