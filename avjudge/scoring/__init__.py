"""The scoring core: judges and metrics behind one protocol, one decode plan per job, one record per item."""

from .core import ClipRecord, Scoring, clip_of, decode_items
from .scorers import FunctionScorer, JudgeScorer, MetricScorer, Outcome, Scorer, captions_of

__all__ = [
    "ClipRecord",
    "FunctionScorer",
    "JudgeScorer",
    "MetricScorer",
    "Outcome",
    "Scorer",
    "Scoring",
    "captions_of",
    "clip_of",
    "decode_items",
]
