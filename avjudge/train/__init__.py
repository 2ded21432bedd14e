"""Supervised fine-tuning of judges: collator, freeze policies, trainer, evaluation."""

from .collator import AnswerCollator, TrainingExamples
from .evaluation import evaluation_table, judge_metrics
from .freeze import POLICIES, apply_freeze
from .train_config import TrainConfig
from .trainer import build_training, learning_curves, run_training

__all__ = [
    "AnswerCollator",
    "POLICIES",
    "TrainConfig",
    "TrainingExamples",
    "apply_freeze",
    "build_training",
    "evaluation_table",
    "judge_metrics",
    "learning_curves",
    "run_training",
]
