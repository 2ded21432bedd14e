"""What a benchmark suite is: how it reads its release files, asks its questions, parses and tables the answers.

A suite turns its authors' release files into avjudge's question format (`avjudge.judges.choice.ChoiceQuestion`,
with the suite's own prompt and ``groups``), reads answer files (avjudge's answers JSONL, or its release's own
per-model prediction files), parses a model's raw answer with the paper's rule and with a strict rule, and lays the
results out the way its paper's tables do. `avjudge bench convert / answer / score` work the same for every suite.

Answers are JSONL ``{"id", "model", "response"}`` (the raw text, or the letter a judge's backbone chose), with an
``error`` field where a clip could not be read or a request failed: such an answer is counted apart, never as wrong.
A release format that carries its own gold answers may add ``answer`` and ``groups`` to each record.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ...judges.choice import ChoiceQuestion
from ...registry import Registry
from ..dimensions import BenchError

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
        """As `avjudge.judges.choice.compare_answers` reads an answer, the category being the item's groups."""
        category = "/".join(str(v) for v in self.groups.values()) or "all"
        return {"id": self.id, "category": category, "predicted": self.predicted, "correct": self.correct}


class Suite:
    """A registered benchmark suite; subclasses set the class attributes and override what their release needs."""

    name: str = ""
    description: str = ""
    judge_task: str = "choice_av"  # which multiple-choice judge task answers it: choice_av (video) or choice_a
    letters: tuple[str, ...] = ("A", "B", "C", "D")  # the letters its release's answers choose from
    parsers: dict[str, Parser] = {}

    def __init__(self) -> None:
        self.notes: list[str] = []  # what reading a release skipped or worked around, with why

    def convert(self, path: Path, media_root: Path | None = None) -> list[ChoiceQuestion]:
        """The questions of a release file or folder, in avjudge's question format."""
        raise BenchError(f"the {self.name} suite has no release reader; give its questions as avjudge question JSONL")

    def prompt_for(self, question: str, options: list[str]) -> str:
        """The suite's own prompt for a question and its options as its release prints them ("A. text"): how its
        authors asked, for any question (avjudge's synthetic-world questions included)."""
        raise BenchError(f"the {self.name} suite has no prompt of its own for other questions")

    def describe(self, questions: list[ChoiceQuestion]) -> dict:
        """What converted questions hold: their number and, per group, how many fall in each category (an item with
        several categories in a group counts in each)."""
        counts: dict[str, Counter] = {}
        for q in questions:
            for group, value in q.groups.items():
                counts.setdefault(group, Counter()).update(value if isinstance(value, list) else [value])
        return {"questions": len(questions), "groups": {g: dict(c.most_common()) for g, c in counts.items()}}

    def read_answers(self, path: Path) -> Iterator[Answer]:
        """The answers of ``path``: avjudge's answers JSONL by default; a suite whose release ships per-model
        prediction files reads those too."""
        yield from read_answer_jsonl(path)

    def score(
        self,
        answers: Iterable[Answer],
        questions: list[ChoiceQuestion] | None,
        parser: str = "paper",
        baseline: Iterable[Answer] | None = None,
    ) -> dict:
        """Every model's report: by default, each answer read to a letter by ``parser`` and counted right or wrong
        (`score.score_answers`); a suite whose answers are not letters scores them its own way."""
        from .score import score_answers  # score builds on this module

        return score_answers(self, answers, questions, parser, baseline)

    def summary(self, report: dict) -> list[str]:
        """The report in a few lines for the terminal."""
        from .score import printed

        lines = []
        for model, block in report["models"].items():
            rules = ", ".join(f"{p} {printed(a, 3)}" for p, a in block["accuracy_by_parser"].items())
            lines.append(
                f"{model:<28} accuracy {printed(block['accuracy'], 3)} on {block['n']} answers "
                f"({block['abstained']} abstained, {block['errors']} errors; by rule: {rules})"
            )
            lines += [f"    {error}" for error in block["error_examples"]]
            if "baseline" in block:
                b = block["baseline"]
                lines.append(
                    f"    against {b['model']} on the {b['questions']} items both answered: "
                    f"{printed(b['accuracy'], 3)} against {printed(b['baseline_accuracy'], 3)}; "
                    f"{b['changed']} answers changed"
                )
        return lines

    def table(self, scored: list[Scored]) -> dict:
        """One model's results laid out as the paper's tables do."""
        return {}

    def markdown(self, report: dict) -> str:
        """The report as Markdown tables shaped like the paper's."""
        return ""


SUITES = Registry("benchmark suite", BenchError, "avjudge bench suites lists them")


def register(cls: type[Suite]) -> type[Suite]:
    return SUITES.register(cls)


def get_suite(name: str) -> Suite:
    return SUITES.lookup(name)()


def read_release_json(path: Path, kind: type, what: str):
    """A release's JSON file, which must hold a ``kind`` (list or dict); ``what`` names it in the error."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise BenchError(f"{path}: not {what} ({err})") from err
    if not isinstance(data, kind):
        raise BenchError(f"{path}: {what} must be a JSON {kind.__name__}, not a {type(data).__name__}")
    return data


def read_answer_jsonl(path: Path) -> Iterator[Answer]:
    """Answers JSONL; a line that is not JSON or lacks ``id``, ``model`` or ``response`` (and has no ``error``) is
    an answer with an error naming the file and line: the run goes on. Of several lines for one (model, id), a
    resumed run's, the last counts."""
    if not path.is_file():
        raise BenchError(
            f"{path}: no such answers file (JSONL of id, model, response; `avjudge bench answer` writes one)"
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
