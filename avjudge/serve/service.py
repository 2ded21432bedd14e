"""What the reward server scores, without the server: loaded judges and metrics, and a batch of items scored with
one result each, in order. An item that cannot be scored gets its error, never a score of 0.

An item is ``{"id", "judge", "video"?, "audio"?, "text"?, "utterance"?, "output"?}``: ``judge`` names a loaded judge
(its task: ``av``, ``vt``, ``at``) or a loaded metric (``dnsmos``...; ``output`` picks one of its outputs, else its
first); ``video`` and ``audio`` are files the server can read (``audio`` replaces the video's own track), or
uploads the server wrote to disk first. A result is ``{"id", "score", "delta", "p_yes", "p_no", "error"}`` (a
metric's result has its outputs under ``values`` and no delta or probabilities).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import AvjudgeError
from ..scoring import JudgeScorer, MetricScorer, Scoring, captions_of


class ItemError(AvjudgeError, ValueError):
    """A request item that does not fit the schema (a 4xx for the whole request: the caller's bug, not a bad clip)."""


@dataclass(frozen=True)
class ScoreItem:
    id: str
    judge: str
    video: str | None = None
    audio: str | None = None
    text: str | None = None
    utterance: str | None = None
    output: str | None = None

    @classmethod
    def parse(cls, raw: Any, index: int) -> ScoreItem:
        """An item of a request, its fields checked; a malformed one is an `ItemError` naming its place."""
        where = f"items[{index}]"
        if not isinstance(raw, dict):
            raise ItemError(f"{where}: an item is an object, not {type(raw).__name__}")
        unknown = sorted(set(raw) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ItemError(f"{where}: unknown field(s) {unknown}")
        for name in ("id", "judge"):
            if not isinstance(raw.get(name), str) or not raw[name]:
                raise ItemError(f"{where}: {name} is a non-empty string")
        for name in ("video", "audio", "text", "utterance", "output"):
            if raw.get(name) is not None and not isinstance(raw[name], str):
                raise ItemError(f"{where}: {name} is a string")
        if not raw.get("video") and not raw.get("audio"):
            raise ItemError(f"{where}: give a video or an audio file")
        return cls(**raw)


def result(item_id: str, error: str | None = None, **figures) -> dict:
    return {"id": item_id, "score": None, "delta": None, "p_yes": None, "p_no": None, "error": error, **figures}


@dataclass
class ScoreService:
    """Loaded judges (task -> `avjudge.judges.Judge`) and metrics (name -> `avjudge.metrics.Metric`) behind one
    ``score(items)``, through the scoring core: each clip is decoded once per batch for every item that names it."""

    judges: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    decode_workers: int = 2

    def __post_init__(self):
        scorers = [JudgeScorer(j, task) for task, j in self.judges.items()]
        self.scoring = Scoring(scorers + [MetricScorer(m) for m in self.metrics.values()], self.decode_workers)

    def names(self) -> list[str]:
        return [*self.judges, *self.metrics]

    def check(self, item: ScoreItem, index: int) -> None:
        """A malformed item fails the request: a judge the server does not hold, or a judge without its text."""
        if item.judge not in self.judges and item.judge not in self.metrics:
            raise ItemError(f"items[{index}]: no judge or metric {item.judge!r} here; this server has {self.names()}")
        if item.judge in self.judges and self.judges[item.judge].task.needs_text and item.text is None:
            raise ItemError(f"items[{index}]: the {item.judge} judge needs the item's text")

    def describe(self) -> dict:
        """What is served: each judge's checkpoint, a hash of its weight files and of the prompt it is asked (its
        question and system turn), and the metrics."""
        from .. import __version__

        models = [
            {
                "name": task,
                "kind": "judge",
                "checkpoint": str(j.adapter.checkpoint),
                "weights": _files_hash(j.adapter.checkpoint),
                "prompt": hashlib.sha256(f"{j.task.query}\n{j.settings.system_prompt}".encode()).hexdigest()[:16],
            }
            for task, j in self.judges.items()
        ]
        models += [{"name": name, "kind": "metric"} for name in self.metrics]
        return {"models": models, "version": __version__}

    def items(self, records: Sequence[dict]) -> list[ScoreItem]:
        """Items as the server takes them (JSON objects), parsed and checked against what is served."""
        items = [ScoreItem.parse(raw, k) for k, raw in enumerate(records)]
        for k, item in enumerate(items):
            self.check(item, k)
        return items

    def score_records(self, records: Sequence[dict]) -> list[dict]:
        """The server's contract in process: items as JSON objects, checked, then scored."""
        return self.score(self.items(records))

    def score(self, items: Sequence[ScoreItem]) -> list[dict]:
        """One result per item, in order; what failed carries its error. The batch's distinct clips are decoded
        in parallel (``decode_workers`` threads), each once for every item that names it."""
        asked = [
            {
                "video": item.video,
                "audio": item.audio,
                "captions": captions_of(item.text, item.utterance),
                "scorers": [item.judge],
            }
            for item in items
        ]
        return [self._result(item, scored) for item, scored in zip(items, self.scoring.score(asked))]

    def _result(self, item: ScoreItem, scored) -> dict:
        outcome = scored.outcome(item.judge)
        if not outcome.ok:
            return result(item.id, outcome.error)
        values = outcome.values
        if item.judge in self.judges:
            return result(
                item.id, score=values["score"], delta=values["delta"], p_yes=values["yes_prob"], p_no=values["no_prob"]
            )
        name = item.output or next(iter(values))
        if name not in values:
            return result(item.id, f"{item.judge} has no output {name!r}; it gives {sorted(values)}")
        return result(item.id, score=values[name], values=values)


def _files_hash(folder: Path) -> str:
    """A hash of a checkpoint's weight files by name, size and first megabyte: cheap, and it changes with them."""
    digest = hashlib.sha256()
    for path in sorted(Path(folder).glob("*.safetensors")):
        digest.update(path.name.encode())
        digest.update(str(path.stat().st_size).encode())
        with open(path, "rb") as f:
            digest.update(f.read(1 << 20))
    return digest.hexdigest()[:16]
