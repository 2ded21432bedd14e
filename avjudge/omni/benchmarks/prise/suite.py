"""The PriSe suite: AVI-Bench's multiple-choice rule and double confirmation (a formal item counts only where its
presence check is answered right)."""

from __future__ import annotations

from ....stats import printed
from ...base import Scored
from ...parsing import strict_answer
from ...score import accuracy, accuracy_in
from ...suite import Suite, register
from .parser import earliest_option


@register
class PriSe(Suite):
    """Items of `make_prise`: each formal item counts under double confirmation only if its presence check
    ("Can you see / hear anything?") is answered right too."""

    name = "prise"
    description = "PriSe-style primitive sensation items (omni prise make), with double confirmation"
    judge_task = "choice_av"
    letters = tuple("ABCDEF")
    parsers = {"paper": earliest_option, "strict": strict_answer}

    def table(self, scored: list[Scored]) -> dict:
        correct = {s.id: s.correct for s in scored}
        formal = [s for s in scored if not s.id.endswith("_check")]
        confirmed = [s.correct and correct.get(f"{s.id}_check", False) for s in formal]
        tasks = sorted({t for s in formal for t in s.categories("task")})
        return {
            "accuracy": accuracy(sum(s.correct for s in formal), len(formal)),
            "confirmed_accuracy": accuracy(sum(confirmed), len(formal)),
            "checks_passed": accuracy(
                sum(correct[f"{s.id}_check"] for s in formal if f"{s.id}_check" in correct),
                sum(f"{s.id}_check" in correct for s in formal),
            ),
            "tasks": {
                t: {
                    "accuracy": accuracy_in(formal, "task", t),
                    "confirmed_accuracy": accuracy(
                        sum(c for s, c in zip(formal, confirmed) if t in s.categories("task")),
                        sum(t in s.categories("task") for s in formal),
                    ),
                }
                for t in tasks
            },
        }

    def markdown(self, report: dict) -> str:
        lines = [
            f"# PriSe ({report['parser']} answer rule): accuracy, and with double confirmation",
            "",
            "| Model | accuracy | confirmed | checks passed |",
            "|---|---|---|---|",
        ]
        for model, block in report["models"].items():
            t = block["table"]
            figures = [printed(t[k], 3) for k in ("accuracy", "confirmed_accuracy", "checks_passed")]
            lines.append(f"| {model} | " + " | ".join(figures) + " |")
        return "\n".join(lines) + "\n"
