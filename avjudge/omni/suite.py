"""What a benchmark suite is: how it reads its release files, asks its questions, parses and tables the answers.

A suite turns its authors' release files into avjudge's question format (`avjudge.data.questions.ChoiceQuestion`,
with the suite's own prompt and ``groups``), reads answer files (avjudge's answers JSONL, or its release's own
per-model prediction files), parses a model's raw answer with the paper's rule and with a strict rule, and lays the
results out the way its paper's tables do. `avjudge omni convert / answer / score` work the same for every suite.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..data.questions import ChoiceQuestion
from ..registry import Registry
from ..stats import printed
from .base import Answer, Parser, Scored, SuiteError, read_answer_jsonl
from .score import score_answers


class Suite:
    """A registered benchmark suite; subclasses set the class attributes and override what their release needs."""

    name: str = ""
    description: str = ""
    judge_task: str = "choice_av"  # which multiple-choice judge task answers it: choice_av (video) or choice_a
    letters: tuple[str, ...] = ("A", "B", "C", "D")  # the letters its release's answers choose from
    parsers: dict[str, Parser] = {}
    default_parser: str = "paper"  # the rule `omni score` reads answers with unless told another

    def __init__(self) -> None:
        self.notes: list[str] = []  # what reading a release skipped or worked around, with why

    def convert(self, path: Path, media_root: Path | None = None) -> list[ChoiceQuestion]:
        """The questions of a release file or folder, in avjudge's question format."""
        raise SuiteError(f"the {self.name} suite has no release reader; give its questions as avjudge question JSONL")

    def prompt_for(self, question: str, options: list[str]) -> str:
        """The suite's own prompt for a question and its options as its release prints them ("A. text"): how its
        authors asked, for any question (avjudge's synthetic-world questions included)."""
        raise SuiteError(f"the {self.name} suite has no prompt of its own for other questions")

    def check_judge(self, task: str) -> None:
        """Whether a judge of ``task`` can answer this suite's questions by letter: a multiple-choice task, and one
        that hears the audio alone where the suite asks about sound only."""
        if not task.startswith("choice_") or (self.judge_task == "choice_a" and task != "choice_a"):
            raise SuiteError(
                f"--judge {task}=... cannot answer {self.name}: give --judge {self.judge_task}=DIR "
                "(choice_a: a Qwen2-Audio or an Omni thinker, hearing the audio alone)"
            )

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
        parser: str | None = None,
        baseline: Iterable[Answer] | None = None,
    ) -> dict:
        """Every model's report: by default, each answer read to a letter by ``parser`` and counted right or wrong
        (`score.score_answers`); a suite whose answers are not letters scores them its own way."""
        return score_answers(self, answers, questions, parser or self.default_parser, baseline)

    def summary(self, report: dict) -> list[str]:
        """The report in a few lines for the terminal, the models ranked by accuracy (the best first; a model with no
        answer scored last)."""
        lines = []
        accuracy = {model: block["accuracy"] for model, block in report["models"].items()}
        ranked = sorted(report["models"].items(), key=lambda m: -accuracy[m[0]] if accuracy[m[0]] is not None else 1)
        for rank, (model, block) in enumerate(ranked, start=1):
            rules = ", ".join(f"{p} {printed(a, 3)}" for p, a in block["accuracy_by_parser"].items())
            lines.append(
                f"{rank:>3}. {model:<28} accuracy {printed(block['accuracy'], 3)} on {block['n']} answers "
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


SUITES = Registry("benchmark suite", SuiteError, "avjudge omni suites lists them")


def register(cls: type[Suite]) -> type[Suite]:
    return SUITES.register(cls)


def get_suite(name: str) -> Suite:
    return SUITES.lookup(name)()
