"""The command registry: commands register by their words ("world make"); the parser is built from it."""
from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    words: tuple[str, ...]
    help: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


COMMANDS: dict[tuple[str, ...], Command] = {}
GROUP_HELP: dict[str, str] = {
    "world": "make the synthetic audio-video world",
    "media": "inspect media files",
    "perturb": "hard-negative strategies: list them, apply one",
    "data": "build, audit and export judge pair datasets",
    "metrics": "signal metrics of the AVBench suite",
    "checkpoints": "checkpoints metrics load: list and verify",
}


def register(words: str, help: str, add_arguments, run, description: str = "") -> None:
    key = tuple(words.split())
    COMMANDS[key] = Command(key, help, description or help, add_arguments, run)


class Formatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    def _get_help_string(self, action):
        # "(default: None)" says nothing: such options explain their fallback in their own help
        return action.help if action.default is None else super()._get_help_string(action)
