"""What both engines' operators share: the scorer of the dimensions they ask for, built once per worker (where the
engine runs it), each clip's statistics, and the keep rule of `avjudge filter`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from ..config import ConfigError
from ..filter import Rule, verdict
from ..scoring.dimensions import parse_dimensions

ERROR = "error"  # the statistic that holds why a clip was not scored ("" where it was)
PREFIX = "avjudge_"  # every statistic's key: avjudge_<dimension>, avjudge_error


def stat_key(name: str) -> str:
    return PREFIX + name


@dataclass
class EngineScorer:
    """The dimensions (``"av,dnsmos"``: `avjudge.scoring.dimensions`), the judge folders by task, the thresholds
    (``min`` / ``max`` by dimension), and where models run. The `ClipScorer` is built on first use, in the worker
    the engine runs it in, and kept there."""

    dimensions: str = "av"
    judges: dict[str, str] = field(default_factory=dict)
    min: dict[str, float] = field(default_factory=dict)
    max: dict[str, float] = field(default_factory=dict)
    device: str = "auto"
    batch_size: int = 8
    workers: int = 2

    def __post_init__(self):
        named = [d.name for d in parse_dimensions(self.dimensions)]
        unknown = sorted((set(self.min) | set(self.max)) - set(named))
        if unknown:
            raise ConfigError(f"thresholds on {unknown}, which are not among the dimensions scored ({named})")
        self.names = named
        # the thresholds as `avjudge filter`'s rules: ``min`` is ``>=``, ``max`` is ``<=``
        self.rules = [Rule(d, ">=", float(v)) for d, v in self.min.items()] + [
            Rule(d, "<=", float(v)) for d, v in self.max.items()
        ]
        self._scorer = None

    def scorer(self):
        if self._scorer is None:
            from ..scoring.clip_scorer import ClipScorer

            dirs = {task: Path(folder).expanduser() for task, folder in self.judges.items()}
            options = {"device": self.device, "batch_size": self.batch_size}
            self._scorer = ClipScorer(parse_dimensions(self.dimensions), dirs, options, self.workers)
        return self._scorer

    def score(self, media: list, captions: list[dict | None]) -> list[dict]:
        """One dimension record per clip (a path or encoded bytes), in order (`ClipScorer.score`)."""
        items = [{"video": m, "captions": c or {}} for m, c in zip(media, captions)]
        return self.scorer().score(items) if items else []

    def statistics(self, record: dict) -> dict[str, float | str]:
        """A clip's statistics: each dimension's score (NaN where it was not scored) and why it was not."""
        scores = record.get("scores") or {}
        stats: dict[str, float | str] = {stat_key(d): float(scores.get(d, math.nan)) for d in self.names}
        why = record.get("error") or "; ".join(f"{d}: {e}" for d, e in (record.get("errors") or {}).items())
        stats[stat_key(ERROR)] = why or ""
        return stats

    def passes(self, record: dict) -> bool:
        """Whether a clip is kept: scored on every dimension a threshold names, and within them
        (`avjudge.filter.verdict`: a clip that failed is never kept)."""
        return verdict(record, self.rules)[0] == "kept"
