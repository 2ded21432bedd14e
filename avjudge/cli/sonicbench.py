"""SonicBench's own commands: the stimulus generator (the shared `bench convert / answer / score` serve its items)."""

from __future__ import annotations

import argparse
import json

from .grammar import GROUP_HELP, add_out, register

GROUP_HELP["bench sonicbench"] = "SonicBench: make exact-label stimuli of the 12 physical attributes"


def _make_args(p: argparse.ArgumentParser) -> None:
    add_out(p, "folder for audio/, questions.jsonl and summary.json")
    p.add_argument("--per-cell", type=int, default=100, help="items per attribute x paradigm (even: balanced A/B)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--attributes", help="comma-separated subset (default: all 12)")
    p.add_argument("--workers", type=int, default=2, help="processes that render")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def _make(args: argparse.Namespace) -> int:
    from ..bench.dimensions import BenchError
    from ..bench.sonicbench.generate import make_items
    from ..bench.sonicbench.stimuli import ATTRIBUTE_SPECS

    attributes = tuple(a.strip() for a in args.attributes.split(",")) if args.attributes else None
    unknown = sorted(set(attributes or ()) - set(ATTRIBUTE_SPECS))
    if unknown:
        raise BenchError(f"unknown attribute(s) {unknown}; SonicBench's are {list(ATTRIBUTE_SPECS)}")
    if args.per_cell < 1:
        raise BenchError("--per-cell must be at least 1")
    summary = make_items(args.out, args.per_cell, args.seed, attributes, args.workers, not args.no_progress)
    print(json.dumps({k: v for k, v in summary.items() if k != "cells"}, indent=2))
    print(
        f"wrote {args.out / 'questions.jsonl'}. Next: avjudge bench answer --suite sonicbench --questions "
        f"{args.out / 'questions.jsonl'} --judge choice_a=DIR --out answers.jsonl"
    )
    return 0


register(
    "bench sonicbench make",
    "render SonicBench-style items with exact labels, each re-measured on the written audio",
    _make_args,
    _make,
    "For each of the 12 attributes and both paradigms (recognition: one 4 s clip against the\n"
    "paper's threshold; comparison: two 4 s clips with exactly 0.5 s of silence between them),\n"
    "draw a value, render synthetic sound with it, write 16-bit WAV and measure the written file\n"
    "with meters independent of the renderer (YIN f0, BS.1770 loudness, ITD/ILD, DRR, RT60, ...).\n"
    "An item whose measurement disagrees with its label is drawn again, or rejected and counted.\n"
    "Answers are balanced A/B per cell, the option order counterbalanced; one seed, same files.\n\n"
    "example:\n  avjudge bench sonicbench make --out sonic_items --per-cell 100 --seed 0",
)
