"""`avjudge judges`: the tiny judges every path runs on without real weights."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..commands import GROUP_HELP, register

GROUP_HELP["judges"] = "judge checkpoints: tiny random ones of the real architectures, and the cards of trained ones"


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


def _card_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", type=Path, help="a training run's output folder, or its final/ checkpoint")
    p.add_argument("--json", action="store_true", help="print the card's JSON instead of its page")


def _card(args: argparse.Namespace) -> int:
    import json

    from ..rewards.card import card_markdown, read_card

    card = read_card(args.folder)
    print(json.dumps(card, indent=2) if args.json else card_markdown(card), end="" if not args.json else "\n")
    return 0


register(
    "judges card",
    "print a trained judge's card: its data, held-out figures, shortcut and reward audits, flags",
    _card_args,
    _card,
    "Every `avjudge train` run writes judge_card.json and judge_card.md into its output folder and\n"
    "its final/ checkpoint: the recipe and dataset it learnt from, its held-out accuracy and AUROC\n"
    "per negative type, the dataset's shortcut audit (`avjudge data audit`) and the reward audit of\n"
    "the judge before and after training on held-out clips, with flags. A judge whose card flags\n"
    "something warns when it is loaded.\n\n"
    "example:\n  avjudge judges card runs/av",
)
