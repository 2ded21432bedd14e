"""The AVBench benchmark of text-to-audio-video generators: prompt files, the runner, reports, human alignment,
curation, synthetic generators with known defects. The dimensions it scores and their scorer are the scoring
layer's (`avjudge.scoring.dimensions`, `avjudge.scoring.clip_scorer`), shared with filtering."""

from ..moved import moved_names
from .errors import BenchError
from .prompt_files import PromptEntry, discover, load_prompts, write_prompts

__all__ = ["BenchError", "PromptEntry", "discover", "load_prompts", "write_prompts"]

__getattr__ = moved_names(
    __name__,
    {
        "DIMENSIONS": "avjudge.scoring.dimensions:DIMENSIONS",
        "Dimension": "avjudge.scoring.dimensions:Dimension",
        "parse_dimensions": "avjudge.scoring.dimensions:parse_dimensions",
        "load_suite": "avjudge.bench.prompt_files:load_prompts",
        "write_suite": "avjudge.bench.prompt_files:write_prompts",
    },
)
