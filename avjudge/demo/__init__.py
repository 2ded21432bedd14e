"""`avjudge demo`: the whole pipeline on built-in defaults, on a CPU, as a tutorial (see `run_demo`)."""

from .run import QUICK, RECIPE, TRAIN_CONFIGS, DemoSize, build_demo_pairs, held_out_examples, run_demo, verify_world

__all__ = [
    "DemoSize",
    "QUICK",
    "RECIPE",
    "TRAIN_CONFIGS",
    "build_demo_pairs",
    "held_out_examples",
    "run_demo",
    "verify_world",
]
