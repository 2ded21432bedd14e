"""What a reward hands a trainer for a clip it could not score: a value the trainer can take, never one that crashes
it or poisons its group's advantages, and never a silent 0.

``on_failure`` is one of:

- ``neutral``: each failed term takes the mean of the same call's good values of that term, else the running mean of
  its recent good values, else its midpoint (a judge's S: 0.5; its delta: 0; a metric: the middle of its documented
  scale); the reward is then the weighted mean as usual. A group's advantages barely move.
- ``none``: the reward is None (TRL leaves such a sample out of its group's baseline).
- ``nan``: the reward is NaN (for trainers that mask NaN themselves).
- a number: the reward is that number.

Whatever the rule, the failure is reported beside the reward (``failed``: 1.0), and each term's value there is the
neutral one, so extra information is always finite numbers.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from ..config import ConfigError

RULES = ("neutral", "none", "nan")


@dataclass(frozen=True)
class OnFailure:
    """A failure rule: ``neutral``, ``none``, ``nan`` or a number."""

    rule: str | float = "neutral"

    def __post_init__(self):
        if isinstance(self.rule, str) and self.rule not in RULES:
            try:
                object.__setattr__(self, "rule", float(self.rule))
            except ValueError:
                raise ConfigError(f"on_failure {self.rule!r}: give neutral, none, nan or a number") from None
        if isinstance(self.rule, (int, float)) and not math.isfinite(self.rule):
            raise ConfigError(f"on_failure {self.rule}: a number must be finite (use nan to ask for NaN)")

    def reward(self, neutral: float) -> float | None:
        """The reward of a sample that failed, ``neutral`` being its neutral reward."""
        if self.rule == "neutral":
            return neutral
        if self.rule == "none":
            return None
        if self.rule == "nan":
            return math.nan
        return float(self.rule)


@dataclass
class RunningMeans:
    """Each term's recent good values (``window`` of them), for a neutral value when a whole call failed."""

    window: int = 256
    recent: dict[str, deque] = field(default_factory=dict)

    def add(self, term: str, values: list[float]) -> None:
        self.recent.setdefault(term, deque(maxlen=self.window)).extend(values)

    def mean(self, term: str) -> float | None:
        values = self.recent.get(term)
        return sum(values) / len(values) if values else None
