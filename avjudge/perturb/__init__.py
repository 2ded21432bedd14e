from . import audio, degenerate  # noqa: F401  (register the audio and degenerate strategies)
from .base import STRATEGIES, Context, PerturbError, describe_all, get_strategy
from .pool import SourcePool

__all__ = ["Context", "PerturbError", "STRATEGIES", "SourcePool", "describe_all", "get_strategy"]
