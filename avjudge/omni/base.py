"""What the omni benchmarks' answers are: an answer as an answers file holds it, an answer parsed against its
question, and the readers of answers JSONL and of a release's JSON files.

Answers are JSONL ``{"id", "model", "response"}`` (the raw text, or the letter a judge's backbone chose), with an
``error`` field where a clip could not be read or a request failed: such an answer is counted apart, never as wrong.
A release format that carries its own gold answers may add ``answer`` and ``groups`` to each record.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..errors import AvjudgeError


class SuiteError(AvjudgeError):
    """A benchmark suite's input that cannot be used (a release file, answers, questions); the message names it."""


# (raw response, offered letters, the options' texts where known) -> the letter read, or None (abstained)
Parser = Callable[[str, tuple[str, ...], tuple[str, ...]], "str | None"]


@dataclass
class Answer:
    """One model's answer to one question, as an answer file holds it."""

    id: str
    model: str
    response: str | None
    error: str | None = None
    answer: str | None = None  # the gold letter, where the answer file itself carries it
    groups: dict = field(default_factory=dict)
    where: str = ""  # file and line, for messages


@dataclass(frozen=True)
class Scored:
    """An answer parsed against its question: the letter read from it (None: abstained) and whether it is right."""

    id: str
    model: str
    groups: dict
    predicted: str | None
    correct: bool

    def categories(self, group: str) -> list:
        """The item's categories in ``group``: none, one, or several (WorldSense's audio classes)."""
        value = self.groups.get(group)
        return value if isinstance(value, list) else [] if value is None else [value]

    def choice_row(self) -> dict:
        """As `avjudge.omni.score.compare_answers` reads an answer, the category being the item's groups."""
        category = "/".join(str(v) for v in self.groups.values()) or "all"
        return {"id": self.id, "category": category, "predicted": self.predicted, "correct": self.correct}


class Rules(Protocol):
    """What scoring reads of a suite (`avjudge.omni.suite.Suite` has it): its name, the letters its release's answers
    choose from, its answer rules, its tables, its report."""

    name: str
    letters: tuple[str, ...]
    parsers: dict[str, Parser]

    def table(self, scored: list[Scored]) -> dict: ...

    def markdown(self, report: dict) -> str: ...


def read_release_json(path: Path, kind: type, what: str):
    """A release's JSON file, which must hold a ``kind`` (list or dict); ``what`` names it in the error."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise SuiteError(f"{path}: not {what} ({err})") from err
    if not isinstance(data, kind):
        raise SuiteError(f"{path}: {what} must be a JSON {kind.__name__}, not a {type(data).__name__}")
    return data


def usable_answers(answers: Iterable[Answer], path: Path) -> list[Answer]:
    """The answers read from ``path``; a file that gave none, or none that could be read (every line malformed),
    is a `SuiteError` naming it (the first line's fault said)."""
    answers = list(answers)
    if not answers:
        raise SuiteError(f"{path}: no answers in it; give the answers file `avjudge omni answer` wrote")
    if all(a.error and a.where and a.error.startswith(a.where) for a in answers):
        raise SuiteError(f"{path}: no line of it is an answer (e.g. {answers[0].error})")
    return answers


def read_answer_jsonl(path: Path) -> Iterator[Answer]:
    """Answers JSONL; a line that is not JSON or lacks ``id``, ``model`` or ``response`` (and has no ``error``) is
    an answer with an error naming the file and line: the run goes on. Of several lines for one (model, id), a
    resumed run's, the last counts."""
    if not path.is_file():
        raise SuiteError(
            f"{path}: no such answers file (JSONL of id, model, response; `avjudge omni answer` writes one)"
        )
    with open(path, encoding="utf-8") as f:
        for line, text in enumerate(f, start=1):
            if not text.strip():
                continue
            where = f"{path}:{line}"
            try:
                raw = json.loads(text)
            except ValueError as err:
                yield Answer(id=where, model="?", response=None, error=f"{where}: not valid JSON ({err})", where=where)
                continue
            if not isinstance(raw, dict):
                error = f"{where}: an answer is a JSON object, not {type(raw).__name__}"
                yield Answer(id=where, model="?", response=None, error=error, where=where)
                continue
            needed = ("id", "model") if raw.get("error") else ("id", "model", "response")
            missing = [k for k in needed if k not in raw]
            yield Answer(
                id=str(raw.get("id", where)),
                model=str(raw.get("model", "?")),
                response=raw.get("response"),
                error=f"{where}: answer has no {', '.join(missing)} (each line needs id, model, response)"
                if missing
                else raw.get("error"),
                answer=raw.get("answer"),
                groups=dict(raw.get("groups") or {}),
                where=where,
            )
