"""Pretraining of an Omni thinker's encoders on a synthetic world: the tiny judges' stand-in for pretraining.

The real judges start from Qwen2.5-Omni, whose audio and vision encoders were pretrained on paired audio and
video; a tiny random thinker has encoders that see and hear nothing in particular. Two objectives, neither of
which uses a yes/no label or touches the language model:

- `align_encoders`, contrastive (CLIP-style InfoNCE both ways, learned temperature): each clip's audio embedding
  (the audio encoder's output tokens, pooled) is pulled toward its own video embedding (the vision merger's
  tokens, pooled) and pushed from the other clips' in the batch. It learns which sounds go with which pictures.
- `pretrain_presence`, supervised: linear heads read what is on screen (colours, shapes, place) and what is heard
  (notes, timbres, ambience) from the mean of the RMS-normalised video tokens of one clip and audio tokens of
  *another*, pooled together, as a language model's first, near-uniform attention pools them. The encoders learn
  to say what they see and hear, each where the other modality's tokens do not blur it; which sound goes with
  which picture is left for the judge to learn.
"""

from __future__ import annotations

import math
import random
from functools import partial
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from avjudge.jsonl import read_jsonl
from avjudge.stats import auroc
from avjudge.world import MANIFEST, vocab

# step, mean training loss since the last report, the objective's held-out AUROC
AlignmentReport = Callable[[int, float, "float | None"], None]


def world_media(judge, world: Path) -> list:
    """Every clip of a synthetic world prepared for ``judge`` without a question (what the encoders read)."""
    return [
        judge.prepare(judge.sample(judge.decode(world / record["video"]))) for record in read_jsonl(world / MANIFEST)
    ]


# How a clip's output tokens become one embedding: max-pooling (a feature anywhere in the clip counts) or
# mean-pooling (what a language model's near-uniform attention over the tokens first sees)
POOLINGS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "max": lambda tokens: tokens.max(0).values,
    "mean": lambda tokens: tokens.mean(0),
}


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
    return (
        F.normalize(torch.stack([pool(v) for v in video]), dim=-1),
        F.normalize(torch.stack([pool(a) for a in audio]), dim=-1),
    )


def own_audio_auroc(core, batch: dict, pooling: str = "max") -> float | None:
    """AUROC, by cosine similarity, of each clip's own audio against every other clip's audio in ``batch``."""
    with torch.no_grad():
        video, audio = clip_embeddings(core, batch, pooling)
    similarity = (audio @ video.T).numpy()
    own = np.eye(len(similarity), dtype=bool)
    return auroc(
        np.concatenate([similarity[own], similarity[~own]]),
        np.concatenate([np.ones(own.sum()), np.zeros((~own).sum())]),
    )


def encoder_parameters(core) -> dict[str, torch.nn.Parameter]:
    """The parameters alignment trains, by their name in the thinker's state dict."""
    return {
        f"model.{module}.{name}": p
        for module in ("visual", "audio_tower")
        for name, p in getattr(core, module).named_parameters()
    }


def _train_encoders(
    judge,
    loss: Callable[[list[int]], torch.Tensor],
    measure: Callable[[], "float | None"],
    extra: list[torch.nn.Parameter],
    clips: int,
    steps: int,
    every: int,
    seed: int,
    batch_size: int,
    learning_rate: float,
    report: AlignmentReport | None,
) -> list[tuple[int, float, float]]:
    """Train ``judge``'s encoders (and ``extra`` parameters) on ``loss`` of batches of clip indices below ``clips``;
    every ``every`` steps and at the end, ``measure``. The encoders' requires_grad flags (the caller's freeze
    policy) are restored afterwards."""
    encoders = list(encoder_parameters(judge.adapter.model.model).values())
    trainable = [p.requires_grad for p in encoders]
    for p in encoders:
        p.requires_grad = True
    optimiser = torch.optim.AdamW(encoders + extra, lr=learning_rate, weight_decay=0.01)
    order, rng, losses, history = [], random.Random(seed), [], []
    try:
        for step in range(1, steps + 1):
            if len(order) < batch_size:
                order += rng.sample(range(clips), clips)
            chosen, order = order[:batch_size], order[batch_size:]
            value = loss(chosen)
            value.backward()
            optimiser.step()
            optimiser.zero_grad()
            losses.append(value.item())
            if step % every == 0 or step == steps:
                history.append((step, float(np.mean(losses)), measure()))
                if report:
                    report(*history[-1])
                losses = []
    finally:
        for p, flag in zip(encoders, trainable):
            p.requires_grad = flag
    return history


