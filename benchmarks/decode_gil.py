"""How much of a judge's decode needs Python's GIL: decode throughput alone vs beside a thread that holds it.

On an H100 the real-size AV judge's forward pass keeps its Python thread busy launching kernels for nearly all of
its wall time (759 ms of CPU in 790 ms a batch: `benchmarks/results/end_to_end_h100_w6.profile.txt`), and end to
end the clips went through at about half the rate of either the decode or the forward alone. If decoding needs the
GIL, the two cannot overlap in one process. Here ``--threads`` threads decode what the AV judge reads of 8 s 720p
clips (frames at 1 fps, audio at 16 kHz mono), alone and then beside one thread running pure Python (a stand-in for
the forward's launches), with a core to spare for it: a decode free of the GIL would not slow down. Then the same
with the decoding in as many processes (`JudgeSettings.decode_processes`), each with its own GIL.

    python benchmarks/decode_gil.py [--threads 1] [--clips 4] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from decode_groups import READ  # noqa: E402
from real_size_judges import FILE_FPS, FILE_RATE, panning_clip  # noqa: E402

from avjudge.media import decode, decoding_pool, encode_video  # noqa: E402


def read(path: Path) -> None:
    decode(path, **READ)  # the clip stays in the worker: only the decoding is measured


def decode_rate(pool: Executor, paths: list[Path], rounds: int) -> float:
    work = paths * rounds
    start = time.perf_counter()
    list(pool.map(read, work))
    return len(work) / (time.perf_counter() - start)


def alone_and_beside(pool: Executor, paths: list[Path], rounds: int) -> tuple[float, float]:
    """Clips/s of ``pool`` decoding alone, then beside a thread of this process that holds the GIL."""
    list(pool.map(read, paths[:1]))  # warm-up: a process's imports
    alone = decode_rate(pool, paths, rounds)
    stop = threading.Event()
    hog = threading.Thread(target=hold_the_gil, args=(stop,))
    hog.start()
    try:
        return alone, decode_rate(pool, paths, rounds)
    finally:
        stop.set()
        hog.join()


def hold_the_gil(stop: threading.Event) -> None:
    while not stop.is_set():
        sum(range(10_000))  # bytecode only: the GIL is held throughout


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=1, help="decoding threads (leave a core for the Python thread)")
    p.add_argument("--clips", type=int, default=4)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    cores = len(os.sched_getaffinity(0))
    if args.threads + 1 > cores:
        p.error(f"{args.threads} decoding threads and the Python thread need {args.threads + 1} cores; {cores} here")
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i in range(args.clips):
            frames, audio = panning_clip(8.0, 720, 1280, seed=i)
            paths.append(encode_video(Path(tmp) / f"clip{i}.mp4", frames, FILE_FPS, audio, FILE_RATE, gop=24))
        with ThreadPoolExecutor(args.threads) as pool:
            threads = alone_and_beside(pool, paths, args.rounds)
        processes = alone_and_beside(decoding_pool(args.threads), paths, args.rounds)  # the pool avjudge decodes in
    print(f"{cores} cores; clips/s alone, beside a thread holding the GIL:")
    for name, (alone, beside) in (("thread(s)", threads), ("process(es)", processes)):
        print(f"  {args.threads} decoding {name}: {alone:.2f}, {beside:.2f} ({beside / alone:.2f}×)")


if __name__ == "__main__":
    main()
