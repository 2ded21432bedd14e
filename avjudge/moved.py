"""Old import paths of modules and names that moved, kept for one release: importing one works and warns.

`MOVED_MODULES` maps an old module (or package) name to its new one; a meta path finder makes the old name the
new module itself (a package's submodules follow). `moved_names` gives a package the ``__getattr__`` that serves a
name it no longer defines from where the name lives now.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

REMOVED_IN = "0.3"

MOVED_MODULES = {
    "avjudge.runtime.clip_jobs": "avjudge.scoring.jobs",
    "avjudge.runtime.set_compare": "avjudge.scoring.set_compare",
    "avjudge.bench.scoring": "avjudge.scoring.clip_scorer",
    "avjudge.bench.dimensions": "avjudge.scoring.dimensions",
    "avjudge.bench.prompt_suite": "avjudge.bench.prompt_files",
    "avjudge.omni.omnivideobench": "avjudge.omni.benchmarks.omnivideobench.suite",
    "avjudge.omni.worldsense": "avjudge.omni.benchmarks.worldsense.suite",
    "avjudge.omni.questions": "avjudge.omni.benchmarks.questions.suite",
    "avjudge.omni.prise": "avjudge.omni.benchmarks.prise",
    "avjudge.omni.avibench": "avjudge.omni.benchmarks.avibench",
    "avjudge.omni.avibench.metrics": "avjudge.omni.benchmarks.avibench.measures",
    "avjudge.omni.sonicbench": "avjudge.omni.benchmarks.sonicbench",
    "avjudge.omni.sonicbench.meters": "avjudge.omni.meters",
}


def warn_moved(old: str, new: str, stacklevel: int = 3) -> None:
    warnings.warn(f"{old} moved to {new}; the old path goes in avjudge {REMOVED_IN}", FutureWarning, stacklevel)


def _new_name(name: str) -> str | None:
    """``name``'s new module name where it, or a package above it, moved."""
    for old, new in sorted(MOVED_MODULES.items(), key=lambda moved: -len(moved[0])):  # the closest move first
        if name == old or name.startswith(old + "."):
            return new + name[len(old) :]
    return None


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if _new_name(name) else None

    def create_module(self, spec):
        new = _new_name(spec.name)
        warn_moved(spec.name, new, stacklevel=6)
        return importlib.import_module(new)

    def exec_module(self, module) -> None:  # the new module ran when it was imported
        pass


def install() -> None:
    """Serve the old module names (once per interpreter)."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _MovedFinder())


def moved_names(package: str, names: dict[str, str]):
    """A module ``__getattr__`` serving each old name of ``names`` (old -> ``"new.module:name"``), with a warning."""

    def __getattr__(name: str):
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = names[name].partition(":")
        warn_moved(f"{package}.{name}", f"{module}.{attribute}")
        return getattr(importlib.import_module(module), attribute)

    return __getattr__
