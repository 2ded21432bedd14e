"""SonicBench: the suite (release reader, answer rules, tables)."""

from ..parsing import strict_answer
from .suite import ATTRIBUTES, PARADIGMS, SonicBench, paper_answer

__all__ = ["ATTRIBUTES", "PARADIGMS", "SonicBench", "paper_answer", "strict_answer"]
