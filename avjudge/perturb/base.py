"""Strategies, their parameter ranges and the registry every perturbation lives in.

A strategy is split in two so a negative can be stored as a recipe: ``sample`` draws the
parameters (from ranges a recipe may override) and ``apply`` is a pure function of the
clip and those parameters. Applying a stored recipe later, in a data loader or when
materialising files, gives bit-identical samples.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..errors import AvjudgeError
from ..media import MediaClip
from ..registry import Registry


class PerturbError(AvjudgeError, ValueError):
    """A perturbation that cannot be applied to this clip (no audio, no pool, too short...)."""


def audio_of(clip: MediaClip) -> np.ndarray:
    """The clip's audio, or the `PerturbError` of a clip without it."""
    if clip.audio is None:
        raise PerturbError(f"{clip.source or 'clip'} has no audio to perturb")
    return clip.audio


def frames_of(clip: MediaClip) -> np.ndarray:
    """The clip's frames, or the `PerturbError` of a clip without them."""
    if clip.frames is None:
        raise PerturbError(f"{clip.source or 'clip'} has no frames to perturb")
    return clip.frames


@dataclass(frozen=True)
class Range:
    """A numeric range; ``signed`` draws a random sign for a magnitude in [low, high]."""

    low: float
    high: float
    signed: bool = False
    unit: str = ""

    def sample(self, rng: np.random.Generator) -> float:
        value = float(rng.uniform(self.low, self.high))
        return -value if self.signed and rng.random() < 0.5 else value

    def describe(self) -> str:
        sign = "±" if self.signed else ""
        return f"{sign}{self.low:g}..{self.high:g}{(' ' + self.unit) if self.unit else ''}"


@dataclass(frozen=True)
class Choice:
    """Options drawn uniformly; ``allowed`` lists further options a recipe may choose instead."""

    options: tuple[str, ...]
    allowed: tuple[str, ...] = ()

    def sample(self, rng: np.random.Generator) -> str:
        if len(self.options) == 1:  # nothing to choose: leave the generator as it was
            return self.options[0]
        return str(self.options[int(rng.integers(len(self.options)))])

    def describe(self) -> str:
        extra = [o for o in self.allowed if o not in self.options]
        return "|".join(self.options) + (f" (or {'|'.join(extra)})" if extra else "")


def parse_override(spec, value):
    """A recipe's override for one parameter: [low, high] for a Range, a list for a Choice."""
    if isinstance(spec, Range):
        if isinstance(value, (int, float)):
            return Range(float(value), float(value), spec.signed, spec.unit)
        low, high = value
        if low > high:
            raise PerturbError(f"range {value} has low > high")
        return Range(float(low), float(high), spec.signed, spec.unit)
    options = (value,) if isinstance(value, str) else tuple(value)
    known = tuple(dict.fromkeys(spec.options + spec.allowed))
    unknown = set(options) - set(known)
    if unknown:
        raise PerturbError(f"unknown option(s) {sorted(unknown)}; known: {list(known)}")
    return Choice(options, spec.allowed)


@dataclass
class Context:
    """What a strategy may look at beyond the clip: its source record and a pool of other clips."""

    record: dict | None = None
    pool: Any = None  # avjudge.perturb.pool.SourcePool


SIDES = ("audio", "video", "text")  # what one side of a pair is; `Strategy.tells` names some of them


