"""SonicBench: the suite (release reader, answer rules, tables), its stimulus generator, the encoder probe, the
psychometric sweeps and their commands."""

from ....moved import moved_names
from ...parsing import strict_answer
from .suite import ATTRIBUTES, PARADIGMS, SonicBench, paper_answer

__all__ = ["ATTRIBUTES", "PARADIGMS", "SonicBench", "paper_answer", "strict_answer"]

__getattr__ = moved_names("avjudge.omni.sonicbench", {"meters": "avjudge.omni:meters"})  # its meters are shared now
