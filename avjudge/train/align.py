"""Contrastive audio-video alignment of an Omni thinker's encoders: the tiny judges' stand-in for pretraining.

The real judges start from Qwen2.5-Omni, whose audio and vision encoders were pretrained on paired audio and
video; a tiny random thinker has encoders that see and hear nothing in particular. This trains them CLIP-style
(InfoNCE both ways, learned temperature): each clip's audio embedding (the audio encoder's output tokens,
pooled) is pulled toward its own video embedding (the vision merger's tokens, pooled) and pushed from the
other clips' in the batch. No yes/no label is used, and the language model is not touched.
"""
from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from ..jsonl import read_jsonl
from ..stats import auroc
from ..world import MANIFEST

# step, mean training loss since the last report, held-out AUROC of a clip's own audio vs another clip's
AlignmentReport = Callable[[int, float, "float | None"], None]


def world_media(judge, world: Path) -> list:
    """Every clip of a synthetic world prepared for ``judge`` without a question (what the encoders read)."""
    return [judge.prepare(judge.sample(judge.decode(world / record["video"]))) for record in read_jsonl(world / MANIFEST)]


# How a clip's output tokens become one embedding: max-pooling (a feature anywhere in the clip counts) or
# mean-pooling (what a language model's near-uniform attention over the tokens first sees)
POOLINGS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "max": lambda tokens: tokens.max(0).values, "mean": lambda tokens: tokens.mean(0)}


def clip_tokens(core, batch: dict) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """(video, audio) output tokens of each clip of a collated batch, as the language model receives them;
    ``core``: the thinker's ``.model``."""
    video = core.get_video_features(batch["pixel_values_videos"], batch["video_grid_thw"]).pooler_output
    audio = core.get_audio_features(batch["input_features"], batch["feature_attention_mask"]).last_hidden_state
    lengths = core.audio_tower._get_feat_extract_output_lengths(batch["feature_attention_mask"].sum(-1))[1]
    return list(video), list(torch.split(audio, lengths.tolist()))


def clip_embeddings(core, batch: dict, pooling: str = "max") -> tuple[torch.Tensor, torch.Tensor]:
    """(video, audio) unit embeddings per clip of a collated batch; ``core``: the thinker's ``.model``."""
    pool = POOLINGS[pooling]
    video, audio = clip_tokens(core, batch)
    return (F.normalize(torch.stack([pool(v) for v in video]), dim=-1),
            F.normalize(torch.stack([pool(a) for a in audio]), dim=-1))


def own_audio_auroc(core, batch: dict, pooling: str = "max") -> float | None:
    """AUROC, by cosine similarity, of each clip's own audio against every other clip's audio in ``batch``."""
    with torch.no_grad():
        video, audio = clip_embeddings(core, batch, pooling)
    similarity = (audio @ video.T).numpy()
    own = np.eye(len(similarity), dtype=bool)
    return auroc(np.concatenate([similarity[own], similarity[~own]]),
                 np.concatenate([np.ones(own.sum()), np.zeros((~own).sum())]))


def encoder_parameters(core) -> dict[str, torch.nn.Parameter]:
    """The parameters alignment trains, by their name in the thinker's state dict."""
    return {f"model.{module}.{name}": p for module in ("visual", "audio_tower")
            for name, p in getattr(core, module).named_parameters()}


def align_encoders(judge, media: list, held_out: list, steps: int, every: int, seed: int, batch_size: int = 32,
                   learning_rate: float = 3e-3, report: AlignmentReport | None = None,
                   pooling: str = "max") -> list[tuple[int, float, float]]:
    """Align ``judge``'s encoders on ``media`` (prepared clips without a question); every ``every`` steps and at
    the end, measure on ``held_out``. Returns [(step, loss, held-out AUROC)]. The encoders' requires_grad flags
    (the caller's freeze policy) are restored afterwards."""
    core = judge.adapter.model.model
    encoders = list(encoder_parameters(core).values())
    trainable = [p.requires_grad for p in encoders]
    for p in encoders:
        p.requires_grad = True
    log_scale = torch.nn.Parameter(torch.tensor(math.log(10.0)))
    optimiser = torch.optim.AdamW(encoders + [log_scale], lr=learning_rate, weight_decay=0.01)
    test_batch = judge.adapter.collate(held_out)
    order, rng, losses, history = [], random.Random(seed), [], []
    try:
        for step in range(1, steps + 1):
            if len(order) < batch_size:
                order += rng.sample(range(len(media)), len(media))
            chosen, order = order[:batch_size], order[batch_size:]
            video, audio = clip_embeddings(core, judge.adapter.collate([media[i] for i in chosen]), pooling)
            logits = log_scale.exp() * audio @ video.T
            target = torch.arange(len(chosen))
            loss = (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2
            loss.backward()
            optimiser.step()
            optimiser.zero_grad()
            losses.append(loss.item())
            if step % every == 0 or step == steps:
                history.append((step, float(np.mean(losses)), own_audio_auroc(core, test_batch, pooling)))
                if report:
                    report(*history[-1])
                losses = []
    finally:
        for p, flag in zip(encoders, trainable):
            p.requires_grad = flag
    return history
