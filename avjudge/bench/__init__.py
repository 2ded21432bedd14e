"""The AVBench benchmark of text-to-audio-video generators: prompt files, the runner, reports, human alignment,
curation, synthetic generators with known defects. The scorer of its dimensions is `avjudge.bench.scoring`."""

from .dimensions import DIMENSIONS, BenchError, Dimension, parse_dimensions
from .prompt_suite import PromptEntry, discover, load_suite, write_suite

__all__ = [
    "BenchError",
    "DIMENSIONS",
    "Dimension",
    "PromptEntry",
    "discover",
    "load_suite",
    "parse_dimensions",
    "write_suite",
]
