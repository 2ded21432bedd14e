"""A watch against reward hacking during RL: a reward's held-out "gold" terms (`RewardTerm(..., gold=True)`: a second
judge, DeSync, a metric the policy is not trained on) are scored and logged beside the reward but never optimised,
and when the reward rises while a gold term falls for ``patience`` logs in a row, a `RewardHacking` warning names
both (Flow-GRPO's maintainers' "proxy score continues to rise while the gold score declines").

A log is one call of the reward (a trainer's step); each compares the mean over the samples that did not fail with
the previous call's.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field

log = logging.getLogger(__name__)


class RewardHacking(UserWarning):
    """The optimised reward rose while a held-out gold term fell, log after log."""


@dataclass
class GoldWatch:
    """Counts, per gold term, the consecutive logs in which the reward rose and the term fell; warns at
    ``patience`` (then counts anew, so a long decline warns again every ``patience`` logs)."""

    patience: int = 5
    previous: dict[str, float] = field(default_factory=dict)
    streaks: dict[str, int] = field(default_factory=dict)
    warned: list[str] = field(default_factory=list)

    def __post_init__(self):
        if self.patience < 1:
            raise ValueError(f"the gold watch's patience is at least one log, not {self.patience}")

    def observe(self, reward: float | None, gold: dict[str, float]) -> list[str]:
        """One log: the reward's mean and each gold term's; the warnings it gave (also issued as `RewardHacking`)."""
        if reward is None:
            return []
        given = []
        last = self.previous.get("reward")
        for name, value in gold.items():
            before = self.previous.get(name)
            rising = last is not None and reward > last
            falling = before is not None and value < before
            self.streaks[name] = self.streaks.get(name, 0) + 1 if rising and falling else 0
            if self.streaks[name] >= self.patience:
                message = (
                    f"reward hacking? the reward rose and the gold term {name!r} fell in each of the last "
                    f"{self.patience} logs (reward {reward:.4g}, {name} {value:.4g}): look at the latest samples"
                )
                warnings.warn(message, RewardHacking, stacklevel=4)
                log.warning("avjudge: %s", message)
                given.append(message)
                self.streaks[name] = 0
            self.previous[name] = value
        self.previous["reward"] = reward
        self.warned += given
        return given
