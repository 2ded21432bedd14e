"""The PriSe-style stimulus generator's command."""

from __future__ import annotations

import argparse
import json

from ....commands import GROUP_HELP, add_out, count, positive_int, register

GROUP_HELP["omni prise"] = "PriSe-style primitive-sensation clips with exact ground truth"


def _make_args(p: argparse.ArgumentParser) -> None:
    add_out(p, "folder for clips/, questions.jsonl and summary.json")
    p.add_argument(
        "--n", type=positive_int, default=90, help="formal items, spread over the 9 tasks in turn (each with its check)"
    )
    p.add_argument("--seed", type=count, default=0)
    p.add_argument("--workers", type=positive_int, default=2, help="processes that render")


def _make(args: argparse.Namespace) -> int:
    from ... import SuiteError
    from .make import make_prise

    if args.n < 1:
        raise SuiteError("--n must be at least 1")
    summary = make_prise(args.out, args.n, args.seed, args.workers)
    print(json.dumps({k: v for k, v in summary.items() if k != "tasks"}, indent=2))
    print(
        f"wrote {args.out / 'questions.jsonl'}. Next: avjudge omni answer --suite prise --questions "
        f"{args.out / 'questions.jsonl'} --judge choice_av=DIR --out answers.jsonl"
    )
    return 0


register(
    "omni prise make",
    "render primitive-sensation clips (shape, colour, motion, blur, pitch, noise, beats, AV order and offset)",
    _make_args,
    _make,
    "Each formal item (one primitive thing to see, hear, or see and hear) comes with a presence\n"
    "check ('Can you see / hear anything?') for double confirmation. Every truth is measured again on\n"
    "the decoded file by code that does not know how it was drawn; an item that disagrees is drawn\n"
    "again or rejected, and counted. Score answers with `omni score --suite prise`.\n\n"
    "example:\n  avjudge omni prise make --out prise --n 90 --seed 0",
    old="bench prise make",
)
