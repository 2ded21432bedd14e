"""Questions a judge's backbone answers (`avjudge.judges.choice`), their clips decoded through the scoring core:
each distinct clip once for all its questions (a world clip has four), in the judge's decoding threads and processes."""

from __future__ import annotations

from ..data.questions import ChoiceQuestion
from ..media import MediaError
from .core import decode_items


def question_samples(judge, questions: list[ChoiceQuestion]) -> list:
    """Each question as ``judge`` reads it (a `avjudge.judges.JudgeSample`); or, for a question that cannot be asked,
    the failed result that says why (a Yes / No judge's or a multiple-choice one's)."""
    items = [{"id": q.id, "video": q.media} for q in questions]
    decoded = decode_items(items, judge.needs, judge.settings.workers, judge.settings.decode_processes)
    samples = []
    for q, item in zip(questions, decoded):
        if isinstance(item["clip"], str):  # why the clip could not be read
            samples.append(judge.head.failed(item["clip"]))
            continue
        try:
            samples.append(judge.sample(item["clip"], q.text))
        except (MediaError, ValueError) as err:
            samples.append(judge.head.failed(str(err)))
    return samples
