"""WorldSense: its release read into avjudge's questions, its paper's answer rule, its tables (`suite`)."""

from .suite import WorldSense, paper_answer

__all__ = ["WorldSense", "paper_answer"]
