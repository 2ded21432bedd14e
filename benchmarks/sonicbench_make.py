"""Time `avjudge bench sonicbench make`: the full 2,400-item set (100 per attribute x paradigm) rendered, written
and re-measured, with the processes asked for.

Usage: python benchmarks/sonicbench_make.py [--per-cell 100] [--workers 2]
"""

import argparse
import os
import tempfile
import time
from pathlib import Path

from avjudge.omni.benchmarks.sonicbench.generate import make_items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-cell", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        summary = make_items(Path(tmp), args.per_cell, seed=0, workers=args.workers, progress=False)
        seconds = time.perf_counter() - start
    print(
        f"{summary['items']} items ({summary['redraws']} redraws, {summary['rejected']} rejected) in {seconds:.1f} s "
        f"with {args.workers} processes on {os.cpu_count()} cores: {summary['items'] / seconds:.0f} items/s"
    )


if __name__ == "__main__":
    main()