def info_nce(logits: torch.Tensor) -> torch.Tensor:
    """InfoNCE both ways of a square similarity matrix whose diagonal holds the matching pairs (CLIP's loss)."""
    target = torch.arange(len(logits))
    return (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2


def _contrastive(
    judge,
    media: list,
    held_out: list,
    similarities: Callable[[object, dict], list[torch.Tensor]],
    measure: Callable[[object, dict], "float | None"],
    steps: int,
    every: int,
    seed: int,
    batch_size: int,
    learning_rate: float,
    report: AlignmentReport | None,
) -> list[tuple[int, float, float]]:
    """Train ``judge``'s encoders on InfoNCE (learned temperature) over the square similarity matrices
    ``similarities(core, batch)`` gives a collated batch of ``media`` (their diagonals the matching pairs), averaged;
    ``measure(core, held-out batch)`` every ``every`` steps. Returns [(step, loss, measure)]."""
    core = judge.adapter.model.model
    log_scale = torch.nn.Parameter(torch.tensor(math.log(10.0)))
    test_batch = judge.adapter.collate(held_out)

    def loss(chosen: list[int]) -> torch.Tensor:
        matrices = similarities(core, judge.adapter.collate([media[i] for i in chosen]))
        return torch.stack([info_nce(log_scale.exp() * m) for m in matrices]).mean()

    return _train_encoders(judge, loss, lambda: measure(core, test_batch), [log_scale], len(media), steps, every, seed,
                           batch_size, learning_rate, report)  # fmt: skip


def align_encoders(
    judge,
    media: list,
    held_out: list,
    steps: int,
    every: int,
    seed: int,
    batch_size: int = 32,
    learning_rate: float = 3e-3,
    report: AlignmentReport | None = None,
    pooling: str = "max",
) -> list[tuple[int, float, float]]:
    """Align ``judge``'s encoders contrastively on ``media`` (prepared clips without a question): each clip's pooled
    audio against its own pooled video and the batch's other clips'. The measure on ``held_out``:
    `own_audio_auroc`. Returns [(step, loss, held-out AUROC)]."""

    def similarities(core, batch: dict) -> list[torch.Tensor]:
        video, audio = clip_embeddings(core, batch, pooling)
        return [audio @ video.T]

    measure = partial(own_audio_auroc, pooling=pooling)
    return _contrastive(judge, media, held_out, similarities, measure, steps, every, seed, batch_size, learning_rate,
                        report)  # fmt: skip


def heard_objects(scene: dict) -> list[dict]:
    """The objects whose sound is heard in ``scene`` (a world record's scene): sounding ones with an event."""
    return [
        scene["objects"][i]
        for i in sorted({e["object"] for e in scene["events"]})
        if scene["objects"][i]["sound"] is not None
    ]


# What each modality shows, as the positions of a multi-hot label: the world's vocabulary, never its links
SEEN = [*vocab.COLOURS, *vocab.SHAPES, *vocab.BACKGROUNDS]
HEARD = [*sorted(vocab.PITCHES.values()), *vocab.TIMBRE_WORDS, *vocab.AMBIENCE_PHRASES]


def presence_labels(scene: dict) -> tuple[np.ndarray, np.ndarray]:
    """(seen, heard) multi-hot labels of a world scene, indexed by `SEEN` and `HEARD`: the colours, shapes and place
    on screen; the notes (a noise burst has none), timbres and ambience heard."""
    seen, heard = np.zeros(len(SEEN), np.float32), np.zeros(len(HEARD), np.float32)
    for name in [scene["background"], *(n for o in scene["objects"] for n in (o["colour"], o["shape"]))]:
        seen[SEEN.index(name)] = 1
    for obj in heard_objects(scene):
        sound = obj["sound"]
        heard[HEARD.index(sound["timbre"])] = 1
        if sound["timbre"] != "noise_burst":
            heard[HEARD.index(sound["f0"])] = 1
    heard[HEARD.index(scene["ambience"])] = 1
    return seen, heard


def label_tensors(scenes: list[dict]) -> tuple[torch.Tensor, torch.Tensor]:
    """(seen, heard) `presence_labels` of ``scenes``, one row per scene."""
    return tuple(torch.from_numpy(np.stack(labels)) for labels in zip(*map(presence_labels, scenes)))


def _rms_normalised(tokens: torch.Tensor) -> torch.Tensor:
    """Each token scaled to unit RMS, as a language model's first norm does before it attends."""
    return tokens * torch.rsqrt(tokens.pow(2).mean(-1, keepdim=True) + 1e-6)


def joint_means(core, batch: dict, audio_of: list[int]) -> torch.Tensor:
    """Per clip k of a collated batch: the mean of its RMS-normalised video tokens and clip ``audio_of[k]``'s audio
    tokens, pooled together; ``core``: the thinker's ``.model``."""
    video, audio = clip_tokens(core, batch)
    return torch.stack([_rms_normalised(torch.cat([v, audio[j]])).mean(0) for v, j in zip(video, audio_of)])


def presence_auroc(
    seen_logits: torch.Tensor, heard_logits: torch.Tensor, seen: torch.Tensor, heard: torch.Tensor
) -> float | None:
    """Mean AUROC over the labels that both occur and not among the clips (None if no label does)."""
    values = [
        auroc(logits[:, k].numpy(), labels[:, k].numpy())
        for logits, labels in ((seen_logits, seen), (heard_logits, heard))
        for k in range(labels.shape[1])
        if 0 < labels[:, k].sum() < len(labels)
    ]
    return float(np.mean(values)) if values else None


def linear_presence_auroc(judge, media: list, scenes: list[dict], train: int, steps: int = 500) -> float | None:
    """How well ``judge``'s frozen encoders say what clips show and sound: linear heads fitted on the joint means
    (clip k's picture with clip k+1's sound) of the first ``train`` clips of ``media`` (prepared samples, with their
    ``scenes``), measured by `presence_auroc` on the rest."""
    audio_of = [(k + 1) % len(media) for k in range(len(media))]
    with torch.no_grad():
        pooled = joint_means(judge.adapter.model.model, judge.adapter.collate(media), audio_of)
    seen, heard = label_tensors(scenes)
    heard = heard[audio_of]
    generator = torch.Generator().manual_seed(0)
    heads = [torch.nn.Linear(pooled.shape[1], len(SEEN)), torch.nn.Linear(pooled.shape[1], len(HEARD))]
    for head in heads:  # seeded here, not by the global generator
        torch.nn.init.normal_(head.weight, std=pooled.shape[1] ** -0.5, generator=generator)
        torch.nn.init.zeros_(head.bias)
    optimiser = torch.optim.Adam([p for head in heads for p in head.parameters()], lr=1e-2, weight_decay=1e-3)
    for _ in range(steps):
        loss = sum(
            F.binary_cross_entropy_with_logits(head(pooled[:train]), labels[:train])
            for head, labels in zip(heads, (seen, heard))
        )
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    with torch.no_grad():
        return presence_auroc(heads[0](pooled[train:]), heads[1](pooled[train:]), seen[train:], heard[train:])


def pretrain_presence(
    judge,
    media: list,
    scenes: list[dict],
    held_out: list,
    held_out_scenes: list[dict],
    steps: int,
    every: int,
    seed: int,
    batch_size: int = 32,
    learning_rate: float = 1e-3,
    report: AlignmentReport | None = None,
) -> list[tuple[int, float, float]]:
    """Train ``judge``'s encoders so that the joint mean of one clip's video tokens and another clip's audio tokens
    tells what the first shows and the second sounds (`presence_labels` of ``scenes``, linear heads, binary
    cross-entropy); each batch pairs its clips' pictures with a shuffle of their sounds. The measure: `presence_auroc`
    on ``held_out`` (clip k's picture with clip k+1's sound). Returns [(step, loss, held-out AUROC)]."""
    core = judge.adapter.model.model
    seen, heard = label_tensors(scenes)
    test_seen, test_heard = label_tensors(held_out_scenes)
    width = core.config.text_config.hidden_size
    seen_head, heard_head = torch.nn.Linear(width, len(SEEN)), torch.nn.Linear(width, len(HEARD))
    test_batch, shuffle = judge.adapter.collate(held_out), torch.Generator().manual_seed(seed)

    def loss(chosen: list[int]) -> torch.Tensor:
        audio_of = torch.randperm(len(chosen), generator=shuffle).tolist()
        pooled = joint_means(core, judge.adapter.collate([media[i] for i in chosen]), audio_of)
        sounds = [chosen[j] for j in audio_of]
        return F.binary_cross_entropy_with_logits(seen_head(pooled), seen[chosen]) + F.binary_cross_entropy_with_logits(
            heard_head(pooled), heard[sounds]
        )

    def measure() -> float | None:
        audio_of = [(k + 1) % len(held_out) for k in range(len(held_out))]
        with torch.no_grad():
            pooled = joint_means(core, test_batch, audio_of)
            return presence_auroc(seen_head(pooled), heard_head(pooled), test_seen, test_heard[audio_of])

    return _train_encoders(
        judge,
        loss,
        measure,
        [*seen_head.parameters(), *heard_head.parameters()],
        len(media),
        steps,
        every,
        seed,
        batch_size,
        learning_rate,
        report,
    )


AUDIO_TOKENS_PER_SECOND = 25  # Qwen2.5-Omni's audio encoder: 100 mel frames a second, two stride-2 reductions


def moment_embeddings(core, batch: dict) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per clip of a collated batch: (video, audio) unit embeddings per visual token group, the group's spatial
    tokens mean-pooled and the audio tokens of the group's span of time mean-pooled (as many groups as both have),
    each less its clip's mean over time: what changes from moment to moment, not the clip's constant look and
    sound, is what tells one moment from another."""
    video, audio = clip_tokens(core, batch)
    seconds = batch["video_second_per_grid"].tolist()
    moments = []
    for v, a, (t, h, w), step in zip(video, audio, batch["video_grid_thw"].tolist(), seconds):
        groups = v.reshape(t, -1, v.shape[-1]).mean(1)
        per_group = step * AUDIO_TOKENS_PER_SECOND
        n = min(t, int(len(a) / per_group))
        heard = torch.stack([a[int(g * per_group) : max(int((g + 1) * per_group), int(g * per_group) + 1)].mean(0)
                             for g in range(n)])  # fmt: skip
        seen = groups[:n]
        moments.append((F.normalize(seen - seen.mean(0), dim=-1), F.normalize(heard - heard.mean(0), dim=-1)))
    return moments


def moment_similarities(core, batch: dict) -> list[torch.Tensor]:
    """Per clip of a collated batch, its (groups, groups) picture-against-sound similarities (`moment_embeddings`)."""
    return [video @ audio.T for video, audio in moment_embeddings(core, batch)]


def shift_auroc(core, batch: dict, lag: int) -> float | None:
    """AUROC of each clip's in-sync agreement (mean cosine of its picture and sound at the same moment) against its
    agreement with the sound ``lag`` groups later (and earlier): what a judge reading these features could tell of
    a shift of ``lag`` grid steps."""
    with torch.no_grad():
        moments = moment_embeddings(core, batch)
    own, moved = [], []
    for video, audio in moments:
        if len(video) <= lag:
            continue
        own.append(float((video * audio).sum(-1).mean()))
        moved += [
            float((video[lag:] * audio[:-lag]).sum(-1).mean()),
            float((video[:-lag] * audio[lag:]).sum(-1).mean()),
        ]
    return auroc(np.array(own + moved), np.array([1] * len(own) + [0] * len(moved))) if own else None


def lag_agreements(similarities: torch.Tensor, lags: int) -> torch.Tensor:
    """A clip's mean picture-against-sound agreement at each lag from -``lags`` to ``lags`` groups (its sound that
    many groups later than its picture at lag > 0): SyncNet's per-clip offset profile."""
    return torch.stack([torch.diagonal(similarities, offset=lag).mean() for lag in range(-lags, lags + 1)])


