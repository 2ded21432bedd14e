"""Judges and metrics behind one protocol, so that every job scores clips the same way.

A scorer says what it reads of a clip (``needs``, a `avjudge.media.DecodeNeeds`) and scores a batch of decoded clips
with their captions (``{"video", "audio", "utterance"}``: the texts a judge or metric may check), giving one `Outcome`
per clip, in order: its values, or why that clip could not be scored. One clip never raises for the batch, and a
failure is never a 0. Only a fault of the run itself (a bug, no memory; `avjudge.errors.is_run_fault`) raises.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

from ..errors import AvjudgeError, is_run_fault, reason
from ..media import NATIVE_FPS, DecodeNeeds, MediaClip
from ..stats import is_number

if TYPE_CHECKING:  # the core imports no model code: a job that decodes only (a Ray task) loads no torch
    from ..judges import Judge
    from ..metrics import Metric


@dataclass(frozen=True)
class Outcome:
    """One clip scored by one scorer: its ``values`` (output name -> number), or the ``error`` that kept it from
    being scored."""

    values: dict | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class Scorer(Protocol):
    kind: ClassVar[str]  # "judge" or "metric"
    batched: ClassVar[bool]  # scores a batch of clips together (else one clip at a time)
    name: str  # how records name it: a judge's task (av, vt, at), a metric's registry name
    needs: DecodeNeeds
    # holds Python's lock while it works (a model on a GPU launching kernels): clips are best decoded in other processes
    holds_interpreter: bool

    def score(self, clips: Sequence[MediaClip], captions: Sequence[dict]) -> list[Outcome]:
        """One outcome per clip, in order."""
        ...


def captions_of(text: str | None = None, utterance: str | None = None) -> dict:
    """Captions from one text (what a caller gives a ``vt`` or ``at`` judge alike) and a spoken line."""
    return {"video": text, "audio": text, "utterance": utterance}


def caption_for(task, captions: dict | None) -> str | None:
    """The caption a judge of ``task`` reads: a ``vt`` judge the video caption, an ``at`` judge the audio caption, an
    ``av`` judge none (the one place that rule lives)."""
    return (captions or {}).get(task.caption_field) if task.caption_field else None


class JudgeScorer:
    """A Yes / No judge: its values are `avjudge.judges.ScoreResult`'s numbers (score, delta, mass, yes_prob,
    no_prob). It reads the caption `caption_for` names, and an ``at`` judge the spoken line too; a clip without the
    caption its judge reads is that clip's error."""

    kind: ClassVar[str] = "judge"
    batched: ClassVar[bool] = True

    def __init__(self, judge: Judge, name: str | None = None):
        self.judge = judge
        self.name = name or judge.task.name

    @property
    def needs(self) -> DecodeNeeds:
        return self.judge.needs

    @property
    def holds_interpreter(self) -> bool:
        return self.judge.holds_interpreter

    def score(self, clips: Sequence[MediaClip], captions: Sequence[dict]) -> list[Outcome]:
        field = self.judge.task.caption_field
        outcomes: list[Outcome | None] = [None] * len(clips)
        todo = []
        for i, caption in enumerate(captions):
            if field and not caption_for(self.judge.task, caption):
                outcomes[i] = Outcome(error=f"no {field} caption for the {self.name} judge")
            else:
                todo.append(i)
        for i, outcome in zip(todo, self._judged([clips[i] for i in todo], [captions[i] for i in todo])):
            outcomes[i] = outcome
        return outcomes

    def _judged(self, clips: list[MediaClip], captions: list[dict]) -> list[Outcome]:
        """The judge's outcomes of clips whose captions it has. Where the batch's forward pass raises (a clip the
        model cannot take: one frame, one sample), each clip is judged alone, so the bad one fails by itself."""
        if not clips:
            return []
        texts = [caption_for(self.judge.task, c) for c in captions] if self.judge.task.caption_field else None
        spoken = [(c or {}).get("utterance") or None for c in captions] if self.judge.task.name == "at" else None
        try:
            results = self.judge.score(clips, texts, spoken)
        except Exception as err:
            if is_run_fault(err):
                raise
            if len(clips) == 1:
                return [Outcome(error=reason(err))]
            return [outcome for k in range(len(clips)) for outcome in self._judged([clips[k]], [captions[k]])]
        return [judge_outcome(r) for r in results]


def judge_outcome(result) -> Outcome:
    """A judge's result (`avjudge.judges.ScoreResult`) as an outcome: its numbers, or its error."""
    if result.error:
        return Outcome(error=result.error)
    return Outcome(values={k: v for k, v in result.to_dict().items() if k != "error"})


class MetricScorer:
    """A signal metric: its values are every output it gives. A clip it cannot score (`MetricError`, any error of
    that clip alone) is that clip's error."""

    kind: ClassVar[str] = "metric"
    batched: ClassVar[bool] = False  # metrics hold state in their models
    holds_interpreter: ClassVar[bool] = False  # most run on the CPU, and their kernels let the lock go

    def __init__(self, metric: Metric, name: str | None = None):
        self.metric = metric
        self.name = name or metric.name

    @property
    def needs(self) -> DecodeNeeds:
        return self.metric.needs

    def score(self, clips: Sequence[MediaClip], captions: Sequence[dict]) -> list[Outcome]:
        return [_outcome(lambda: self.metric.compute(clip, captions=c or {})) for clip, c in zip(clips, captions)]


class FunctionScorer:
    """A plain function of a decoded clip, ``fn(clip) -> float``: its value is ``{"value": fn(clip)}``. It reads
    what ``needs`` says (default: the file's own frames); an error of one clip is that clip's error."""

    kind: ClassVar[str] = "function"
    batched: ClassVar[bool] = False
    holds_interpreter: ClassVar[bool] = False

    def __init__(self, name: str, fn, needs: DecodeNeeds | None = None):
        self.name, self.fn = name, fn
        self.needs = needs or DecodeNeeds(video=True, fps=NATIVE_FPS)

    def score(self, clips: Sequence[MediaClip], captions: Sequence[dict]) -> list[Outcome]:
        return [_outcome(lambda: {"value": self._number(self.fn(clip))}) for clip in clips]

    def _number(self, value) -> float:
        """The function's value as one number; anything else (None, two values, a word) is that clip's error, not
        a fault of the run: the function is the user's."""
        try:
            if value is None or isinstance(value, (str, bytes, bool, tuple, list, dict)):
                raise TypeError
            return float(value)
        except (TypeError, ValueError):
            raise ValueError(f"the function {self.name!r} returned {value!r}, not one number") from None


def _outcome(compute) -> Outcome:
    """``compute()``'s values for one clip, or that clip's error: an avjudge error (`MetricError`, `MediaError`) or a
    `ValueError` as its message, anything else that is no fault of the run as ``"<Type>: message"``."""
    try:
        values = compute()
    except (AvjudgeError, ValueError) as err:
        return Outcome(error=str(err))
    except Exception as err:
        if is_run_fault(err):
            raise
        return Outcome(error=reason(err))
    # a number that is not one is the clip's error, never a value: it is not JSON, and every rule compares it false
    bad = {key: value for key, value in values.items() if is_number(value) and not math.isfinite(value)}
    return Outcome(error=f"non-finite {', '.join(f'{k} ({v})' for k, v in bad.items())}") if bad else Outcome(values)
