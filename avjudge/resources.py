"""Files avjudge ships and reads at run time (recipes, training configs, DeepSpeed configs, the checkpoint
manifest, the tiny judges' starting encoders), read as package data so that an installed wheel finds them
wherever it is.

A command that takes a recipe or a config takes a file path or the name of a shipped one
(``--recipe world_demo``, ``--config tiny_world_av``).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from .errors import AvjudgeError

# kind -> (folder under assets/, file suffix)
KINDS = {
    "recipe": ("recipes", ".yaml"),
    "train_config": ("train_configs", ".yaml"),
    "deepspeed": ("train_configs/deepspeed", ".json"),
}


def asset(*parts: str) -> Path:
    """A shipped file. Wheels install unpacked, so package data is a real path (zip imports are not supported)."""
    return Path(str(files("avjudge").joinpath("assets", *parts)))


def shipped(kind: str) -> list[str]:
    """The names of the shipped files of ``kind`` (a key of KINDS), without their suffix."""
    folder, suffix = KINDS[kind]
    return sorted(p.name[: -len(suffix)] for p in asset(*folder.split("/")).iterdir() if p.name.endswith(suffix))


def resolve(value: str | Path, kind: str) -> Path:
    """``value`` as a file if there is one, else the shipped file of that name; an error names both ways."""
    path = Path(value)
    if path.is_file():
        return path
    folder, suffix = KINDS[kind]
    name = path.name[: -len(suffix)] if path.name.endswith(suffix) else path.name
    candidate = asset(*folder.split("/"), name + suffix)
    if str(path.parent) == "." and candidate.is_file():  # a bare name: a shipped file
        return candidate
    raise AvjudgeError(
        f"{value}: no such {kind.replace('_', ' ')} file, and none ships by that name; give a path "
        f"or one of: {', '.join(shipped(kind))}"
    )