def lag_readouts(core, batch: dict, lag: int, lags: int) -> dict[str, float]:
    """What each clip's own lag profile tells of a shift of ``lag`` groups, beside the unpaired `shift_auroc` (one
    clip's agreement against other clips'): ``paired``, the share of (clip, direction) where a clip's in-sync
    agreement beats its own shifted one; ``offset_found``, the share of clips whose profile over ±``lags`` groups
    peaks at 0. A reader that compares a clip's moments with each other, as SyncNet's offset search does, needs no
    other clip to tell a shift."""
    with torch.no_grad():
        profiles = [lag_agreements(s, lags) for s in moment_similarities(core, batch) if len(s) > lags]
    paired = [float(p[lags] > p[lags + d]) for p in profiles for d in (lag, -lag)]
    return {
        "clips": len(profiles),
        "unpaired_auroc": shift_auroc(core, batch, lag),
        "paired": float(np.mean(paired)),
        "offset_found": float(np.mean([int(p.argmax()) == lags for p in profiles])),
    }


def align_in_time(
    judge,
    media: list,
    held_out: list,
    steps: int,
    every: int,
    seed: int,
    batch_size: int = 32,
    learning_rate: float = 3e-3,
    report: AlignmentReport | None = None,
    lag: int = 4,
) -> list[tuple[int, float, float]]:
    """Align ``judge``'s encoders in time (SyncNet's per-clip lag matrix, Synchformer's segment contrast): within
    each clip, the picture of each visual token group is pulled toward the sound of the same moment and pushed from
    the sound of the clip's other moments (InfoNCE both ways, learned temperature). It learns *when*, where pooled
    alignment learns *which clip*. The measure: `shift_auroc` on ``held_out`` at ``lag`` groups."""
    return _contrastive(judge, media, held_out, moment_similarities, partial(shift_auroc, lag=lag), steps, every,
                        seed, batch_size, learning_rate, report)  # fmt: skip
