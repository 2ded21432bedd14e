"""The scoring core: judges and metrics behind one protocol, one decode plan per job, one record per item; and what
every use builds on it: the `score` / `metrics run` jobs (`jobs`), the dimensions clips are scored on
(`dimensions`, `clip_scorer`), set comparison (`set_compare`) and questions a judge answers (`questions`). Those
import model code and load by their module's name; this package's face imports none."""

from .core import ClipRecord, Decoder, Scoring, clip_of, decode_items
from .scorers import FunctionScorer, JudgeScorer, MetricScorer, Outcome, Scorer, caption_for, captions_of

__all__ = [
    "ClipRecord",
    "Decoder",
    "FunctionScorer",
    "JudgeScorer",
    "MetricScorer",
    "Outcome",
    "Scorer",
    "Scoring",
    "caption_for",
    "captions_of",
    "clip_of",
    "decode_items",
]
