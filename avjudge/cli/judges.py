"""`avjudge judges`: the tiny judges every path runs on without real weights."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..commands import GROUP_HELP, count, positive_int, register

GROUP_HELP["judges"] = "judge checkpoints: tiny random ones of the real architectures, and the cards of trained ones"


def _make_tiny_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, help="the folder the judges go under, as OUT/tiny/FAMILY (default: the cache)")
    p.add_argument("--seed", type=count, default=0, help="the random weights' seed")
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


def _calibrate_args(p: argparse.ArgumentParser) -> None:
    from .grammar import add_judge, add_runtime_arguments

    add_judge(p, "the trained judge: av, vt or at and its checkpoint folder, e.g. av=runs/av/final", repeatable=False)
    p.add_argument(
        "--pairs", type=Path, required=True, help="the pair dataset it was trained on (`avjudge data build`)"
    )
    p.add_argument(
        "--split",
        help="the split the temperature and preference model are fitted on (default: val where the dataset has one, "
        "else train)",
    )
    p.add_argument("--report-split", default="test", help="the split the figures are reported on (never the fit one)")
    p.add_argument("--limit", type=positive_int, help="at most this many pairs of each split (a fixed random subset)")
    p.add_argument("--out", type=Path, help="folder for calibration.json and reliability.png (default: the judge's)")
    p.add_argument("--dry-run", action="store_true", help="report only: leave the judge's calibration as it is")
    add_runtime_arguments(p)


def _calibrate(args: argparse.Namespace) -> int:
    import json

    from ..config import ConfigError
    from ..data import built_sources, load_pairs
    from ..judges import Judge
    from ..train.calibrate import calibrate, calibration_splits, reliability_diagram
    from .grammar import model_options, one_judge

    task, folder = one_judge(args.judge)
    if not (args.pairs / "stats.json").is_file():
        raise ConfigError(f"{args.pairs}: not a pair dataset (no stats.json); build one with `avjudge data build`")
    args.split, args.report_split = calibration_splits(args.pairs, task, args.split, args.report_split)
    sources = {source["id"]: source for source in built_sources(args.pairs)}
    for split in (args.split, args.report_split):  # a hand-edited line refused before the judge loads
        load_pairs(args.pairs, task, split, sources=sources)
    judge = Judge.load(task, folder, temperature=1.0, **model_options(args))
    result = calibrate(judge, args.pairs, args.split, args.report_split, args.limit, write=not args.dry_run)
    out = args.out or Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    (out / "calibration.json").write_text(json.dumps(result, indent=2))
    diagram = reliability_diagram(result, out / "reliability.png")
    fitted, before, after = result["fitted"], result["pointwise"]["before"], result["pointwise"]["after"]
    pairwise, kept = result["pairwise"], result["temperature_kept"]
    if kept["kept"] == "identity":
        print(
            f"the fitted T = {kept['fitted']:.3g} made {args.report_split}'s log loss worse ({before['log_loss']:.3f} "
            f"-> {kept['fitted_log_loss']:.3f}): T = 1 kept, the judge's scores as they were"
        )
    print(
        f"{task} judge: T = {fitted['temperature']:.3f}, preference tau = {fitted['preference']['temperature']:.3f}, "
        f"tie width = {fitted['preference']['tie']:.3f} (fitted on {args.split})\n"
        f"on {args.report_split}: ECE {before['ece']:.3f} -> {after['ece']:.3f}, Brier {before['brier']:.3f} -> "
        f"{after['brier']:.3f}, log loss {before['log_loss']:.3f} -> {after['log_loss']:.3f}; preferences "
        f"{pairwise['after']['pairs']}: log loss {pairwise['before']['log_loss']:.3f} -> "
        f"{pairwise['after']['log_loss']:.3f}, accuracy {pairwise['after']['accuracy_without_ties']:.3f} without ties, "
        f"{pairwise['after']['accuracy_with_ties']:.3f} with (threshold {pairwise['after']['tie_threshold']:.3f} "
        f"from {args.split})\n"
        f"{'not written (--dry-run)' if args.dry_run else f'written beside the judge in {folder}'}; "
        f"figures in {out / 'calibration.json'}, diagram {diagram}"
    )
    return 0


register(
    "judges calibrate",
    "fit a judge's temperature and pairwise preference model on one split, report calibration on another",
    _calibrate_args,
    _calibrate,
    "Score every pair of one split of the judge's pair dataset and fit its pointwise temperature (S =\n"
    "sigmoid(delta / T)) and its preference model (Bradley-Terry with ties, Rao-Kupper: temperature\n"
    "and tie width, used by `avjudge compare` and win-rate rewards) on it; write both beside the\n"
    "judge's weights, where every later load reads them. Report on another split, before and after:\n"
    "ECE (15 bins), Brier score, log loss, preference accuracy with and without ties (the tie\n"
    "threshold chosen on the fit split, never the reported one), and a reliability diagram.\n\n"
    "example:\n"
    "  avjudge judges calibrate --judge av=runs/av/final --pairs pairs",
)
