"""Judges: prompts, model adapters, continuous Yes/No scoring, rewards; multiple-choice answers on the same models."""

from ..prompts import CHOICE_TASKS, TASKS, render_choice_question, render_prompt, render_query
from .adapters import ADAPTERS, CheckpointError, JudgeSample
from .judge import CARD_FILE, Judge, JudgeCardFlags, JudgeSettings
from .scorer import ChoiceHead, ChoiceResult, ScoreResult, YesNoHead

__all__ = [
    "ADAPTERS",
    "CARD_FILE",
    "CHOICE_TASKS",
    "CheckpointError",
    "ChoiceHead",
    "ChoiceResult",
    "Judge",
    "JudgeCardFlags",
    "JudgeSample",
    "JudgeSettings",
    "ScoreResult",
    "TASKS",
    "YesNoHead",
    "render_choice_question",
    "render_prompt",
    "render_query",
]
