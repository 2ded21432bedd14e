"""PANNs sound-event tags a curation pipeline filters on: the share of a clip's windows that are speech, music,
other sound (noise) or silence.

Each window (1 s by default, every 1 s; a tail under half a window is left out, a clip shorter than a window is one
window) goes through PANNs Cnn14 at 16 kHz (the ``panns_cnn14_16k`` checkpoint of the set metrics); its AudioSet
class probabilities (sigmoid) are compared at the top of AudioSet's ontology: "Speech", "Music", "Silence", and the
most likely of every other class, which stands for other sound. The window goes to the largest of the four, and each
output is the share of windows that went to it (the four add up to 1). The class names come from AudioSet's
``class_labels_indices.csv``, a checkpoint file beside the network's.
"""

from __future__ import annotations

import csv

import numpy as np

from .base import AudioNeeds, Metric, MetricError, register
from .checkpoints import resolve
from .panns import CHECKPOINT, CLASSES, PannsFeatures

SAMPLE_RATE = 16000
LABELS = "audioset_labels"
GROUP_CLASSES = {"speech": "Speech", "music": "Music", "silence": "Silence"}  # display names; the rest is noise
GROUPS = ("speech", "music", "noise", "silence")


def group_indices(labels_csv) -> dict[str, int]:
    """The class index of each named group in AudioSet's ``index,mid,display_name`` table."""
    with open(labels_csv, newline="", encoding="utf-8") as f:
        names = {row["display_name"]: int(row["index"]) for row in csv.DictReader(f)}
    if len(names) != CLASSES:
        raise MetricError(f"{labels_csv} names {len(names)} classes, not AudioSet's {CLASSES}")
    missing = [name for name in GROUP_CLASSES.values() if name not in names]
    if missing:
        raise MetricError(f"{labels_csv} has no class {missing}: is it AudioSet's class_labels_indices.csv?")
    return {group: names[name] for group, name in GROUP_CLASSES.items()}


def windows_of(audio: np.ndarray, window: int) -> list[np.ndarray]:
    """Consecutive ``window``-sample windows; a tail under half a window is left out; a shorter clip is one."""
    if len(audio) <= window:
        return [audio]
    count = len(audio) // window + (len(audio) % window >= window / 2)
    return [audio[k * window : (k + 1) * window] for k in range(count)]


def window_groups(probabilities: np.ndarray, indices: dict[str, int]) -> np.ndarray:
    """(windows, 527) class probabilities -> each window's group, an index into GROUPS."""
    others = np.ones(probabilities.shape[1], bool)
    others[list(indices.values())] = False
    scores = np.stack(
        [probabilities[:, indices["speech"]], probabilities[:, indices["music"]], probabilities[:, others].max(axis=1),
         probabilities[:, indices["silence"]]],
        axis=1,
    )  # fmt: skip
    return scores.argmax(axis=1)


@register
class PannsTags(Metric):
    name = "panns_tags"
    aspect = "audio"
    description = "PANNs Cnn14 sound-event tags: the shares of 1 s windows that are speech, music, noise or silence"
    audio = AudioNeeds(sample_rate=SAMPLE_RATE)
    checkpoints = (CHECKPOINT, LABELS)
    takes_device = True
    scales = {f"panns_{g}_share": (0.0, 1.0) for g in GROUPS}

    def __init__(self, root=None, device: str = "cpu", window_seconds: float = 1.0, batch_size: int = 16):
        (labels,) = resolve(LABELS, root).values()
        self.indices = group_indices(labels)
        self.features = PannsFeatures(root, device, batch_size)
        self.window = int(round(window_seconds * SAMPLE_RATE))

    def compute(self, clip, **ctx):
        audio = self.audio_of(clip)
        if len(audio) < SAMPLE_RATE // 2:
            raise MetricError(f"{len(audio) / SAMPLE_RATE:.2f} s of audio is too short for panns_tags (needs 0.5 s)")
        logits = np.stack([f["logits"] for f in self.features.features(windows_of(audio, self.window))])
        groups = window_groups(1.0 / (1.0 + np.exp(-logits)), self.indices)
        shares = np.bincount(groups, minlength=len(GROUPS)) / len(groups)
        return {f"panns_{g}_share": float(s) for g, s in zip(GROUPS, shares)} | {"panns_windows": float(len(groups))}
