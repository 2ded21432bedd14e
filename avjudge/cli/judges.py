"""`avjudge judges`: the tiny judges every path runs on without real weights."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..commands import GROUP_HELP, register

GROUP_HELP["judges"] = "judge checkpoints: tiny random ones of the real architectures, to run every path on a CPU"


def _make_tiny_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, help="the folder the judges go under, as OUT/tiny/FAMILY (default: the cache)")
    p.add_argument("--seed", type=int, default=0, help="the random weights' seed")
    p.add_argument("--force", action="store_true", help="build again even where they exist")


def _make_tiny(args: argparse.Namespace) -> int:
    from ..judges.tiny import default_cache, make_tiny_judges

    for family, path in make_tiny_judges(args.out or default_cache(), args.seed, args.force).items():
        print(f"{family}: {path}")
    return 0


register(
    "judges make-tiny",
    "build tiny random judges of the real architectures (Qwen2.5-Omni, Qwen3-Omni, Qwen2-Audio), offline",
    _make_tiny_args,
    _make_tiny,
    "Build tiny random-initialised judges of every architecture avjudge scores with, offline (a\n"
    "byte-level tokenizer with the Qwen special tokens, the real processors, 2-layer language models):\n"
    "every command and the training run on them on a CPU in seconds. Their scores mean nothing until\n"
    "trained (`avjudge train --set model=OUT/tiny/qwen2_5_omni_thinker`).\n\n"
    "example:\n  avjudge judges make-tiny --out judges   # judges/tiny/qwen2_5_omni_thinker, ..., qwen2_audio",
)
