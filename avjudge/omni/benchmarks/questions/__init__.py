"""The built-in suite ``questions``: avjudge's own question files, and questions with exact answers about a synthetic
world's clips (`world`)."""

from .suite import Questions, is_world
from .world import world_questions

__all__ = ["Questions", "is_world", "world_questions"]
