"""The paper's linear probe (Appendix N): frozen features -> Linear(D, 256) -> mean over time -> Linear(256, 2),
AdamW (betas 0.9, 0.98; weight decay 0.01) with a cosine schedule after 10 % warm-up, batch 2, up to 20 epochs with
early stopping (patience 3, threshold 0.001) on the held-out half's accuracy, a 50/50 split, seed 42; one probe per
attribute x paradigm. Labels come from the items' ``label`` (recognition: above the threshold; comparison: the first
clip larger).

Encoders are a registry: ``logmel`` (64 log-mel bands, 25 ms windows every 10 ms) needs no weights; ``qwen2_audio``,
``qwen2_5_omni`` and ``qwen3_omni`` read the last hidden states of a checkpoint's audio encoder (a base model or a
judge trained from it: the probe shows what fine-tuning left in the encoder). Mean pooling
cannot tell which of a comparison's two clips holds what, for any encoder: the paper's probe has that limit too.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy.io import wavfile

from ....data.questions import ChoiceQuestion
from ...base import SuiteError

MEL_BANDS = 64


def _mel_filterbank(sr: int, n_fft: int, bands: int) -> np.ndarray:
    def hz_to_mel(f):
        return 2595 * np.log10(1 + np.asarray(f) / 700)

    edges = 700 * (10 ** (np.linspace(0, hz_to_mel(sr / 2), bands + 2) / 2595) - 1)
    freqs = np.fft.rfftfreq(n_fft, 1 / sr)
    bank = np.zeros((bands, len(freqs)))
    for b in range(bands):
        lo, mid, hi = edges[b : b + 3]
        bank[b] = np.clip(np.minimum((freqs - lo) / (mid - lo), (hi - freqs) / (hi - mid)), 0, None)
    return bank


def logmel(audio: np.ndarray, sr: int) -> np.ndarray:
    """(frames, 64) log-mel energies of mono audio."""
    win, hop = int(0.025 * sr), int(0.010 * sr)
    n_fft = 1 << (win - 1).bit_length()
    frames = np.lib.stride_tricks.sliding_window_view(audio, win)[::hop] * np.hanning(win)
    power = np.abs(np.fft.rfft(frames, n_fft)) ** 2
    return np.log(power @ _mel_filterbank(sr, n_fft, MEL_BANDS).T + 1e-8).astype(np.float32)


Encoder = Callable[[np.ndarray, int], np.ndarray]  # (mono audio, sample rate) -> (frames, dim)
CHECKPOINT_ENCODERS = ("qwen2_audio", "qwen2_5_omni", "qwen3_omni")  # model families whose audio encoder is read


def checkpoint_encoder(family: str, checkpoint: Path, device: str = "auto") -> Encoder:
    """The audio encoder of a checkpoint of ``family``, frozen (loaded once)."""
    from ....judges.adapters import adapter_for
    from ....media import resample

    adapter = adapter_for(checkpoint).load(Path(checkpoint), device=device)
    if adapter.family != family:
        raise SuiteError(
            f"{checkpoint} is a {adapter.family} checkpoint, not {family}: give --encoder {adapter.family}"
        )
    rate = adapter.feature_extractor.sampling_rate

    def encode(audio: np.ndarray, sr: int) -> np.ndarray:
        audio = audio if sr == rate else resample(audio[None], sr, rate)[0]
        return adapter.audio_encoder_states(audio)

    return encode


def make_encoder(name: str, checkpoint: Path | None = None, device: str = "auto") -> Encoder:
    if name == "logmel":
        return logmel
    if name not in CHECKPOINT_ENCODERS:
        raise SuiteError(f"unknown probe encoder {name!r}; known: logmel, {', '.join(CHECKPOINT_ENCODERS)}")
    if checkpoint is None:
        raise SuiteError(f"--encoder {name} reads a checkpoint's audio encoder: give --weights DIR")
    return checkpoint_encoder(name, checkpoint, device)


def item_features(question: ChoiceQuestion, encoder: Encoder) -> np.ndarray:
    sr, pcm = wavfile.read(question.media)
    audio = pcm.astype(np.float32) / 32767
    return encoder(audio.mean(axis=1) if audio.ndim == 2 else audio, sr)


def item_label(question: ChoiceQuestion) -> int:
    label = question.extra.get("label") or {}
    key = "above_threshold" if "above_threshold" in label else "first_is_larger"
    if key not in label:
        raise SuiteError(f"question {question.id} has no label (probe items come from `omni sonicbench make`)")
    return int(label[key])


def train_probe(features: list[np.ndarray], labels: list[int], seed: int = 42, epochs: int = 20) -> float:
    """The held-out half's best accuracy of a probe trained on the other half (split stratified by label)."""
    import torch

    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    labels_arr = np.array(labels)
    train, held = [], []
    for value in (0, 1):
        idx = rng.permutation(np.flatnonzero(labels_arr == value))
        train += list(idx[: len(idx) // 2])
        held += list(idx[len(idx) // 2 :])
    mean = np.concatenate([features[i] for i in train]).mean(axis=0)
    std = np.concatenate([features[i] for i in train]).std(axis=0) + 1e-6
    x = [torch.from_numpy((f - mean) / std).float() for f in features]
    projection, classifier = torch.nn.Linear(x[0].shape[1], 256), torch.nn.Linear(256, 2)
    params = [*projection.parameters(), *classifier.parameters()]
    optimizer = torch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.98), weight_decay=0.01)
    steps = epochs * max(1, (len(train) + 1) // 2)
    warmup = max(1, int(0.1 * steps))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda s: (s + 1) / warmup if s < warmup else 0.5 * (1 + np.cos(np.pi * (s - warmup) / max(1, steps - warmup))),
    )

    def logits(i: int) -> torch.Tensor:
        return classifier(projection(x[i]).mean(dim=0))

    best, stale = 0.0, 0
    for _ in range(epochs):
        for batch in np.array_split(rng.permutation(train), max(1, (len(train) + 1) // 2)):
            loss = torch.nn.functional.cross_entropy(
                torch.stack([logits(i) for i in batch]), torch.tensor(labels_arr[batch])
            )
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
        with torch.no_grad():
            accuracy = float(np.mean([int(logits(i).argmax()) == labels_arr[i] for i in held]))
        best, stale = (accuracy, 0) if accuracy > best + 0.001 else (best, stale + 1)
        if stale >= 3:
            break
    return best


def probe_items(questions: list[ChoiceQuestion], encoder: Encoder = logmel, seed: int = 42) -> dict:
    """``{attribute: {paradigm: held-out accuracy}}`` of one probe per attribute x paradigm."""
    cells: dict[tuple[str, str], list[ChoiceQuestion]] = {}
    for q in questions:
        cells.setdefault((q.groups["attribute"], q.groups["paradigm"]), []).append(q)
    result: dict = {}
    for (attribute, paradigm), items in cells.items():
        counts = [sum(item_label(q) == value for q in items) for value in (0, 1)]
        if min(counts) < 2:  # half of each label trains the probe, the other half measures it
            raise SuiteError(
                f"{attribute} {paradigm}: {counts[0]} and {counts[1]} items of its two answers; the probe needs at "
                "least 2 of each (one to train on, one held out): make the items with --per-cell 4 or more"
            )
        features = [item_features(q, encoder) for q in items]
        result.setdefault(attribute, {})[paradigm] = train_probe(features, [item_label(q) for q in items], seed)
    return result
