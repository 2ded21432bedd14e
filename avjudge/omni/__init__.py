"""Benchmarks of omni models as registered suites (`avjudge omni suites`): each reads its release files into
avjudge's question format (`avjudge.data.questions`), parses raw answers with its paper's rule and a strict one, and
tables results as its paper does. Scoring answers needs no model code: this package imports no torch until a model
answers (`avjudge.omni.answer`)."""

from . import omnivideobench as _omnivideobench  # noqa: F401  (each suite module registers its suite)
from . import prise as _prise  # noqa: F401
from . import questions as _questions  # noqa: F401
from . import worldsense as _worldsense  # noqa: F401
from .avibench import suite as _avibench  # noqa: F401
from .base import Answer, Scored, SuiteError, read_answer_jsonl
from .score import score_answers, write_score
from .sonicbench import suite as _sonicbench  # noqa: F401
from .suite import SUITES, Suite, get_suite, register

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
