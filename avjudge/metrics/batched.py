"""Batching for the audio extractors of the set metrics: waveforms of one length run together, ``batch_size`` at a
time, and each clip gets its own embedding and logits back."""

from __future__ import annotations

from typing import Callable

import numpy as np


def embeddings_and_logits(run: Callable, waveforms: list[np.ndarray], batch_size: int, device: str) -> list[dict]:
    """Each waveform's ``embedding`` and ``logits`` (float32) from ``run``, which maps a (B, N) tensor of waveforms
    to (B, D) embeddings and (B, classes) logits."""
    import torch

    out: list[dict] = [{}] * len(waveforms)
    by_length: dict[int, list[int]] = {}
    for k, w in enumerate(waveforms):
        by_length.setdefault(len(w), []).append(k)
    with torch.inference_mode():
        for members in by_length.values():
            for start in range(0, len(members), batch_size):
                batch = members[start : start + batch_size]
                embedding, logits = run(torch.from_numpy(np.stack([waveforms[k] for k in batch])).to(device))
                for j, k in enumerate(batch):
                    out[k] = {
                        "embedding": embedding[j].float().cpu().numpy(),
                        "logits": logits[j].float().cpu().numpy(),
                    }
    return out
