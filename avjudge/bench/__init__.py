"""AVBench benchmark: prompt suites, the runner, reports, human alignment, dataset filtering."""

from .dimensions import DIMENSIONS, BenchError, Dimension, parse_dimensions
from .prompt_suite import PromptEntry, discover, load_suite, write_suite
from .scoring import ClipScorer, parse_judge_dirs

__all__ = [
    "BenchError",
    "ClipScorer",
    "DIMENSIONS",
    "Dimension",
    "PromptEntry",
    "discover",
    "load_suite",
    "parse_dimensions",
    "parse_judge_dirs",
    "write_suite",
]
