"""Multiple-choice questions on clips, the omni-model benchmarks' format (AVI-Bench, OmniVideoBench, WorldSense:
video with its audio; SonicBench: audio alone): a judge's backbone answers them before and after fine-tuning, so
that SFT on Yes / No pairs is seen not to cost its general perception (`avjudge bench choice`; and during
training, `TrainConfig.choice_questions`).

Questions are JSONL, one per line: ``{"id", "media", "question", "options": [...], "answer": "B", "category"}``
(``media`` relative to the file's folder; ``category`` optional). A benchmark suite's questions (`avjudge.bench.suites`)
may add ``prompt`` (the whole instruction exactly as the benchmark's authors ask it, shown instead of the question with
its lettered options), ``groups`` (``{group: category}``, what its tables break results down by) and any fields of its
own (labels, measured values), kept as they are; `avjudge.bench.synthetic.world_questions`
asks questions with exact answers of a synthetic world. `answer_questions` writes one result per question as it
goes and resumes; a question whose clip cannot be read is recorded with its error and counted apart, never as a
wrong answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from ..errors import AvjudgeError
from ..jsonl import JsonlWriter, read_jsonl
from ..media import MediaClip, MediaError
from ..prompts import OPTION_LETTERS, render_choice_question
from .scorer import ChoiceResult


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


def answer_row(question: ChoiceQuestion, result: ChoiceResult) -> dict:
    """What one answer records: the offered letters' probabilities, the likeliest, whether it is right; or the error
    that kept the question from being asked."""
    row = {"id": question.id, "category": question.category, "answer": question.answer}
    if not result.ok:
        return {**row, "predicted": None, "correct": None, "error": result.error}
    probs, predicted = result.offered(len(question.options)), result.answer(len(question.options))
    return {**row, "predicted": predicted, "correct": predicted == question.answer, "probs": probs, "mass": result.mass}


def question_samples(judge, questions: list[ChoiceQuestion]) -> list:
    """Each question as ``judge`` reads it (a `JudgeSample`), each distinct clip decoded once for all its questions
    (a world clip has four); or, for a question that cannot be asked, the failed result that says why (a Yes / No
    judge's or a multiple-choice one's)."""
    clips = {}
    for path in dict.fromkeys(q.media for q in questions):
        try:
            clips[path] = judge.decode(path)
        except MediaError as err:
            clips[path] = judge.head.failed(str(err))
    samples = []
    for q in questions:
        clip = clips[q.media]
        try:
            samples.append(judge.sample(clip, q.text) if isinstance(clip, MediaClip) else clip)
        except (MediaError, ValueError) as err:
            samples.append(judge.head.failed(str(err)))
    return samples


def answer_questions(
    judge,
    questions: list[ChoiceQuestion],
    out: str | Path,
    chunk: int = 64,
    progress: bool = True,
    row: Callable[[ChoiceQuestion, ChoiceResult], dict] = answer_row,
) -> list[dict]:
    """Each question answered by ``judge`` (a `Judge` of a multiple-choice task), written to ``out`` (JSONL, one
    ``row(question, result)`` each) as each chunk is done; questions already there are not asked again, and a clip
    is decoded once per chunk however many of its questions the chunk holds. Returns every question's row."""
    if not judge.task.choices:
        raise QuestionError(
            f"the {judge.task.name} judge answers Yes or No; load it with a multiple-choice task (choice_av, choice_a)"
        )
    open_questions = [q.id for q in questions if q.is_open]
    if open_questions:
        raise QuestionError(
            f"{len(open_questions)} questions (e.g. {open_questions[0]}) are open, answered in free text, not by "
            "letter: let the judge's backbone write its answer (bench answer --generate TOKENS) or ask an endpoint"
        )
    out = Path(out)
    done = {r["id"]: r for r in read_jsonl(out)}
    todo = [q for q in questions if q.id not in done]
    with (
        JsonlWriter(out) as writer,
        tqdm(
            total=len(questions), initial=len(questions) - len(todo), desc="questions", unit="q", disable=not progress
        ) as bar,
    ):
        for start in range(0, len(todo), chunk):
            batch = todo[start : start + chunk]
            for q, result in zip(batch, judge.score_samples(question_samples(judge, batch))):
                record = row(q, result)
                writer.write(record)
                done[q.id] = record
            bar.update(len(batch))
    return [done[q.id] for q in questions if q.id in done]


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


def compare_answers(rows: list[dict], baseline: list[dict]) -> dict:
    """Two models' answers to the same questions (this run's ``rows``, a ``baseline`` run's, e.g. the base model a
    judge was fine-tuned from): on the questions both answered, each one's accuracy and how many answers changed,
    overall and per category."""
    theirs = {r["id"]: r for r in baseline if r.get("error") is None}
    shared = [r for r in rows if r.get("error") is None and r["id"] in theirs]

    def block(mine: list[dict]) -> dict:
        return {
            "questions": len(mine),
            "accuracy": float(np.mean([r["correct"] for r in mine])) if mine else None,
            "baseline_accuracy": float(np.mean([theirs[r["id"]]["correct"] for r in mine])) if mine else None,
            "changed": sum(r["predicted"] != theirs[r["id"]]["predicted"] for r in mine),
        }

    categories = sorted({r["category"] for r in shared})
    return {**block(shared), "per_category": {c: block([r for r in shared if r["category"] == c]) for c in categories}}
