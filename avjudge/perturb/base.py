"""Strategies, their parameter ranges and the registry every perturbation lives in.

A strategy is split in two so a negative can be stored as a recipe: ``sample`` draws the
parameters (from ranges a recipe may override) and ``apply`` is a pure function of the
clip and those parameters. Applying a stored recipe later, in a data loader or when
materialising files, gives bit-identical samples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..errors import AvjudgeError
from ..media import MediaClip
from ..registry import Registry
from .signal import difference_db


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


def _number(name: str, value) -> float:
    """``value`` as a finite float, or the `PerturbError` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PerturbError(f"{name} must be a finite number, not {value!r}")
    return float(value)


@dataclass(frozen=True)
class Bounds:
    """What a numeric parameter may be at all, whatever range a recipe draws it from: ``low`` and ``high`` inclusive
    (``low`` excluded where ``above``), a whole number where ``integer``. Out of them a strategy's output would be
    silently wrong (an order-0 filter passes the sound unchanged) or fail deep in a library."""

    low: float = -math.inf
    high: float = math.inf
    integer: bool = False
    above: bool = False

    def check(self, name: str, value) -> float:
        """``value``, checked: a finite number within the bounds.

        Raises:
            PerturbError: naming ``name``, the value and the bounds.
        """
        number = _number(name, value)
        too_low = number <= self.low if self.above else number < self.low
        if too_low or number > self.high or (self.integer and not number.is_integer()):
            raise PerturbError(f"{name} must be {self.describe()}, not {value!r}")
        return number

    def symmetric(self) -> Bounds:
        """The bounds of a signed value whose magnitude has these."""
        return Bounds(-self.high, self.high, self.integer)

    def describe(self) -> str:
        kind = "a whole number" if self.integer else "a number"
        ends = [f"{'above' if self.above else 'at least'} {self.low:g}" if math.isfinite(self.low) else ""]
        ends.append(f"at most {self.high:g}" if math.isfinite(self.high) else "")
        return " ".join([kind, " and ".join(e for e in ends if e)]).strip()


@dataclass(frozen=True)
class Range:
    """A numeric range; ``signed`` draws a random sign for a magnitude in [low, high]; ``bounds``: what the value (a
    signed one's magnitude) may be at all, which a recipe's range must keep to."""

    low: float
    high: float
    signed: bool = False
    unit: str = ""
    bounds: Bounds = Bounds()

    def sample(self, rng: np.random.Generator) -> float:
        value = float(rng.uniform(self.low, self.high))
        return -value if self.signed and rng.random() < 0.5 else value

    def describe(self) -> str:
        sign = "±" if self.signed else ""
        return f"{sign}{self.low:g}..{self.high:g}{(' ' + self.unit) if self.unit else ''}"

    def values(self) -> Bounds:
        """The bounds of a drawn value (a signed range draws both signs)."""
        return self.bounds.symmetric() if self.signed else self.bounds


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

    def known(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.options + self.allowed))

    def check(self, name: str, value) -> str:
        """``value``, one of the known options, or the `PerturbError` naming ``name`` and them."""
        if not isinstance(value, str) or value not in self.known():
            raise PerturbError(f"{name} must be one of {list(self.known())}, not {value!r}")
        return value


