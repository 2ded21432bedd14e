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


def add_model_arguments(p: argparse.ArgumentParser) -> None:
    """Where and how a judge model runs: the options every command that loads judges shares."""
    p.add_argument("--device", default="auto", help="auto: CUDA when there is one, else CPU")
    p.add_argument(
        "--dtype",
        default="auto",
        choices=["auto", "float32", "bfloat16", "float16"],
        help="auto: bfloat16 on a GPU, float32 on CPU",
    )
    p.add_argument(
        "--attention",
        default="auto",
        help="auto: packed window attention in the Omni encoders (Qwen2.5-Omni scores up to 2.6x "
        "faster on an H100 than with one call per window); or a transformers implementation: "
        "sdpa, eager, flash_attention_2 (needs flash-attn)",
    )
