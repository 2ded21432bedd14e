"""A stopped job cleans up: its decoding processes end with it (they watch the process that started them), its
output is released, no shared block of it stays (the tracker removes them, else the next pool's start sweeps them),
and a decoding process that dies stops the run with one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

from avjudge.media import decode
from avjudge.media.processes import (
    DecoderDied,
    collect,
    decoding_pool,
    decoding_processes,
    machine_cores,
    submit_decoding,
)
from avjudge.media.shared import PREFIX, SHM, sweep_blocks

JOB = """
import json, sys, time
from avjudge.media import decode
from avjudge.media.processes import decoding_pool, submit_decoding

if __name__ == "__main__":
    futures = [submit_decoding(2, decode, sys.argv[1]) for _ in range(6)]  # decoded, never read back
    for future in futures:
        future.exception()
    print(json.dumps(sorted(decoding_pool(2)._processes)), flush=True)
    time.sleep(600)
"""


def _gone(pid: int) -> bool:
    """Whether ``pid`` no longer runs (a zombie waiting for a parent that reaps nothing counts as gone)."""
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, IndexError):
        return True


def _blocks(pid: int) -> list[Path]:
    return sorted(SHM.glob(f"{PREFIX}{pid}_*"))


@pytest.mark.skipif(not SHM.is_dir(), reason="Linux's /dev/shm")
@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_job_leaves_no_decoding_process_output_or_shared_block(stop, small_world, tmp_path):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(JOB))
    clip = small_world / "clips" / sorted(os.listdir(small_world / "clips"))[0]
    job = subprocess.Popen([sys.executable, str(script), str(clip)], stdout=subprocess.PIPE, text=True)
    workers = [int(pid) for pid in job.stdout.readline().strip("[]\n").split(",")]
    assert len(workers) == 2 and len(_blocks(job.pid)) == 6  # the clips wait in blocks named after the run
    job.send_signal(stop)
    job.wait(10)
    deadline = time.monotonic() + 5
    while not all(_gone(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(_gone(pid) for pid in workers), "a decoding process outlived its job"
    assert job.stdout.read() == ""  # the job's output is released: a reader gets its end, not a hang
    sweep_blocks()  # what the next run's pool does first, should the tracker have gone too
    assert not _blocks(job.pid)


def test_a_decoding_process_that_dies_stops_the_run_with_one_line(small_world):
    future = submit_decoding(1, os._exit, 3)  # a decoding process killed mid-task
    with pytest.raises(DecoderDied, match="a decoding process died") as caught:
        collect(future)
    assert isinstance(caught.value, Exception) and "\n" not in str(caught.value)
    clip = small_world / "clips" / sorted(os.listdir(small_world / "clips"))[0]
    assert collect(submit_decoding(1, decode, clip)).duration > 0  # the next call gets a new pool
    decoding_pool(1).shutdown()
    decoding_pool.cache_clear()


def test_decoding_processes_are_capped_at_the_cores():
    with pytest.warns(UserWarning, match="more than this machine's"):
        assert decoding_processes(64) == machine_cores()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert decoding_processes(1) == 1
