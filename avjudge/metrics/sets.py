"""Metrics of a generated set against a reference set (`avjudge metrics compare`): which extractor's features each
reads and which statistic it takes of them, under avjudge's name and av-benchmark's keys (hkchengrex/av-benchmark
@ 050a5cdb, ``av_bench/evaluate.py``), so a figure can be set beside the papers'."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..registry import Registry
from .base import MetricError
from .distributions import frechet_distance, inception_score, paired_kl
from .panns import PannsFeatures
from .passt import SAMPLE_RATE as PASST_RATE
from .passt import PasstFeatures, passt_waveform
from .reference_audio import SAMPLE_RATE, reference_waveform
from .vggish import VggishFeatures, examples_of


@dataclass(frozen=True)
class Extractor:
    """How to build a feature extractor and what it reads of a clip: ``prepare(clip)`` gives its input,
    ``build(root, device, batch_size)`` an object whose ``features(inputs)`` gives each input's named arrays."""

    name: str
    build: Callable
    prepare: Callable
    sample_rate: int  # what ``prepare`` resamples to, from the file's own rate (av-benchmark's order)
    version: str  # changes when what it computes changes: cached features of another version are not reused


EXTRACTORS = Registry("feature extractor", MetricError)
EXTRACTORS.register(Extractor("panns", PannsFeatures, reference_waveform, SAMPLE_RATE, "cnn14-16k-8s-3"))
EXTRACTORS.register(Extractor("vggish", VggishFeatures, examples_of, SAMPLE_RATE, "vggish-8s-3"))
EXTRACTORS.register(Extractor("passt", PasstFeatures, passt_waveform, PASST_RATE, "passt-s-swa-8s-in-10s-3"))


def _rows(features: dict, feature: str) -> np.ndarray:
    """Every row of a set's features: a clip's embedding is one row, its per-example embeddings (VGGish) several."""
    return np.concatenate([np.atleast_2d(f[feature]) for f in features.values()]) if features else np.empty((0, 0))


def _fd(generated: dict, reference: dict, feature: str, pairs: list) -> dict[str, float]:
    return {"": frechet_distance(_rows(generated, feature), _rows(reference, feature))}


def _kl(generated: dict, reference: dict, feature: str, pairs: list) -> dict[str, float]:
    if not pairs:
        raise MetricError("KL compares clips paired by id, and no generated clip has a reference of its id")
    g = np.stack([generated[a][feature] for a, _ in pairs])
    r = np.stack([reference[b][feature] for _, b in pairs])
    return {"": paired_kl(g, r)}


def _is(generated: dict, reference: dict, feature: str, pairs: list) -> dict[str, float]:
    mean, std = inception_score(_rows(generated, feature))
    return {"": mean, "_std": std}


STATISTICS = {"fd": _fd, "kl": _kl, "is": _is}


@dataclass(frozen=True)
class SetMetric:
    name: str
    description: str
    extractor: str
    feature: str
    statistic: str  # a key of STATISTICS
    reported: dict[str, str]  # avjudge's output name -> av-benchmark's key
    paired: bool = False  # reads clips paired by id
    paired_in_av_benchmark: bool = False  # av-benchmark takes it over the paired clips only (its PaSST metrics)


SET_METRICS = Registry("set metric", MetricError, "`avjudge metrics compare --help` lists them")
for metric in (
    SetMetric("fd_panns", "Fréchet distance of PANNs Cnn14 embeddings (2048-d)", "panns", "embedding", "fd",
              {"fd_panns": "FD-PANN"}),
    SetMetric("fd_vggish", "Fréchet distance of VGGish embeddings (128-d), one per 0.96 s of every clip", "vggish",
              "frames", "fd", {"fd_vggish": "FD-VGG"}),
    SetMetric("kl_panns", "KL(reference || generated) of PANNs class distributions, paired by id", "panns", "logits",
              "kl", {"kl_panns": "KL-PANNS-softmax"}, paired=True),
    SetMetric("is_panns", "inception score of the generated clips' PANNs class distributions (10 splits)", "panns",
              "logits", "is", {"is_panns": "ISC-PANNS-mean", "is_panns_std": "ISC-PANNS-std"}),
    SetMetric("fd_passt", "Fréchet distance of PaSST embeddings (768-d)", "passt", "embedding", "fd",
              {"fd_passt": "FD-PASST"}, paired_in_av_benchmark=True),
    SetMetric("kl_passt", "KL(reference || generated) of PaSST class distributions, paired by id", "passt", "logits",
              "kl", {"kl_passt": "KL-PASST-softmax"}, paired=True),
    SetMetric("is_passt", "inception score of the generated clips' PaSST class distributions (10 splits)", "passt",
              "logits", "is", {"is_passt": "ISC-PASST-mean", "is_passt_std": "ISC-PASST-std"},
              paired_in_av_benchmark=True),
):  # fmt: skip
    SET_METRICS.register(metric)


def evaluate(metric: SetMetric, generated: dict, reference: dict, pairs: list[tuple[str, str]]) -> dict[str, float]:
    """``metric``'s outputs (avjudge's names) from each set's features by id and the (generated, reference) pairs."""
    values = STATISTICS[metric.statistic](generated, reference, metric.feature, pairs)
    return {f"{metric.name}{suffix}": value for suffix, value in values.items()}
