"""Yes/No judges: prompts, model adapters, continuous scoring, rewards."""
from .adapters import ADAPTERS, CheckpointError, JudgeSample
from .judge import Judge, JudgeSettings
from ..prompts import TASKS, render_prompt, render_query
from .scorer import ScoreResult, YesNoHead

__all__ = ["ADAPTERS", "CheckpointError", "Judge", "JudgeSample", "JudgeSettings", "ScoreResult", "TASKS",
           "YesNoHead", "render_prompt", "render_query"]
