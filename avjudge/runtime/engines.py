"""What runs a job's chunks: the engine registry (``local``, ``ray``) and the protocol engines follow."""

from __future__ import annotations

from dataclasses import fields
from typing import Callable, ClassVar, Iterator, Protocol

from ..config import ConfigError
from .chunks import Process
from .local import LocalEngine
from .stages import StageClock


class Engine(Protocol):
    name: ClassVar[str]
    # whether the process functions run in this process: where not, models need not load here (`Judge.load`'s
    # defer_weights), they load where they score
    scores_here: ClassVar[bool]

    def run(
        self, todo: list[dict], process: Process, chunk_size: int, clock: StageClock | None = None
    ) -> Iterator[list[dict]]:
        """Records of every item of ``todo``, a batch at a time, in any order; an engine that scores here times a
        `ClipJob`'s stages on ``clock``."""
        ...


def _ray_engine() -> type:
    from .ray_engine import RayEngine  # Ray is an optional extra: imported only when asked for

    return RayEngine


ENGINES: dict[str, Callable[[], type]] = {"local": lambda: LocalEngine, "ray": _ray_engine}


def make_engine(name: str = "local", **options) -> Engine:
    """The engine called ``name`` (local, ray) with its options (`avjudge.runtime.ray_engine.RayEngine`'s fields;
    None: not given)."""
    if name not in ENGINES:
        raise ConfigError(f"unknown engine {name!r}; known: {', '.join(ENGINES)}")
    cls = ENGINES[name]()
    given = {k: v for k, v in options.items() if v is not None}
    foreign = [k for k in given if k not in {f.name for f in fields(cls)}]
    if foreign:
        raise ConfigError(f"{', '.join(foreign)}: not an option of --engine {name} (--engine ray takes them)")
    return cls(**given)