def parse_override(name: str, spec: Range | Choice, value) -> Range | Choice:
    """A recipe's override for parameter ``name``: [low, high] or one number for a Range (a signed one's magnitudes),
    an option or a list of them for a Choice.

    Raises:
        PerturbError: naming the parameter: not of that shape, low above high, or outside the parameter's bounds.
    """
    if isinstance(spec, Range):
        ends = [value] if isinstance(value, (int, float)) else value
        if not isinstance(ends, (list, tuple)) or len(ends) not in (1, 2):
            raise PerturbError(f"{name} takes a number or [low, high], not {value!r}")
        label = f"{name} (a magnitude: its sign is drawn)" if spec.signed else name
        checked = [spec.bounds.check(label, end) for end in ends]
        low, high = checked[0], checked[-1]
        if low > high:
            raise PerturbError(f"{name}: range {value} has low > high")
        return Range(low, high, spec.signed, spec.unit, spec.bounds)
    options = (value,) if isinstance(value, str) else tuple(value) if isinstance(value, (list, tuple)) else (value,)
    return Choice(tuple(spec.check(name, option) for option in options), spec.allowed)


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
        PerturbError: a parameter the strategy does not have, or a range outside its bounds.
    """

    name: ClassVar[str]
    family: ClassVar[str]
    description: ClassVar[str]
    defaults: ClassVar[dict[str, Range | Choice]] = {}
    tells: ClassVar[tuple[str, ...]] = ()
    needs_pool: ClassVar[bool] = False
    # parameter -> the smallest size of it a person notices: a negative below it is a tie with its source (`unnoticed`)
    noticeable: ClassVar[dict[str, float]] = {}
    noticeable_units: ClassVar[dict[str, str]] = {}  # the unit of each noticeable size, as messages print it
    # what `sample` stores in a pair record, parameter -> its bounds, its choice or its type; None: one value of
    # each default range or choice
    stored: ClassVar[dict[str, Bounds | Choice | type] | None] = None
    optional: ClassVar[tuple[str, ...]] = ()  # stored parameters a record may lack (records from before they were)

    def __init__(self, overrides: dict | None = None):
        self.ranges = dict(self.defaults)
        if not isinstance(overrides or {}, dict):
            raise PerturbError(f"{self.name}'s parameters are a mapping of name to range, not {overrides!r}")
        for key, value in (overrides or {}).items():
            if key not in self.defaults:
                raise PerturbError(f"{self.name} has no parameter {key!r}; it has {sorted(self.defaults)}")
            self.ranges[key] = parse_override(f"{self.name}.{key}", self.defaults[key], value)

    @classmethod
    def stored_params(cls) -> dict[str, Bounds | Choice | type]:
        """What a pair record of this strategy stores: parameter -> its bounds, its choice or its type."""
        if cls.stored is not None:
            return cls.stored
        return {key: spec.values() if isinstance(spec, Range) else spec for key, spec in cls.defaults.items()}

    @classmethod
    def check_params(cls, params) -> dict:
        """``params`` (a pair record's, or exact ones a user gives), checked against what this strategy stores: each
        parameter it needs there, none it does not know, each within its bounds.

        Raises:
            PerturbError: naming the strategy and the parameter.
        """
        if not isinstance(params, dict):
            raise PerturbError(f"{cls.name}'s parameters are a mapping, not {params!r}")
        schema = cls.stored_params()
        unknown = sorted(set(params) - set(schema))
        missing = sorted(set(schema) - set(params) - set(cls.optional))
        if unknown or missing:
            raise PerturbError(
                f"{cls.name} stores the parameters {sorted(schema)}"
                + (f"; unknown: {unknown}" if unknown else "")
                + (f"; missing: {missing}" if missing else "")
            )
        for key, value in params.items():
            spec = schema[key]
            if not isinstance(spec, type):
                spec.check(f"{cls.name}.{key}", value)
            elif not isinstance(value, spec) or isinstance(value, bool):
                raise PerturbError(f"{cls.name}.{key} must be a {spec.__name__}, not {value!r}")
        return params

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

    @classmethod
    def departure(cls, name: str, value: float) -> float:
        """How far ``value`` of the parameter ``name`` takes a clip from its source, in the unit of its noticeable
        size: its magnitude, unless a strategy measures it otherwise (a speed: the semitones its pitch moves)."""
        return abs(value)

    @classmethod
    def unnoticed(cls, params: dict) -> bool:
        """Whether a person would not tell this negative from its source: every parameter with a noticeable size is
        below it (never, for a strategy without one)."""
        sizes = {name: size for name, size in cls.noticeable.items() if name in params}
        return bool(sizes) and all(cls.departure(name, params[name]) < size for name, size in sizes.items())

    @classmethod
    def unnoticed_reason(cls, params: dict) -> str | None:
        """Why a negative of ``params`` would equal its source to a listener (`unnoticed`), in words; else None."""
        if not cls.unnoticed(params):
            return None
        sizes = ", ".join(
            f"{name} {params[name]:g} moves it {cls.departure(name, params[name]):.3g}, under the {size:g}"
            f"{cls.noticeable_units.get(name, '')} a person notices"
            for name, size in cls.noticeable.items()
            if name in params  # as `unnoticed` reads them
        )
        return f"{cls.name}: {sizes}: a negative equal to its source to the ear"

    def least_departure(self) -> dict[str, float]:
        """The smallest `departure` of each parameter with a noticeable size that this strategy's ranges can draw."""
        least = {}
        for name in self.noticeable:
            spec = self.ranges.get(name)
            if isinstance(spec, Range):
                low, high = spec.low, spec.high  # a signed range draws magnitudes in [low, high]
                nearest = low if spec.signed or low >= 0 else (0.0 if high >= 0 else high)
                least[name] = self.departure(name, nearest)
        return least

    def reaches_unnoticed(self) -> str | None:
        """Why this strategy's ranges can draw a negative a person would not tell from its source; else None."""
        least = self.least_departure()
        below = {name: value for name, value in least.items() if value < self.noticeable[name]}
        if not below or len(below) < len(least):
            return None
        return ", ".join(
            f"{self.name}.{name} draws changes down to {value:.3g}, under the {self.noticeable[name]:g}"
            f"{self.noticeable_units.get(name, '')} a person notices"
            for name, value in below.items()
        )

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


def change_db(source: MediaClip, negative: MediaClip) -> float:
    """How far ``negative``'s sound is from ``source``'s over the negative's own span of the source (it may be a
    window of it), in dB against the source's level (`difference_db`; under `UNCHANGED_DB`: the source again)."""
    offset = negative.start - source.start
    same_span = (
        source.window(offset, min(negative.duration, source.duration - offset))
        if offset or (negative.duration < source.duration)
        else source
    )
    return difference_db(audio_of(same_span), audio_of(negative))


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
