"""The questions suite answered by a judge and scored in one go, as the old `bench choice` ran it."""

from __future__ import annotations

from pathlib import Path

from ....data.questions import load_questions, write_questions
from ....world import world_manifest
from ...answer import answer_with_judge
from ...base import SuiteError
from ...score import write_score
from .suite import Questions, is_world
from .world import world_questions


def answer_and_score(
    judge, source: Path, out: Path, model: str, baseline: Path | None = None, progress: bool = True
) -> dict:
    """The questions suite from end to end, as the old `bench choice` ran it: the questions (a world's, those its
    sound answers for a judge that hears audio alone, or a question file's) answered by ``judge`` into
    ``OUT/answers.jsonl`` (resumable), scored into ``OUT/report.json`` and ``OUT/report.md`` beside the answers of
    another run's ``--out`` folder (``baseline``). Returns the report."""
    suite = Questions()
    baseline_answers = None if baseline is None else Path(baseline) / "answers.jsonl"
    if baseline_answers is not None and not baseline_answers.is_file():
        raise SuiteError(f"{baseline_answers}: no answers; --baseline takes the --out folder of another run")
    source = Path(source)
    if is_world(source):
        questions = world_questions(world_manifest(source), audio_only=judge.task.name == "choice_a")
        write_questions(questions, Path(out) / "questions.jsonl")
    else:
        questions = load_questions(source)
    answer_with_judge(judge, questions, Path(out) / "answers.jsonl", model, progress)
    report = suite.score(
        suite.read_answers(Path(out) / "answers.jsonl"),
        questions,
        baseline=None if baseline_answers is None else suite.read_answers(baseline_answers),
    )
    write_score(suite, report, Path(out))
    return report
