"""Files avjudge ships and reads at run time: the design's top-level folders of the repository, ``data_recipes/``,
``train_configs/`` (with ``deepspeed/``) and ``checkpoints/`` (the manifest and the tiny judges' starting encoders).

They are the source of truth a user reads and copies in the repository. The wheel carries them as
``avjudge/shipped/<folder>`` (the build maps them there: ``setup.py``; nothing is copied by hand), so a name works
the same from a checkout and from a wheel installed anywhere. A command that takes a recipe or a config takes a file
path or the name of a shipped one (``--recipe world_demo``, ``--config tiny_world_av``, ``deepspeed=zero2``).
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

from .errors import AvjudgeError

FOLDERS = ("data_recipes", "train_configs", "checkpoints")  # the repository's top-level folders the wheel carries
# kind -> (folder, file suffix)
KINDS = {
    "recipe": ("data_recipes", ".yaml"),
    "train_config": ("train_configs", ".yaml"),
    "deepspeed": ("train_configs/deepspeed", ".json"),
}


def shipped_folder(name: str) -> Path:
    """One of `FOLDERS`: inside an installed wheel (``avjudge/shipped/<name>``), else the checkout's own (beside
    the ``avjudge`` package). Wheels install unpacked, so package data is a real path."""
    package = Path(str(files("avjudge")))
    in_wheel = package / "shipped" / name
    return in_wheel if in_wheel.is_dir() else package.parent / name


def asset(folder: str, *parts: str) -> Path:
    """A shipped file: ``folder`` (one of `FOLDERS`, or a folder under one) and its path in it."""
    top, _, rest = folder.partition("/")
    return shipped_folder(top).joinpath(*filter(None, rest.split("/")), *parts)


def shipped(kind: str) -> list[str]:
    """The names of the shipped files of ``kind`` (a key of KINDS), without their suffix."""
    folder, suffix = KINDS[kind]
    return sorted(p.name[: -len(suffix)] for p in asset(folder).iterdir() if p.name.endswith(suffix))


def resolve(value: str | Path, kind: str) -> Path:
    """``value`` as a file if there is one, else the shipped file of that name; an error names both ways."""
    path = Path(value)
    if path.is_file():
        return path
    folder, suffix = KINDS[kind]
    name = path.name[: -len(suffix)] if path.name.endswith(suffix) else path.name
    candidate = asset(folder, name + suffix)
    if str(path.parent) == "." and candidate.is_file():  # a bare name: a shipped file
        return candidate
    raise AvjudgeError(
        f"{value}: no such {kind.replace('_', ' ')} file, and none ships by that name; give a path "
        f"or one of: {', '.join(shipped(kind))}"
    )


def default_cache() -> Path:
    """Where avjudge keeps what it builds or computes to reuse (tiny judges, cached features): ``$AVJUDGE_CACHE``,
    else ``~/.cache/avjudge``."""
    return Path(os.environ.get("AVJUDGE_CACHE", Path.home() / ".cache" / "avjudge"))
