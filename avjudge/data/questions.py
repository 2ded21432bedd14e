"""Multiple-choice questions on clips: the question format of the omni-model benchmarks (AVI-Bench, OmniVideoBench,
WorldSense: video with its audio; SonicBench: audio alone), read and written without any model code.

Questions are JSONL, one per line: ``{"id", "media", "question", "options": [...], "answer": "B", "category"}``
(``media`` relative to the file's folder; ``category`` optional). A benchmark suite's questions (`avjudge.omni`)
may add ``prompt`` (the whole instruction exactly as the benchmark's authors ask it, shown instead of the question with
its lettered options), ``groups`` (``{group: category}``, what its tables break results down by) and any fields of its
own (labels, measured values), kept as they are.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import AvjudgeError
from ..jsonl import JsonlWriter, read_jsonl
from ..prompts import OPTION_LETTERS, render_choice_question


class QuestionError(AvjudgeError):
    """A question file or question that cannot be used; the message names it and the fix."""


@dataclass(frozen=True)
class ChoiceQuestion:
    id: str
    media: str  # a video (with its audio) or an audio file
    question: str
    options: tuple[str, ...]  # empty for an open question, answered in free text (e.g. AVI-Bench's)
    answer: Any  # the right option's letter; an open question's gold, as its suite's metric reads it
    category: str = "all"
    prompt: str = ""  # a suite's own instruction, options included; empty: the question with lettered options
    groups: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)  # a suite's own fields (labels, measurements), written back as they are

    @property
    def is_open(self) -> bool:
        return not self.options

    @property
    def text(self) -> str:
        return self.prompt or render_choice_question(self.question, list(self.options))

    def category_grouped(self) -> ChoiceQuestion:
        """This question with its ``category`` among its groups where they name none: what a breakdown by
        ``category`` reads (the field every question may carry)."""
        return self if "category" in self.groups else replace(self, groups={**self.groups, "category": self.category})

    def to_dict(self) -> dict:
        record = {k: v for k, v in asdict(self).items() if k != "extra"}
        return {**record, "options": list(self.options), **self.extra}


QUESTION_FIELDS = ("id", "media", "question", "options", "answer", "category", "prompt", "groups")


def load_questions(path: str | Path) -> list[ChoiceQuestion]:
    """The questions of a JSONL file; a malformed line is an error naming the file, the line and the fix."""
    path = Path(path)
    if not path.is_file():
        raise QuestionError(f"{path}: no such question file")
    questions, seen = [], set()
    for line, raw in enumerate(read_jsonl(path), start=1):
        where = f"{path}:{line}"
        missing = [k for k in ("id", "media", "question", "options", "answer") if k not in raw]
        if missing:
            raise QuestionError(
                f"{where}: question has no {', '.join(missing)} (each line needs id, media, question, options, answer)"
            )
        options = raw["options"]
        if not isinstance(options, list) or not (options == [] or 2 <= len(options) <= len(OPTION_LETTERS)):
            raise QuestionError(
                f"{where}: options must be a list of 2 to {len(OPTION_LETTERS)} texts, or [] for an open question"
            )
        offered = OPTION_LETTERS[: len(options)]
        if options and raw["answer"] not in offered:
            raise QuestionError(
                f"{where}: answer {raw['answer']!r} is not one of the offered letters {''.join(offered)}"
            )
        if raw["id"] in seen:
            raise QuestionError(f"{where}: id {raw['id']!r} appears twice")
        seen.add(raw["id"])
        media = Path(raw["media"])
        questions.append(
            ChoiceQuestion(
                str(raw["id"]),
                str(media if media.is_absolute() else path.parent / media),
                raw["question"],
                tuple(map(str, options)),
                raw["answer"],
                str(raw.get("category") or "all"),
                str(raw.get("prompt") or ""),
                dict(raw.get("groups") or {}),
                {k: v for k, v in raw.items() if k not in QUESTION_FIELDS},
            )
        )
    return questions


def write_questions(questions: list[ChoiceQuestion], path: str | Path) -> None:
    """Questions as JSONL (media paths as they are); an existing file is replaced."""
    Path(path).unlink(missing_ok=True)
    with JsonlWriter(path) as out:
        for q in questions:
            out.write(q.to_dict())
