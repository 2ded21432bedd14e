"""AVI-Bench's own commands: the four-level taxonomy of a model's task scores."""

from __future__ import annotations

import argparse

from ....commands import GROUP_HELP, add_input, add_out, register, required_input


def _levels_args(p: argparse.ArgumentParser) -> None:
    add_input(
        p,
        "a CSV: model and the 14 task scores in percent (AMIC, VMIC, ..., AVSQA; other columns ignored); or the "
        "report.json of omni score --suite avibench",
    )
    add_out(p, "the levels CSV: model, L1-L4 and the figures between")


def _levels(args: argparse.Namespace) -> int:
    from .levels import levels, read_scores, write_levels

    rows = {model: levels(scores) for model, scores in read_scores(required_input(args)).items()}
    write_levels(rows, args.out)
    for model, row in rows.items():
        print(f"{model:<24} " + "  ".join(f"{k} {row[k]:6.2f}" for k in ("L1", "L2", "L3", "L4")))
    print(f"wrote {args.out}")
    return 0


GROUP_HELP["omni avibench"] = "AVI-Bench: its four-level taxonomy of a model's task scores"
register(
    "omni avibench levels",
    "AVI-Bench's four levels (task-, modality-, stage-, domain-adaptive) from a model's 14 task scores",
    _levels_args,
    _levels,
    "L1 the mean of the stage averages; L2 penalised by the audio/visual imbalance; L3 by reasoning running\n"
    "ahead of its chance-normalised prerequisites; L4 the harmonic mean with the primitive-sensation domain.\n"
    "Reproduces the paper's Table 5 from its Table 3 (docs: benchmarks).\n\n"
    "examples:\n  avjudge omni avibench levels --input scores.csv --out levels.csv\n"
    "  avjudge omni avibench levels --input avibench_report/report.json --out levels.csv",
    old="bench avibench levels",
)
