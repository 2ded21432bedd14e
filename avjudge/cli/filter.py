"""`avjudge filter`: keep the clips of a manifest whose judge and metric scores pass rules."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..commands import add_input, add_out, alias, register, required_input
from .grammar import add_engine_arguments, add_scorer_arguments, clip_scorer, engine_of


def _filter_args(p: argparse.ArgumentParser) -> None:
    add_input(p, "a source manifest JSONL ({id, video, captions}) or a folder of clips")
    alias(p, "--manifest", "--input", dest="input", type=Path)
    p.add_argument("--rules", required=True, help="e.g. 'av>=0.7,nisqa>=3.0' (every rule must hold to keep a clip)")
    add_out(p, "folder for kept/dropped/failed.jsonl; rerun to resume", folder=True)
    p.add_argument("--shard", help="i/n: score every n-th clip from i; the last shard to finish writes the result")
    add_scorer_arguments(p)
    add_engine_arguments(p)


def _filter(args: argparse.Namespace) -> int:
    from ..filter import parse_rules, parse_shard, rule_dimensions, run_filter

    rules = parse_rules(args.rules)
    shard = parse_shard(args.shard)
    engine = engine_of(args)
    summary = run_filter(
        required_input(args),
        rules,
        args.out,
        clip_scorer(args, rule_dimensions(rules), engine),
        shard,
        progress=not args.no_progress,
        engine=engine,
    )
    print(json.dumps(summary, indent=2))
    counts = summary.get("counts") or {}
    if counts and counts["failed"] == sum(counts.values()):
        failed = args.out / "failed.jsonl"
        print(f"avjudge: every one of the {counts['failed']} clips failed; each reason is in {failed}", file=sys.stderr)
        return 1
    return 0


register(
    "filter",
    "keep the clips of a manifest whose judge and metric scores pass rules",
    _filter_args,
    _filter,
    "Score every clip on the dimensions the rules name and write OUT/kept.jsonl, OUT/dropped.jsonl\n"
    "(with the rules each clip broke) and OUT/failed.jsonl (clips that could not be scored, with\n"
    "why), each in manifest order with the scores. Shards run anywhere and combine into exactly\n"
    "the result of one run.\n\n"
    "examples:\n  avjudge filter --input world/world.jsonl --rules 'av>=0.7,dnsmos>=3' --judge av=ckpt/av --out kept\n"
    "  avjudge filter ... --shard 0/4   (and 1/4, 2/4, 3/4 on other machines, same --out)\n"
    "  avjudge filter ... --engine ray --address auto   (actors across the Ray cluster, one per GPU)",
)