class Strategy:
    """A hard-negative strategy: the picture stays, the audio changes.

    Subclasses set ``name``, ``family`` (temporal, acoustic, scene, semantic), ``description``, ``defaults``
    (parameter ranges) and ``tells``, register with ``@register``, and implement `apply`.

    ``tells`` are the sides (`SIDES`) that may give the negative away on their own, by design: a filter is heard
    without the picture (``("audio",)``); a time shift or another clip's sound only in the relation between sound and
    picture (``()``). The shortcut audit (`avjudge.data.shortcuts`) flags a negative type that a side outside its
    tells tells apart.

    Args:
        overrides: parameter -> a new range (``[low, high]``), a fixed value, or choices; a recipe's
            ``strategy_params`` end up here.

    Raises:
        PerturbError: a parameter the strategy does not have.
    """

    name: ClassVar[str]
    family: ClassVar[str]
    description: ClassVar[str]
    defaults: ClassVar[dict[str, Range | Choice]] = {}
    tells: ClassVar[tuple[str, ...]] = ()
    needs_pool: ClassVar[bool] = False
    # parameter -> the smallest size of it a person notices: a negative below it is a tie with its source (`unnoticed`)
    noticeable: ClassVar[dict[str, float]] = {}

    def __init__(self, overrides: dict | None = None):
        self.ranges = dict(self.defaults)
        for key, value in (overrides or {}).items():
            if key not in self.defaults:
                raise PerturbError(f"{self.name} has no parameter {key!r}; it has {sorted(self.defaults)}")
            self.ranges[key] = parse_override(self.defaults[key], value)

    def sample(self, rng: np.random.Generator, clip: MediaClip, ctx: Context) -> dict:
        """Draw the parameters of one negative.

        Args:
            rng: the random generator (seeded by the dataset builder, so a build is reproducible).
            clip: the source clip, or None where the parameters must not depend on it (redrawn negatives).
            ctx: the clip's source record and the pool of other clips.

        Returns:
            The parameters, JSON-serialisable: what a pair record stores as the negative's recipe.
        """
        return {key: spec.sample(rng) for key, spec in self.ranges.items()}

    def unnoticed(self, params: dict) -> bool:
        """Whether a person would not tell this negative from its source: every parameter with a noticeable size is
        below it (never, for a strategy without one)."""
        sizes = {name: size for name, size in self.noticeable.items() if name in params}
        return bool(sizes) and all(abs(params[name]) < size for name, size in sizes.items())

    def apply(self, clip: MediaClip, params: dict, ctx: Context) -> MediaClip:
        """The negative: a pure function of the clip and the parameters, so a stored recipe re-applies
        bit-identically.

        Args:
            clip: the decoded source clip.
            params: what `sample` drew (or what a recipe stored).
            ctx: the clip's source record and the pool of other clips.

        Returns:
            The clip with its audio changed.

        Raises:
            PerturbError: the clip cannot take this negative (no audio, no pool, too short...).
        """
        raise NotImplementedError

    def kept_span(self, params: dict, duration: float, ctx: Context) -> tuple[float, float]:
        """Where, in the source's time (seconds), `apply`'s output of a ``duration``-second source holds both streams
        as real content: all of it, unless the strategy cuts the clip rather than pad it (a cropped time shift, a
        faster speed, a shorter clip's sound). A pair's window is drawn inside it."""
        return 0.0, duration

    def sample_fitting(
        self, rng: np.random.Generator, ctx: Context, window: dict, duration: float, tries: int = 20
    ) -> dict:
        """Parameters of one negative whose `kept_span` of a ``duration``-second source holds ``window`` (a pair's
        ``{start_s, duration_s}``, placed before its negative is drawn, as a positive's is): by default the first of
        ``tries`` draws that fits.

        Raises:
            PerturbError: none fits.
        """
        start, end = window["start_s"], window["start_s"] + window["duration_s"]
        for _ in range(tries):
            params = self.sample(rng, None, ctx)
            low, high = self.kept_span(params, duration, ctx)
            if low <= start + 1e-9 and end <= high + 1e-9:
                return params
        raise PerturbError(f"no draw of {self.name} in {tries} keeps the window at {start:.2f}-{end:.2f} s")

    def largest_cut(self) -> float:
        """The most seconds `kept_span` can take off a source under this strategy's ranges, not counting what depends
        on the source itself (a faster speed: a share of the source's length)."""
        return 0.0

    def __call__(self, clip: MediaClip, rng: np.random.Generator, ctx: Context | None = None):
        ctx = ctx or Context()
        params = self.sample(rng, clip, ctx)
        return self.apply(clip, params, ctx), params


STRATEGIES = Registry("strategy", PerturbError, "`avjudge perturb list` describes them")
register = STRATEGIES.register


def get_strategy(name: str, overrides: dict | None = None) -> Strategy:
    """The registered strategy ``name`` (see `avjudge perturb list`) with its ranges overridden.

    Raises:
        PerturbError: no strategy of that name (the message lists them), or a parameter it does not have.
    """
    return STRATEGIES.lookup(name)(overrides)


def tells_text(tells: tuple[str, ...]) -> str:
    """``tells`` as `avjudge perturb list` prints them: "none" where only the relation between the sides tells."""
    return ", ".join(tells) or "none"


@dataclass
class StrategyInfo:
    name: str
    family: str
    description: str
    parameters: dict[str, str] = field(default_factory=dict)
    tells: tuple[str, ...] = ()


def describe_all() -> list[StrategyInfo]:
    return [
        StrategyInfo(
            cls.name, cls.family, cls.description, {k: v.describe() for k, v in cls.defaults.items()}, cls.tells
        )
        for cls in STRATEGIES.values()
    ]
