"""Signal metrics of the AVBench suite: one registry, checkpoints verified, each says what it reads of a clip."""

from . import (  # noqa: F401 (register)
    audiobox,
    clap,
    desync,
    dfarena,
    dnsmos,
    dover,
    laion_aesthetic,
    nisqa,
    panns_tags,
    speech_content,
    syncnet,
)
from .base import METRICS, Metric, MetricError, get_metric, load_metrics
from .checkpoints import CheckpointMissing, resolve, verify_all

__all__ = [
    "CheckpointMissing",
    "METRICS",
    "Metric",
    "MetricError",
    "get_metric",
    "resolve",
    "load_metrics",
    "verify_all",
]
