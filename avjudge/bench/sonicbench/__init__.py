"""SonicBench: the suite (release reader, answer rules, tables)."""

from .suite import ATTRIBUTES, PARADIGMS, SonicBench, paper_answer, strict_answer

__all__ = ["ATTRIBUTES", "PARADIGMS", "SonicBench", "paper_answer", "strict_answer"]
