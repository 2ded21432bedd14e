"""Audiobox aesthetics: content enjoyment (CE), content usefulness (CU), production complexity (PC) and
production quality (PQ), 1-10, and AVBench's aggregate (CE + CU + PQ - PC) / 4.

Why an optional extra and not our own network: the checkpoint's keys follow Meta's own WavLM
implementation (gated relative position bias, fairseq layout), not transformers' ``WavLMModel``, and
without the weights here a re-implementation could not be checked. So avjudge uses the model classes
of the ``audiobox-aesthetics`` package, installed with ``--no-deps``: its model code needs only torch
and huggingface_hub, while torchaudio serves only its file reading and resampling, which avjudge's
decoder replaces. avjudge builds the model from the checkpoint's ``config.json``, loads
``model.safetensors`` strictly, and runs the package's inference recipe itself: 16 kHz mono, 10 s
windows every 10 s, the last zero-padded and masked, each axis un-normalised with the checkpoint's
target statistics and averaged over windows weighted by how much audio each holds.
"""

from __future__ import annotations

import json

import numpy as np

from .base import AudioNeeds, Metric, MetricError, load_strict, register
from .checkpoints import resolve

SAMPLE_RATE = 16000
WINDOW = 10 * SAMPLE_RATE
AXES = ("CE", "CU", "PC", "PQ")


def aggregate(axes: dict[str, float]) -> float:
    """AVBench's audio aesthetics: production complexity counts against the score."""
    return (axes["CE"] + axes["CU"] + axes["PQ"] - axes["PC"]) / 4


def window_batch(audio: np.ndarray):
    """(wav (k, 1, WINDOW), mask (k, 1, WINDOW), weights (k,)): consecutive windows, the last zero-padded."""
    import torch

    starts = range(0, len(audio), WINDOW)
    wav = torch.zeros(len(starts), 1, WINDOW)
    mask = torch.zeros(len(starts), 1, WINDOW, dtype=torch.bool)
    weights = torch.empty(len(starts))
    for i, start in enumerate(starts):
        chunk = torch.from_numpy(audio[start : start + WINDOW])
        wav[i, 0, : len(chunk)], mask[i, 0, : len(chunk)] = chunk, True
        weights[i] = len(chunk) / WINDOW
    return wav, mask, weights


@register
class AudioboxAesthetics(Metric):
    name = "audiobox"
    aspect = "audio"
    # each axis 1-10; the aggregate (CE + CU + PQ - PC) / 4 spans what those give
    scales = {
        "audiobox_aggregate": (-1.75, 7.25),
        **{f"audiobox_{axis}": (1.0, 10.0) for axis in ("ce", "cu", "pc", "pq")},
    }
    description = "Audiobox aesthetics CE / CU / PC / PQ (1-10) and (CE + CU + PQ - PC) / 4"
    audio = AudioNeeds(sample_rate=SAMPLE_RATE)
    checkpoints = ("audiobox_aesthetics",)

    def __init__(self, root=None, batch_size: int = 4):
        try:
            import torch
            from audiobox_aesthetics.model.aes import AesMultiOutput
            from safetensors.torch import load_file
        except ImportError as err:
            raise MetricError(
                "audiobox needs Meta's model code: pip install --no-deps audiobox-aesthetics==0.0.4 "
                "(`make install` does; torchaudio is not needed)"
            ) from err
        paths = resolve("audiobox_aesthetics", root)
        config = json.loads(paths["config.json"].read_text())
        what = "an Audiobox aesthetics checkpoint this version of the model code loads"
        try:
            model = AesMultiOutput(**config)
        except TypeError as err:
            raise MetricError(f"{paths['config.json']} is not {what}: {err}") from err
        self.model = load_strict(model, load_file(paths["model.safetensors"]), paths["model.safetensors"], what)
        self.stats = {
            axis: (float(config["target_transform"][axis]["mean"]), float(config["target_transform"][axis]["std"]))
            for axis in AXES
        }
        self.batch_size, self._torch = batch_size, torch

    def predict(self, audio: np.ndarray) -> dict[str, float]:
        torch = self._torch
        if len(audio) < SAMPLE_RATE // 10:
            raise MetricError(f"{len(audio) / SAMPLE_RATE:.3f} s of audio is too short for audiobox (0.1 s at least)")
        wav, mask, weights = window_batch(audio.astype(np.float32))
        preds = {axis: [] for axis in AXES}
        with torch.inference_mode():
            for start in range(0, len(wav), self.batch_size):
                out = self.model(
                    {"wav": wav[start : start + self.batch_size], "mask": mask[start : start + self.batch_size]}
                )
                for axis in AXES:
                    preds[axis].append(out[axis].float())
        axes = {}
        for axis in AXES:
            mean, std = self.stats[axis]
            values = torch.cat(preds[axis]) * std + mean
            axes[axis] = float((values * weights).sum() / weights.sum())
        return {**{f"audiobox_{axis.lower()}": v for axis, v in axes.items()}, "audiobox_aggregate": aggregate(axes)}

    def compute(self, clip, **ctx):
        return self.predict(self.audio_of(clip))
