"""`avjudge demo`: registered with the CLI by name (`avjudge.cli.COMMAND_MODULES`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..commands import add_out, add_set, count, positive_float, positive_int, register
from .size import FULL, QUICK, DemoSize


def _demo_args(p: argparse.ArgumentParser) -> None:

    add_out(p, "output folder", required=False, default=Path("demo_out"))
    p.add_argument("--seed", type=count, default=0, help="world and training seed")
    length = p.add_mutually_exclusive_group()
    length.add_argument("--quick", action="store_true", help="a minute-long smoke run (tiny sizes, nothing learned)")
    length.add_argument(
        "--full",
        action="store_true",
        help="the full-length run (about 10 min on 2 cores): every judge trained as long as it can use "
        + ", ".join(f"{task.upper()} {FULL.epochs_of(task):g}" for task in ("av", "vt", "at"))
        + " epochs",
    )
    p.add_argument("--clips", type=positive_int, help=f"world clips (default {DemoSize.clips})")
    p.add_argument("--pairs", type=positive_int, help=f"pairs per judge (default {DemoSize.pairs})")
    p.add_argument(
        "--epochs",
        type=positive_float,
        help="training epochs of every judge (default: "
        + ", ".join(f"{task.upper()} {DemoSize().epochs_of(task):g}" for task in ("av", "vt", "at"))
        + ")",
    )
    p.add_argument("--judges", default="av,vt,at", help="which judges to build pairs for and train")
    add_set(p, "training option for every judge, over the shipped tiny_world_* train configs")
    p.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="where tiny judges are built (default: $AVJUDGE_CACHE or ~/.cache/avjudge)",
    )
    p.add_argument(
        "--encoders",
        type=Path,
        metavar="FILE",
        help="encoder weights the tiny Qwen2.5-Omni thinker of the VT judge starts from (default: the ones shipped "
        "with avjudge)",
    )
    p.add_argument(
        "--av-encoders",
        type=Path,
        metavar="FILE",
        help="encoder weights the AV judge's tiny thinker starts from (default: the shipped ones that keep time)",
    )


def _demo(args: argparse.Namespace) -> int:
    from ..config import ConfigError
    from ..judges.tiny import ALIGNED_ENCODERS, SYNC_ENCODERS
    from .run import run_demo

    tasks = tuple(t.strip() for t in args.judges.split(",") if t.strip())
    if not tasks or set(tasks) - {"av", "vt", "at"}:
        raise ConfigError(f"--judges takes a comma-separated subset of av, vt, at, not {args.judges!r}")
    encoders, av_encoders = args.encoders or ALIGNED_ENCODERS, args.av_encoders or SYNC_ENCODERS
    for flag, given, path in (
        ("--encoders", args.encoders, encoders),
        ("--av-encoders", args.av_encoders, av_encoders),
    ):
        if not path.is_file():
            raise ConfigError(
                f"{flag} {given}: no such file; give encoder weights that research/align_tiny_encoders.py wrote, or "
                "leave it out for the shipped ones"
            )
    size = (QUICK if args.quick else FULL if args.full else DemoSize()).scaled(args.clips, args.pairs, args.epochs)
    report = run_demo(
        args.out,
        size=size,
        seed=args.seed,
        cache=args.cache,
        tasks=tasks,
        overrides=args.overrides,
        encoders=encoders,
        av_encoders=av_encoders,
    )
    print(report["text"])
    return 0


register(
    "demo",
    "run the whole pipeline on built-in defaults: a tutorial",
    _demo_args,
    _demo,
    "Make a synthetic world and check it against its ground truth, build AV / VT / AT pairs\n"
    "with hard negatives, score held-out pairs with untrained tiny judges, train them on the\n"
    "CPU, score again, and show what each judge learned: held-out balanced accuracy per\n"
    "negative type before and after, learning curves, and a handful of held-out pairs with\n"
    "their scores (OUT/demo_report.html, .json and .png).\n\n"
    "By default it takes about 6 minutes on 2 cores (it says how long after its first stage):\n"
    "the AT judge, which learns nothing in that budget, trains only long enough to show the\n"
    "path works, and the report says so; --full trains every judge at full length (~10 min).\n\n"
    "examples:\n"
    "  avjudge demo --quick --out demo_quick     # a one-minute smoke run\n"
    "  avjudge demo --full --out demo_full       # every judge trained at full length\n"
    "  avjudge demo --judges av --clips 300 --pairs 2400 --epochs 2.5 --out demo_av",
)
