"""A judge's backbone answering multiple-choice questions (`avjudge.data.questions`) by the option letters'
next-token probabilities: how it reads a question, what one answer records, accuracy beside chance. The omni
benchmarks (`avjudge omni answer`) and held-out evaluation during training (`TrainConfig.choice_questions`) use it, so
that SFT on Yes / No pairs is seen not to cost a judge's general perception."""

from __future__ import annotations

import numpy as np

from ..data.questions import ChoiceQuestion, QuestionError
from .scorer import ChoiceResult


def check_answerable(judge, questions: list[ChoiceQuestion]) -> None:
    """Letters answer these questions only where the judge's task reads letters and every question offers options."""
    if not judge.task.choices:
        raise QuestionError(
            f"the {judge.task.name} judge answers Yes or No; load it with a multiple-choice task (choice_av, choice_a)"
        )
    open_questions = [q.id for q in questions if q.is_open]
    if open_questions:
        raise QuestionError(
            f"{len(open_questions)} questions (e.g. {open_questions[0]}) are open, answered in free text, not by "
            "letter: let the judge's backbone write its answer (omni answer --generate TOKENS) or ask an endpoint"
        )


def answer_row(question: ChoiceQuestion, result: ChoiceResult) -> dict:
    """What one answer records: the offered letters' probabilities, the likeliest, whether it is right; or the error
    that kept the question from being asked."""
    row = {"id": question.id, "category": question.category, "answer": question.answer}
    if not result.ok:
        return {**row, "predicted": None, "correct": None, "error": result.error}
    probs, predicted = result.offered(len(question.options)), result.answer(len(question.options))
    return {**row, "predicted": predicted, "correct": predicted == question.answer, "probs": probs, "mass": result.mass}


def summarize(results: list[dict], questions: list[ChoiceQuestion]) -> dict:
    """Accuracy over the answered questions, overall and per category, beside chance (1 / options, averaged);
    questions whose clip could not be read are counted as errors, apart."""
    n_options = {q.id: len(q.options) for q in questions}

    def block(rows: list[dict]) -> dict:
        answered = [r for r in rows if r.get("error") is None]
        return {
            "questions": len(rows),
            "answered": len(answered),
            "errors": len(rows) - len(answered),
            "accuracy": float(np.mean([r["correct"] for r in answered])) if answered else None,
            "chance": float(np.mean([1 / n_options[r["id"]] for r in answered])) if answered else None,
        }

    categories = sorted({r["category"] for r in results})
    return {
        **block(results),
        "per_category": {c: block([r for r in results if r["category"] == c]) for c in categories},
    }
