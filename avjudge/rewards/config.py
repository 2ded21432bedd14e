"""A reward as a YAML file: its terms (judges by checkpoint, metrics by name), weights and failure rule, so a reward
travels by name to a trainer's own loader (Flow-Factory's ``reward_model``) and to `avjudge rewards audit`.

```yaml
terms:
  av: {judge: av, checkpoint: runs/av/final, weight: 2}
  vt: {judge: vt, checkpoint: runs/vt/final}
  quality: {metric: dnsmos, output: dnsmos_ovrl, weight: 0.5}
  second_opinion: {judge: av, checkpoint: runs/av_other/final, gold: true}   # watched, not optimised
on_failure: neutral
mode: pointwise        # or win_rate: each rollout's expected win rate in its group (avjudge.rewards.Reward)
device: auto
```
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..config import ConfigError, load_config
from ..errors import AvjudgeError
from ..metrics.base import METRICS
from ..prompts import task as judge_task
from .failure import OnFailure
from .reward import ASPECTS, MODES, check_weights


@dataclass
class TermConfig:
    """One term: a ``judge`` task (av, vt, at) with its ``checkpoint`` folder, or a ``metric``'s registry name;
    `avjudge.rewards.RewardTerm`'s weight, output, aspect and midpoint."""

    judge: str | None = None
    checkpoint: str | None = None
    metric: str | None = None
    weight: float = 1.0
    output: str | None = None
    aspect: str | None = None
    midpoint: float | None = None
    gold: bool = False  # held out: logged and watched (avjudge.rewards.watch), not optimised

    def __post_init__(self):
        if (self.judge is None) == (self.metric is None):
            raise ConfigError("a reward term names a judge (judge: av, checkpoint: DIR) or a metric (metric: NAME)")
        if self.judge is not None and not self.checkpoint:
            raise ConfigError(f"the {self.judge} judge's term needs its checkpoint folder (checkpoint: DIR)")
        # checked here, before any model loads, rather than after the judges before them did
        try:
            judge_task(self.judge) if self.judge is not None else METRICS.lookup(self.metric)
        except AvjudgeError as err:  # an unknown judge or metric
            raise ConfigError(str(err)) from err
        if self.aspect is not None and self.aspect not in ASPECTS:
            raise ConfigError(f"aspect {self.aspect!r} is not one of {', '.join(ASPECTS)}")


@dataclass
class RewardConfig:
    """A reward's terms by name, its failure rule (`avjudge.rewards.failure`), and where its models run."""

    terms: dict[str, TermConfig] = field(default_factory=dict)
    on_failure: str = "neutral"
    use_delta: bool = False
    mode: str = "pointwise"
    watch_patience: int = 5  # logs in a row of the reward rising while a gold term falls before a warning
    device: str = "auto"
    batch_size: int = 8
    workers: int = 2

    def __post_init__(self):
        if self.mode not in MODES:
            raise ConfigError(f"mode is one of {', '.join(MODES)}, not {self.mode!r}")
        OnFailure(self.on_failure)  # its own check of the rule
        small = {k: v for k, v in (("watch_patience", self.watch_patience), ("batch_size", self.batch_size),
                                   ("workers", self.workers)) if v < 1}  # fmt: skip
        if small:
            raise ConfigError(f"{', '.join(small)} must be at least 1, got {small}")
        if self.terms:
            check_weights(self.terms)

    def build(self, base: Path | None = None):
        """The `avjudge.rewards.Reward`; a relative checkpoint is read from ``base`` (the YAML file's folder)."""
        from ..judges import Judge
        from ..metrics import get_metric
        from ..metrics.base import METRICS
        from .reward import Reward, RewardTerm

        if not self.terms:
            raise ConfigError("a reward needs at least one term (terms: NAME: {judge: ..., checkpoint: ...})")
        terms = {}
        for name, term in self.terms.items():
            if term.judge is not None:
                folder = Path(term.checkpoint).expanduser()
                folder = folder if folder.is_absolute() or base is None else base / folder
                scorer = Judge.load(term.judge, folder, device=self.device, batch_size=self.batch_size,
                                    workers=self.workers)  # fmt: skip
            else:
                scorer = get_metric(term.metric, **({"device": self.device} if METRICS.lookup(term.metric).takes_device
                                                     else {}))  # fmt: skip
            terms[name] = RewardTerm(scorer, term.weight, term.output, term.aspect, term.midpoint, gold=term.gold)
        return Reward(terms, on_failure=self.on_failure, use_delta=self.use_delta, workers=self.workers,
                      mode=self.mode, watch_patience=self.watch_patience)  # fmt: skip


def load_reward(path: str | Path, overrides: list[str] | None = None):
    """The `avjudge.rewards.Reward` a YAML file describes (`RewardConfig`), with ``key=value`` overrides on top."""
    path = Path(path)
    return load_config(RewardConfig, path, overrides).build(path.parent)
