"""How long the shortcut audit of 10,000 AV pairs takes (the issue's bound: under a minute on 2 cores).

Makes the demo's world (240 clips of 5 s, 192 px) and builds `world_demo`'s AV pairs (10,000 by default, split 3:1
by source), then times `avjudge.data.shortcuts.judge_audit` over every pair of both splits: each source decoded once
(small frames at 8 fps, mono 16 kHz), each pair's negative applied and cut to its window, the features of the audio
and the picture, the classifiers per side and negative type, their bootstrap intervals.

Usage: python benchmarks/shortcut_audit_speed.py [--pairs 10000] [--workers 2] [--out DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

from avjudge.data import build_dataset, load_recipe
from avjudge.data.shortcuts import judge_audit
from avjudge.demo import DemoSize
from avjudge.world import MANIFEST, make_world


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=int, default=10000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", type=Path, help="keep the world and pairs here (default: a temporary folder)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        out = args.out or Path(scratch)
        make_world(DemoSize().world(0), out / "world", progress=False)
        recipe, source = load_recipe("world_demo", [f"source={out / 'world' / MANIFEST}"])
        recipe = dataclasses.replace(recipe, judges={"av": dataclasses.replace(recipe.judges["av"], pairs=args.pairs)})
        build_dataset(recipe, source, out / "pairs", progress=False)
        start = time.perf_counter()
        report = judge_audit(out / "pairs", "av", workers=args.workers)
        seconds = time.perf_counter() - start
    pairs = sum(report["pairs"].values())
    print(
        f"shortcut audit of {pairs} AV pairs ({report['pairs']}) from 240 sources, {args.workers} processes: "
        f"{seconds:.1f} s ({pairs / seconds:.0f} pairs/s); leaks: {report['leaks'] or 'none'}"
    )


if __name__ == "__main__":
    main()
