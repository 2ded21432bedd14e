"""What a reward hands a trainer for a clip it could not score: a value the trainer can take, never one that crashes
it or poisons its group's advantages, and never a silent 0.

``on_failure`` is one of:

- ``neutral``: each failed term takes the mean of the good values of that term in the sample's own group (GRPO's
  group: the samples of one prompt; `avjudge.rewards.sample`'s ``group``), so the failed sample's advantage is 0
  and its group's mean is unchanged (its standard deviation shrinks a little: one value sits at the mean). Where
  the call holds no good value of the group: the group's recent good values from earlier calls, else the call's
  mean, else the running mean of the term's recent good values, else its midpoint (a judge's S: 0.5; its delta: 0;
  a metric: the middle of its documented scale). The reward is then the weighted mean as usual.
- ``none``: the reward is None (TRL leaves such a sample out of its group's baseline).
- ``nan``: the reward is NaN (for trainers that mask NaN themselves).
- a number: the reward is that number.

Whatever the rule, the failure is reported beside the reward (``failed``: 1.0), and each term's value there is the
neutral one, so extra information is always finite numbers.
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
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


GROUPS_KEPT = 4096  # groups whose recent good values are remembered (the least recently seen are forgotten)


@dataclass
class RunningMeans:
    """Each term's recent good values (``window`` of them), overall and per group, for a neutral value where a call
    holds no good value of a failed sample's group."""

    window: int = 256
    recent: dict[str, deque] = field(default_factory=dict)
    by_group: OrderedDict = field(default_factory=OrderedDict)  # (term, group) -> its recent good values

    def add(self, term: str, values: list[float]) -> None:
        self.recent.setdefault(term, deque(maxlen=self.window)).extend(values)

    def add_group(self, term: str, group, values: list[float]) -> None:
        key = (term, group)
        self.by_group.setdefault(key, deque(maxlen=self.window)).extend(values)
        self.by_group.move_to_end(key)
        while len(self.by_group) > GROUPS_KEPT:
            self.by_group.popitem(last=False)

    def mean(self, term: str, group=None) -> float | None:
        values = self.recent.get(term) if group is None else self.by_group.get((term, group))
        return sum(values) / len(values) if values else None
