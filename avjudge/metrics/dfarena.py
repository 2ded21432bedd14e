"""Speech realism: the bona fide probability of a speech anti-spoofing classifier (DF-Arena) over 4 s windows.

The model is a local transformers directory (``AutoModelForAudioClassification``; no hub access).
DF-Arena ships its architecture as custom code, so the directory is a whole-folder checkpoint: every
file in it, the code included, is pinned by sha256 with ``avjudge checkpoints pin dfarena`` before
``trust_remote_code`` lets transformers run it, and a later change to any file is refused.

Windows are 64600 samples at 16 kHz (the 4.04 s DF-Arena was trained on), every 2 s, the last one
ending at the end of the audio; audio shorter than one window is tiled to fill it, as the model's own
evaluation does. Per window: softmax of the logits at the label named bona fide. Per clip: mean and
minimum over windows (the minimum catches a short synthetic stretch).
"""

from __future__ import annotations

import numpy as np

from .base import AudioNeeds, Metric, MetricError, register
from .checkpoints import resolve

SAMPLE_RATE = 16000
WINDOW = 64600
HOP = 2 * SAMPLE_RATE
BONAFIDE_LABELS = ("bonafide", "bona fide", "bona-fide", "genuine", "real")


def windows(audio: np.ndarray, window: int = WINDOW, hop: int = HOP) -> np.ndarray:
    """(k, window) slices: every ``hop`` samples and one ending at the end; short audio tiled to one window."""
    if len(audio) == 0:
        raise MetricError("no audio samples for dfarena")
    if len(audio) <= window:
        return np.tile(audio, -(-window // len(audio)))[None, :window]
    starts = list(range(0, len(audio) - window + 1, hop))
    if starts[-1] != len(audio) - window:
        starts.append(len(audio) - window)
    return np.stack([audio[s : s + window] for s in starts])


def bonafide_index(id2label: dict) -> int:
    for index, label in id2label.items():
        if str(label).strip().lower() in BONAFIDE_LABELS:
            return int(index)
    raise MetricError(
        f"the classifier's labels {sorted(map(str, id2label.values()))} name no bona fide class "
        f"(one of {BONAFIDE_LABELS})"
    )


@register
class DFArena(Metric):
    name = "dfarena"
    aspect = "audio"
    scales = {"dfarena_bonafide_mean": (0.0, 1.0), "dfarena_bonafide_min": (0.0, 1.0)}
    description = "DF-Arena speech realism: bona fide probability over 4 s windows (mean, min; 0-1)"
    audio = AudioNeeds(sample_rate=SAMPLE_RATE)
    checkpoints = ("dfarena",)

    def __init__(self, root=None, batch_size: int = 8):
        try:
            import torch  # noqa: F401
            from transformers import AutoFeatureExtractor, AutoModelForAudioClassification
        except ImportError as err:
            raise MetricError("dfarena needs torch and transformers: pip install 'avjudge[metrics,judges]'") from err
        folder = resolve("dfarena", root)["config.json"].parent
        # every file in the folder, its code too, was pinned and verified just above
        self.model = AutoModelForAudioClassification.from_pretrained(
            folder, trust_remote_code=True, local_files_only=True
        ).eval()
        self.extractor = (
            AutoFeatureExtractor.from_pretrained(folder, trust_remote_code=True, local_files_only=True)
            if (folder / "preprocessor_config.json").is_file()
            else None
        )
        self.bonafide = bonafide_index(self.model.config.id2label)
        self.batch_size = batch_size

    def window_scores(self, audio: np.ndarray) -> np.ndarray:
        import torch

        chunks = windows(audio.astype(np.float32))
        scores = []
        with torch.inference_mode():
            for start in range(0, len(chunks), self.batch_size):
                batch = chunks[start : start + self.batch_size]
                inputs = (
                    self.extractor(list(batch), sampling_rate=SAMPLE_RATE, return_tensors="pt")
                    if self.extractor
                    else {"input_values": torch.from_numpy(batch)}
                )
                logits = self.model(**inputs).logits.float()
                scores.append(torch.softmax(logits, dim=-1)[:, self.bonafide].numpy())
        return np.concatenate(scores)

    def compute(self, clip, **ctx):
        scores = self.window_scores(self.audio_of(clip))
        return {
            "dfarena_bonafide_mean": float(scores.mean()),
            "dfarena_bonafide_min": float(scores.min()),
            "dfarena_windows": float(len(scores)),
        }
