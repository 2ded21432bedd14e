"""Benchmarks of omni models as registered suites (`avjudge omni suites`): each reads its release files into
avjudge's question format (`avjudge.data.questions`), parses raw answers with its paper's rule and a strict one, and
tables results as its paper does. Scoring answers needs no model code: this package imports no torch until a model
answers (`avjudge.omni.answer`).

The shared machinery is here (the suite base and registry, answering, scoring, the Yes/No bridge, answer parsing,
the media a request carries, signal meters); each benchmark is a folder of `avjudge.omni.benchmarks`, found by
scanning."""

from . import benchmarks
from .base import Answer, Scored, SuiteError, read_answer_jsonl
from .score import score_answers, write_score
from .suite import SUITES, Suite, get_suite, register

benchmarks.load()  # each benchmark registers its suite

__all__ = [
    "SUITES",
    "Answer",
    "Scored",
    "Suite",
    "SuiteError",
    "get_suite",
    "read_answer_jsonl",
    "register",
    "score_answers",
    "write_score",
]
