"""Signal metrics of the AVBench suite: one registry, checkpoints verified, clips decoded once."""

from . import audiobox, dfarena, dnsmos, dover, laion_aesthetic, nisqa, speech_content, syncnet  # noqa: F401 (register)
from .base import METRICS, NATIVE_FPS, Metric, MetricError, decode_fps, get_metric
from .checkpoints import CheckpointMissing, resolve, verify_all
from .run import load_metrics, run_metrics

__all__ = [
    "CheckpointMissing",
    "METRICS",
    "Metric",
    "MetricError",
    "NATIVE_FPS",
    "decode_fps",
    "get_metric",
    "resolve",
    "load_metrics",
    "run_metrics",
    "verify_all",
]
