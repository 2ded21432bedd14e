"""The ``avjudge`` command: thin wrappers that parse arguments, call the library, print.

Commands register themselves in `avjudge.commands.COMMANDS` by their words ("world make"); nested sub-parsers are
built from that registry. The modules that register commands are named in COMMAND_MODULES (so the synthetic world
and the demo bring their own commands and no product layer imports them), and each omni benchmark's folder may hold
its own (`avjudge.omni.benchmarks.command_modules`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading

from .. import __version__
from ..commands import COMMANDS, GROUP_HELP, Formatter, register
from ..errors import AvjudgeError
from ..omni import benchmarks

COMMAND_MODULES = (
    "avjudge.cli.media",
    "avjudge.cli.perturb",
    "avjudge.cli.data",
    "avjudge.cli.judges",
    "avjudge.cli.train",
    "avjudge.cli.score",
    "avjudge.cli.metrics",
    "avjudge.cli.bench",
    "avjudge.cli.filter",
    "avjudge.cli.omni",
    "avjudge.cli.rewards",
    "avjudge.cli.serve",
    "avjudge.world.commands",
    "avjudge.demo.commands",
)
for _module in (*COMMAND_MODULES, *benchmarks.command_modules()):
    importlib.import_module(_module)

__all__ = ["COMMANDS", "COMMAND_MODULES", "build_parser", "command_parser", "main", "register"]


# ---- parser ----------------------------------------------------------------------------


def _literal(help: str) -> str:
    """A help text as written: argparse expands ``%`` in it (``75 %`` would crash ``--help``)."""
    return help.replace("%", "%%")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="avjudge",
        formatter_class=Formatter,
        allow_abbrev=False,  # --judg is not --judge: a typo is an error, never another option
        description="Train and run judges of generated audio-video (AVBench-style Yes/No scoring).\n"
        "Start with `avjudge demo`; every command has --help.",
    )
    parser.add_argument("--version", action="version", version=f"avjudge {__version__}")
    groups: dict[tuple[str, ...], argparse._SubParsersAction] = {
        (): parser.add_subparsers(dest="command", metavar="COMMAND")
    }
    for words, cmd in sorted(COMMANDS.items()):
        for depth in range(1, len(words)):  # the groups above the command ("bench", "bench sonicbench")
            if words[:depth] not in groups:
                name = " ".join(words[:depth])
                group = groups[words[: depth - 1]].add_parser(
                    words[depth - 1],
                    help=_literal(GROUP_HELP.get(name, "")),
                    description=GROUP_HELP.get(name),
                    formatter_class=Formatter,
                    allow_abbrev=False,
                )
                dest = "subcommand" if depth == 1 else f"subcommand{depth}"
                groups[words[:depth]] = group.add_subparsers(dest=dest, metavar="SUBCOMMAND", required=True)
        sub = groups[words[:-1]].add_parser(
            words[-1], help=_literal(cmd.help), description=cmd.description, formatter_class=Formatter,
            allow_abbrev=False,
        )  # fmt: skip
        cmd.add_arguments(sub)
        sub.set_defaults(_run=cmd.run)
    return parser


def command_parser(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> argparse.ArgumentParser:
    """The sub-parser of the command (or group) ``words`` in a parser `build_parser` made."""
    for word in words:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = action.choices[word]
    return parser


def _terminated(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "_run"):
        parser.print_help()
        return 2
    # SIGTERM (what `timeout` and cluster schedulers send) ends a job as Ctrl-C does: its exit handlers run, so its
    # decoding processes stop with it and what it wrote stays
    here = threading.current_thread() is threading.main_thread()
    before = signal.signal(signal.SIGTERM, _terminated) if here else None
    try:
        return args._run(args)
    except AvjudgeError as err:
        print(f"avjudge: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # what was written stays: a batch job resumes from it
        print("\navjudge: interrupted: rerun the same command to resume", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `avjudge ... | head` closed our output: end quietly, as command-line tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        if here:
            signal.signal(signal.SIGTERM, before)
