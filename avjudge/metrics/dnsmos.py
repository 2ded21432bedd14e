"""DNSMOS (P.835 SIG / BAK / OVRL and P.808 MOS) with the ONNX weights the `speechmos` package ships:
an audio-quality score that needs no download at all."""

from __future__ import annotations

import numpy as np

from .base import AudioNeeds, Metric, MetricError, register


@register
class DNSMOS(Metric):
    name = "dnsmos"
    aspect = "audio"
    scales = {"dnsmos_ovrl": (1.0, 5.0), "dnsmos_sig": (1.0, 5.0), "dnsmos_bak": (1.0, 5.0)}
    description = "DNSMOS P.835 signal / background / overall quality and P.808 MOS (1-5; speechmos weights)"
    audio = AudioNeeds(sample_rate=16000)

    def __init__(self, personalized: bool = False):
        try:
            from speechmos import dnsmos
        except ImportError as err:
            raise MetricError(
                "dnsmos needs the metrics extra: pip install 'avjudge[metrics]' (speechmos, onnxruntime, librosa)"
            ) from err
        self._run, self._model = dnsmos.run, "dnsmos_personalized" if personalized else "dnsmos"

    def compute(self, clip, **ctx):
        audio = self.audio_of(clip)
        if len(audio) < self.audio.sample_rate // 2:
            raise MetricError(f"{clip.source or 'clip'}: {len(audio) / 16000:.2f} s of audio is too short for dnsmos")
        # float audio may exceed full scale (a mix held in memory); playback would clip it, and so does this
        scores = self._run(np.clip(audio, -1.0, 1.0), self.audio.sample_rate, model_type=self._model)
        return {
            "dnsmos_sig": float(scores["sig_mos"]),
            "dnsmos_bak": float(scores["bak_mos"]),
            "dnsmos_ovrl": float(scores["ovrl_mos"]),
            "dnsmos_p808": float(scores["p808_mos"]),
        }
