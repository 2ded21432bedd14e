"""`avjudge demo`: the whole pipeline on built-in defaults, on a CPU, as a tutorial (`avjudge.demo.run.run_demo`).
Its sizes and inputs (`avjudge.demo.size`) are read without model code."""

from .size import FULL, QUICK, RECIPE, TRAIN_CONFIGS, DemoSize

__all__ = ["DemoSize", "FULL", "QUICK", "RECIPE", "TRAIN_CONFIGS"]
