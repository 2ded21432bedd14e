"""Time `avjudge bench prise make`: 500 formal items (and their presence checks) rendered, encoded, decoded and
re-measured, with the processes asked for.

Usage: python benchmarks/prise_make.py [--n 500] [--workers 2]
"""

import argparse
import os
import tempfile
import time
from pathlib import Path

from avjudge.omni.benchmarks.prise import make_prise


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        summary = make_prise(Path(tmp), args.n, seed=0, workers=args.workers)
        seconds = time.perf_counter() - start
    print(
        f"{summary['items']} items ({summary['redraws']} redraws, {summary['rejected']} rejected) in {seconds:.1f} s "
        f"with {args.workers} processes on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
