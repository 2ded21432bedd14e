"""The built-in suite ``questions``: any multiple-choice questions in avjudge's question JSONL (a synthetic world's
included, whose answers are exact), scored per category beside chance. It is how a judge's backbone is checked
before and after fine-tuning on the same questions: `omni answer` with each model, then `omni score --baseline`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

import numpy as np

from ....data.questions import ChoiceQuestion, load_questions
from ....stats import printed
from ....world import MANIFEST, world_manifest
from ...base import Answer
from ...parsing import strict_answer
from ...suite import Suite, register
from .world import world_questions


def is_world(path: Path) -> bool:
    """A world's folder or manifest (`avjudge world make`), not a question file."""
    return Path(path).is_dir() or Path(path).name == MANIFEST


def _chance(questions: list[ChoiceQuestion]) -> float | None:
    return float(np.mean([1 / len(q.options) for q in questions])) if questions else None


@register
class Questions(Suite):
    name = "questions"
    description = "avjudge's own question JSONL (a synthetic world's: convert --input WORLD), by category beside chance"
    judge_task = "choice_av"
    letters = tuple("ABCDEFGH")
    parsers = {"strict": strict_answer}
    default_parser = "strict"

    def convert(self, path: Path, media_root: Path | None = None) -> list[ChoiceQuestion]:
        """A question JSONL as it is, or questions with exact answers about a world's clips (`avjudge world make`)."""
        return world_questions(world_manifest(path)) if is_world(path) else load_questions(path)

    def score(
        self,
        answers: Iterable[Answer],
        questions: list[ChoiceQuestion] | None,
        parser: str | None = None,
        baseline: Iterable[Answer] | None = None,
    ) -> dict:
        """The default report, each question's category its group, and chance (1 / options, averaged) overall and
        per category."""
        if questions is not None:
            questions = [replace(q, groups=q.groups or {"category": q.category}) for q in questions]
        report = super().score(answers, questions, parser, baseline)
        categories = sorted({q.category for q in questions or []})
        report["chance"] = {
            "all": _chance(questions or []),
            **{c: _chance([q for q in questions if q.category == c]) for c in categories},
        }
        return report

    def markdown(self, report: dict) -> str:
        lines = [
            f"# Questions ({report['parser']} answer rule)",
            "",
            "| Model | Category | Accuracy | Chance | n |",
            "|---|---|---|---|---|",
        ]
        chance = report.get("chance", {})
        for model, block in report["models"].items():
            lines.append(
                f"| {model} | all | {printed(block['accuracy'], 3)} | {printed(chance.get('all'), 3)} | {block['n']} |"
            )
            for category, cell in block["by"].get("category", {}).items():
                lines.append(
                    f"| {model} | {category} | {printed(cell['accuracy'], 3)} | {printed(chance.get(category), 3)} | "
                    f"{cell['n']} |"
                )
        return "\n".join(lines) + "\n"
