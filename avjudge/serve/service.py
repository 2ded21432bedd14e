"""What the reward server scores, without the server: loaded judges and metrics, and a batch of items scored with
one result each, in order. An item that cannot be scored gets its error, never a score of 0.

An item is ``{"id", "judge", "video"?, "audio"?, "text"?, "utterance"?, "output"?}``: ``judge`` names a loaded judge
(its task: ``av``, ``vt``, ``at``) or a loaded metric (``dnsmos``...; ``output`` picks one of its outputs, else its
first); ``video`` and ``audio`` are files the server can read (``audio`` replaces the video's own track), or
uploads the server wrote to disk first. A result is ``{"id", "score", "delta", "p_yes", "p_no", "error"}`` (a
metric's result has its outputs under ``values`` and no delta or probabilities).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import AvjudgeError
from ..media import DecodeBudget, MediaClip
from ..scoring import JudgeScorer, MetricScorer, Scoring, captions_of
from ..stats import finite_number


class ItemError(AvjudgeError, ValueError):
    """A request item that does not fit the schema (a 4xx for the whole request: the caller's bug, not a bad clip)."""


MAX_TEXT_CHARS = 8192  # the longest text field an item may hold: scoring 100,000 characters held a judge 8.4 s
# What one clip may cost the server to decode (`avjudge.media.DecodeBudget`), by default: 5 minutes (Qwen-Omni's
# audio window, the longest a judge reads), frames up to 4K UHD as stored, 1 GiB held once decoded (frames at the
# size the judges read them), 60 s of decoding.
SERVER_BUDGET = DecodeBudget(max_seconds=300.0, max_frame_pixels=3840 * 2160, max_decoded_mb=1024.0, timeout_s=60.0)


@dataclass(frozen=True)
class ScoreItem:
    id: str
    judge: str
    video: str | bytes | None = None  # a path the server reads, or the bytes of a ``video_b64`` upload
    audio: str | bytes | None = None
    clip: str | None = None  # the name of a clip in memory the request carries (`avjudge.media.pack_clip`)
    text: str | None = None
    utterance: str | None = None
    output: str | None = None
    media: MediaClip | None = field(default=None, repr=False)  # that clip, once the request's clips are read

    @classmethod
    def parse(cls, raw: Any, index: int) -> ScoreItem:
        """An item of a request, its fields checked; a malformed one is an `ItemError` naming its place."""
        where = f"items[{index}]"
        if not isinstance(raw, dict):
            raise ItemError(f"{where}: an item is an object, not {type(raw).__name__}")
        allowed = {f.name for f in dataclasses.fields(cls)} - {"media"} | set(UPLOADS)  # a clip arrives by name
        unknown = sorted(set(raw) - allowed)
        if unknown:
            raise ItemError(f"{where}: unknown field(s) {unknown}")
        raw = {k: v for k, v in raw.items() if k not in UPLOADS} | _uploads(raw, where)
        for name in ("id", "judge"):
            if not isinstance(raw.get(name), str) or not raw[name]:
                raise ItemError(f"{where}: {name} is a non-empty string")
        for name in ("clip", "text", "utterance", "output"):
            if raw.get(name) is not None and not isinstance(raw[name], str):
                raise ItemError(f"{where}: {name} is a string")
        for name in ("id", "judge", "video", "audio", "clip", "text", "utterance", "output"):
            if isinstance(raw.get(name), str) and len(raw[name]) > MAX_TEXT_CHARS:  # a judge's prompt is far shorter
                raise ItemError(f"{where}: {name} is {len(raw[name])} characters long; at most {MAX_TEXT_CHARS}")
        for name in ("video", "audio"):
            if raw.get(name) is not None and not isinstance(raw[name], (str, bytes)):
                raise ItemError(f"{where}: {name} is a path (or {name}_b64 its bytes in base64)")
        for name in ("id", "judge", "video", "audio", "clip", "text", "utterance", "output"):
            try:  # JSON may carry a lone surrogate ("\ud800") that no answer can hold
                if isinstance(raw.get(name), str):
                    raw[name].encode("utf-8")
            except UnicodeEncodeError:
                raise ItemError(f"{where}: {name} is not valid UTF-8 (a lone surrogate)") from None
        if raw.get("video") is None and raw.get("audio") is None and not raw.get("clip"):
            raise ItemError(f"{where}: give a video or an audio file, or the name of a clip the request carries")
        return cls(**raw)


UPLOADS = {"video_b64": "video", "audio_b64": "audio"}


def _uploads(raw: dict, where: str) -> dict:
    """An item's base64 uploads as the bytes of its ``video`` / ``audio`` (decoded in memory, never written)."""
    decoded = {}
    for upload, target in UPLOADS.items():
        if upload not in raw:
            continue
        if raw.get(target) is not None:
            raise ItemError(f"{where}: give {target} or {upload}, not both")
        if not isinstance(raw[upload], str):
            raise ItemError(f"{where}.{upload}: an upload is a base64 text")
        try:
            decoded[target] = base64.b64decode(raw[upload], validate=True)
        except (binascii.Error, ValueError) as err:
            raise ItemError(f"{where}.{upload}: not base64 ({err})") from err
    return decoded


def result(item_id: str, error: str | None = None, **figures) -> dict:
    return {"id": item_id, "score": None, "delta": None, "p_yes": None, "p_no": None, "error": error, **figures}


@dataclass
class ScoreService:
    """Loaded judges (task -> `avjudge.judges.Judge`) and metrics (name -> `avjudge.metrics.Metric`) behind one
    ``score(items)``, through the scoring core: each clip is decoded once per batch for every item that names it,
    within ``budget`` (a clip past it is that item's error)."""

    judges: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    decode_workers: int = 2
    # processes the decoding threads hand decoding to (None: one per core the model's process leaves where a judge is
    # on a GPU, else none; 0: the threads decode; `avjudge.media.processes.decoding_processes`)
    decode_processes: int | None = None
    budget: DecodeBudget = SERVER_BUDGET

    def __post_init__(self):
        scorers = [JudgeScorer(j, task) for task, j in self.judges.items()]
        metrics = [MetricScorer(m) for m in self.metrics.values()]
        self.scoring = Scoring(scorers + metrics, self.decode_workers, self.decode_processes, self.budget)

    def names(self) -> list[str]:
        return [*self.judges, *self.metrics]

    def check(self, item: ScoreItem, index: int) -> None:
        """A malformed item fails the request: a judge the server does not hold, or a judge without its text."""
        if item.judge not in self.judges and item.judge not in self.metrics:
            raise ItemError(f"items[{index}]: no judge or metric {item.judge!r} here; this server has {self.names()}")
        if item.judge in self.judges and self.judges[item.judge].task.needs_text and item.text is None:
            raise ItemError(f"items[{index}]: the {item.judge} judge needs the item's text")

    def describe(self) -> dict:
        """What is served: each judge's task, checkpoint, a hash of its weight files and of the prompt it is asked
        (its question and system turn); each metric's aspect and output scales; and what each reads of a clip, so a
        client sends a clip in memory as the server would decode it."""
        from .. import __version__

        models = [
            {
                "name": task,
                "kind": "judge",
                "task": j.task.name,
                "needs": dataclasses.asdict(j.needs),
                "checkpoint": str(j.adapter.checkpoint),
                "weights": _files_hash(j.adapter.checkpoint),
                "prompt": hashlib.sha256(f"{j.task.query}\n{j.settings.system_prompt}".encode()).hexdigest()[:16],
                "preference": j.preference.to_dict(),  # how it compares clips (win-rate rewards, `compare`)
            }
            for task, j in self.judges.items()
        ]
        models += [
            {
                "name": name,
                "kind": "metric",
                "needs": dataclasses.asdict(m.needs),
                "aspect": m.aspect,
                "scales": {k: list(v) for k, v in m.scales.items()},
            }
            for name, m in self.metrics.items()
        ]
        return {"models": models, "version": __version__}

    def items(self, records: Sequence[dict], clips: dict[str, MediaClip] | None = None) -> list[ScoreItem]:
        """Items as the server takes them (JSON objects), parsed and checked against what is served; an item naming
        a clip gets that clip of ``clips``."""
        items = [ScoreItem.parse(raw, k) for k, raw in enumerate(records)]
        for k, item in enumerate(items):
            self.check(item, k)
            if item.clip is not None:
                if item.clip not in (clips or {}):
                    raise ItemError(f"items[{k}].clip: the request carries no clip {item.clip!r}")
                items[k] = dataclasses.replace(item, media=clips[item.clip])
        return items

    def score_records(self, records: Sequence[dict], clips: dict[str, MediaClip] | None = None) -> list[dict]:
        """The server's contract in process: items as JSON objects (and the clips in memory they name), checked,
        then scored."""
        return self.score(self.items(records, clips))

    def score(self, items: Sequence[ScoreItem]) -> list[dict]:
        """One result per item, in order; what failed carries its error. The batch's distinct clips are decoded
        in parallel (``decode_workers`` threads), each once for every item that names it."""
        return self.results(items, self.scoring.score([self.core_item(item) for item in items]))

    @staticmethod
    def core_item(item: ScoreItem) -> dict:
        """The scoring core's item of a request item: its media, its captions, the one scorer it names."""
        media = {"media": item.media} if item.media is not None else {"video": item.video, "audio": item.audio}
        return {**media, "captions": captions_of(item.text, item.utterance), "scorers": [item.judge]}

    def results(self, items: Sequence[ScoreItem], records: Sequence) -> list[dict]:
        """The results of request items from the core's records of their `core_item` s."""
        return [self._result(item, record) for item, record in zip(items, records)]

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
        if not finite_number(values[name]):
            return result(item.id, f"{item.judge}'s {name} is {values[name]!r}, not a finite number")
        return result(
            item.id, score=values[name], values={k: v if finite_number(v) else None for k, v in values.items()}
        )


def _files_hash(folder: Path) -> str:
    """A hash of a checkpoint's weight files by name, size and first megabyte: cheap, and it changes with them."""
    digest = hashlib.sha256()
    for path in sorted(Path(folder).glob("*.safetensors")):
        digest.update(path.name.encode())
        digest.update(str(path.stat().st_size).encode())
        with open(path, "rb") as f:
            digest.update(f.read(1 << 20))
    return digest.hexdigest()[:16]
