"""Benchmark suites of omni models as registered units (`avjudge bench suites`): each reads its release files into
avjudge's question format, parses raw answers with its paper's rule and a strict one, and tables results as its
paper does. Not to be confused with AVBench's prompt suites (`avjudge.bench.prompt_suite`)."""

from .. import omnivideobench as _omnivideobench  # noqa: F401  (each suite module registers its suite)
from .. import prise as _prise  # noqa: F401
from .. import worldsense as _worldsense  # noqa: F401
from ..avibench import suite as _avibench  # noqa: F401
from ..sonicbench import suite as _sonicbench  # noqa: F401
from .base import SUITES, Answer, Scored, Suite, get_suite, read_answer_jsonl, register
from .score import score_answers, write_score

__all__ = [
    "SUITES",
    "Answer",
    "Scored",
    "Suite",
    "get_suite",
    "read_answer_jsonl",
    "register",
    "score_answers",
    "write_score",
]
