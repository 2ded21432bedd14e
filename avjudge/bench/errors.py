"""The AVBench library's error."""

from ..errors import AvjudgeError


class BenchError(AvjudgeError):
    """A benchmark input that cannot be used (prompt file, videos, judgments, rules); the message names it."""
