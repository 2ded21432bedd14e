"""The command registry and the flags every command spells alike.

Commands register by their words ("world make") from the part of the package they belong to (the CLI's own groups,
the synthetic world, the demo, each omni benchmark's folder); `avjudge.cli` builds the parser from the registry. This
is a base module, importing nothing of avjudge but its errors, so any layer may register its commands. Every command
spells the same things the same way: ``--input`` for what it reads (a file, a folder or a manifest), ``--out`` for
what it writes, ``--set KEY=VALUE`` for every configuration override (the scoring flags shared by the commands that
score clips are in `avjudge.cli.grammar`). Old spellings stay for one release as aliases that print a deprecation
warning.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .moved import REMOVED_IN


@dataclass(frozen=True)
class Command:
    words: tuple[str, ...]
    help: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    replaced_by: tuple[str, ...] | None = None  # an old spelling's new words: it warns, then runs that command


COMMANDS: dict[tuple[str, ...], Command] = {}
GROUP_HELP: dict[str, str] = {
    "world": "make the synthetic audio-video world",
    "media": "inspect media files",
    "perturb": "hard-negative strategies: list them, apply one",
    "data": "build, audit and export judge pair datasets",
    "metrics": "signal metrics of the AVBench suite",
    "checkpoints": "checkpoints metrics load: list and verify",
    "bench": "the AVBench benchmark of generators: prompt files, runner, reports, human alignment",
    "omni": "benchmarks of omni models: suites, answering, scoring, the Yes/No bridge",
}


def register(words: str, help: str, add_arguments, run, description: str = "", old: str | None = None) -> None:
    """The command ``words``; ``old``: its previous spelling, kept for one release as an alias that warns."""
    key = tuple(words.split())
    COMMANDS[key] = Command(key, help, description or help, add_arguments, run)
    if old:
        alias_command(old, words)


def alias_command(old: str, new: str) -> None:
    """``avjudge OLD`` as a deprecated spelling of ``avjudge NEW``: the same arguments; it warns, then runs."""
    target = COMMANDS[tuple(new.split())]

    def run(args: argparse.Namespace) -> int:
        warn_deprecated(f"avjudge {old}", f"avjudge {new}")
        return target.run(args)

    key = tuple(old.split())
    if len(key) > 2:  # the old group, e.g. "bench sonicbench", says where it went
        GROUP_HELP.setdefault(" ".join(key[:-1]), f"(deprecated: avjudge {' '.join(new.split()[:-1])})")
    help = f"(deprecated: avjudge {new}) {target.help}"
    COMMANDS[key] = Command(key, help, target.description, target.add_arguments, run, target.words)


class Formatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    def _get_help_string(self, action):
        # "(default: None)" says nothing: such options explain their fallback in their own help
        return (
            action.help
            if action.default is None or action.help == argparse.SUPPRESS
            else super()._get_help_string(action)
        )


def warn_deprecated(old: str, new: str) -> None:
    print(f"avjudge: warning: {old} is deprecated and goes in avjudge {REMOVED_IN}; use {new}", file=sys.stderr)


class DeprecatedAlias(argparse.Action):
    """An old spelling of an option: stores like the new one (``append`` if that appends) and warns."""

    def __init__(self, option_strings, dest, new: str, append: bool = False, **kwargs):
        self.new, self.append = new, append
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        warn_deprecated(option_string, self.new)
        if self.append:
            values = (getattr(namespace, self.dest) or []) + (values if isinstance(values, list) else [values])
        setattr(namespace, self.dest, values)


def _number(kind: type, low: float, inclusive: bool, words: str, high: float = math.inf) -> Callable[[str], float]:
    """An argparse type: a finite ``kind`` above ``low`` (at least ``low`` when ``inclusive``) and at most ``high``,
    else the option's error in words, before anything loads."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{words}, not {text!r}") from None
        if not (math.isfinite(value) and (value >= low if inclusive else value > low) and value <= high):
            raise argparse.ArgumentTypeError(f"{words}, not {text!r}")
        return value

    parse.__name__ = words  # argparse names the type in its messages
    return parse


positive_int = _number(int, 0, False, "a whole number above 0")
count = _number(int, 0, True, "a whole number, 0 or more")
positive_float = _number(float, 0.0, False, "a finite number above 0")
non_negative_float = _number(float, 0.0, True, "a finite number, 0 or more")
share = _number(float, 0.0, True, "a share from 0 to 1", high=1.0)
positive_share = _number(float, 0.0, False, "a share above 0, at most 1", high=1.0)


def alias(p: argparse.ArgumentParser, old: str, new: str, dest: str, append: bool = False, **kwargs) -> None:
    """``old`` as a deprecated spelling of ``new`` (which stores into ``dest``)."""
    p.add_argument(old, dest=dest, action=DeprecatedAlias, new=new, append=append, **kwargs)


def add_input(p: argparse.ArgumentParser, help: str, repeatable: bool = False, required: bool = True) -> None:
    """``--input``: what the command reads (a file, a folder or a manifest, as ``help`` says). A required one is
    checked by `required_input`, so that a deprecated spelling can stand in for it."""
    help += (" (repeatable)" if repeatable else "") + (" [required]" if required else "")
    p.add_argument("--input", type=Path, action="append" if repeatable else "store", help=help)


def add_out(p: argparse.ArgumentParser, help: str, required: bool = True, folder: bool = False, **kwargs) -> None:
    """``--out``; ``folder``: a folder the command writes into, refused as it parses where a file is there."""
    p.add_argument("--out", type=out_folder if folder else Path, required=required, help=help, **kwargs)


def out_folder(text: str) -> Path:
    """``--out``'s folder, refused where a file holds its name."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: a file is there; name a folder")
    return path


def add_set(p: argparse.ArgumentParser, help: str) -> None:
    """``--set KEY=VALUE`` (repeatable) into ``args.overrides``."""
    p.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help=help + " (repeatable)"
    )


def required_input(args: argparse.Namespace):
    """``args.input`` (which the deprecated spellings fill too); an error that names the flag when none was given."""
    from .config import ConfigError

    if args.input:
        return args.input
    raise ConfigError("--input is required: give the file, folder or manifest to read (see --help)")
