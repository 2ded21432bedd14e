"""The Yes / No bridge (beyond the papers): a judge that reads a text (a VT or AT judge) answers a multiple-choice
question by judging each option as a statement ("The answer to the question ... is: OPTION") and choosing the
option it believes most, so that avjudge's judges and the omni models meet on the same questions.

Per question: each option's P(Yes) (the judge's score S), the chosen letter, whether it is right. Overall:
accuracy beside chance, AUROC of the right options' P(Yes) against the wrong ones', and the calibration of P(Yes)
as the probability that a statement is true (expected calibration error over ten equal bins).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..data.questions import ChoiceQuestion
from ..jsonl import read_jsonl
from ..prompts import BRIDGE_STATEMENT, OPTION_LETTERS
from ..runtime.jobs import run_job
from ..scoring.questions import question_samples
from ..stats import auroc, reliability
from .base import SuiteError

# statements -> each one's P(Yes), or the error that kept it from being judged
Believer = Callable[[list[ChoiceQuestion]], list["float | str"]]
CALIBRATION_BINS = 10


def statements(question: ChoiceQuestion) -> list[ChoiceQuestion]:
    """One statement per option, each the question with its option as the text a judge reads."""
    return [
        replace(
            question,
            id=f"{question.id}#{letter}",
            prompt=BRIDGE_STATEMENT.format(question=question.question, option=option),
        )
        for letter, option in zip(OPTION_LETTERS, question.options)
    ]


def judge_believer(judge) -> Believer:
    """A Yes / No judge (its task reads a text) as a `Believer`: each clip decoded once for all its statements."""

    def believe(items: list[ChoiceQuestion]) -> list[float | str]:
        return [r.score if r.ok else r.error for r in judge.score_samples(question_samples(judge, items))]

    return believe


def bridge_row(question: ChoiceQuestion, beliefs: list[float | str]) -> dict:
    row = {"id": question.id, "category": question.category, "answer": question.answer}
    failed = [b for b in beliefs if isinstance(b, str)]
    if failed:
        return {**row, "predicted": None, "correct": None, "error": failed[0]}
    letters = OPTION_LETTERS[: len(beliefs)]
    predicted = letters[int(np.argmax(beliefs))]
    return {
        **row,
        "p_yes": dict(zip(letters, beliefs)),
        "predicted": predicted,
        "correct": predicted == question.answer,
    }


def bridge_questions(
    believe: Believer, questions: list[ChoiceQuestion], out: Path, chunk: int = 16, progress: bool = True
) -> list[dict]:
    """Every question's row written to ``out`` (JSONL) as each chunk is done; a rerun asks only what is missing."""
    open_questions = [q.id for q in questions if q.is_open]
    if open_questions:
        raise SuiteError(
            f"{len(open_questions)} questions (e.g. {open_questions[0]}) are open, with no options to judge one by one"
        )

    def process(items: list[dict]) -> list[dict]:
        batch = [item["question"] for item in items]
        beliefs = iter(believe([s for q in batch for s in statements(q)]))
        return [bridge_row(q, [next(beliefs) for _ in q.options]) for q in batch]

    run_job([{"id": q.id, "question": q} for q in questions], out, process, chunk, progress, "questions")
    done = {r["id"]: r for r in read_jsonl(out)}
    return [done[q.id] for q in questions if q.id in done]


def expected_calibration_error(probabilities: np.ndarray, outcomes: np.ndarray, bins: int = CALIBRATION_BINS) -> float:
    """Mean |observed frequency - mean probability| over equal-width bins, weighted by how many fall in each."""
    return reliability(probabilities, outcomes, bins)["ece"]


def bridge_summary(rows: list[dict]) -> dict:
    answered = [r for r in rows if r.get("error") is None]
    beliefs = np.array([p for r in answered for p in r["p_yes"].values()])
    truths = np.array([letter == r["answer"] for r in answered for letter in r["p_yes"]], dtype=int)
    return {
        "questions": len(rows),
        "answered": len(answered),
        "errors": len(rows) - len(answered),
        "accuracy": float(np.mean([r["correct"] for r in answered])) if answered else None,
        "chance": float(np.mean([1 / len(r["p_yes"]) for r in answered])) if answered else None,
        "auroc_right_vs_wrong": auroc(beliefs, truths) if answered else None,
        "calibration_error": expected_calibration_error(beliefs, truths) if answered else None,
    }
