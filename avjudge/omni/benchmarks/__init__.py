"""The omni benchmarks, one folder each, found by scanning: a folder here (or in a folder named by the environment
variable ``AVJUDGE_OMNI_BENCHMARKS``, ``os.pathsep``-separated, for benchmarks kept outside avjudge) is a benchmark
when its ``__init__.py`` registers a suite (`avjudge.omni.suite.register`). Its ``commands.py``, if any, registers
its own commands (`avjudge.commands.register`); the CLI imports it. Nothing lists the benchmarks by hand."""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil

ENVIRONMENT = "AVJUDGE_OMNI_BENCHMARKS"


def _search_path() -> list[str]:
    """This folder, then the folders the environment names (each folder's subfolders import as this package's)."""
    extra = [folder for folder in os.environ.get(ENVIRONMENT, "").split(os.pathsep) if folder]
    for folder in extra:
        if os.path.abspath(folder) not in map(os.path.abspath, __path__):
            __path__.append(folder)
    return list(__path__)


def names() -> list[str]:
    """Every benchmark folder's name, in order."""
    return sorted(m.name for m in pkgutil.iter_modules(_search_path()) if m.ispkg)


def load() -> list[str]:
    """Import every benchmark (each registers its suite); their names."""
    found = names()
    for name in found:
        importlib.import_module(f"{__name__}.{name}")
    return found


def command_modules() -> list[str]:
    """The modules of the benchmarks that bring commands of their own."""
    return [f"{__name__}.{n}.commands" for n in load() if importlib.util.find_spec(f"{__name__}.{n}.commands")]
