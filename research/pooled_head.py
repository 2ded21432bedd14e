"""How far could the demo's AV judge get on random mismatch if reading its encoders cost nothing? (issue #5)

The learnability probes (`research/learnability.py`) train the tiny language model to tell a clip's own audio
from another clip's, and it stops near 0.67-0.78 held-out AUROC whatever its depth, width or heads
(docs/research/tiny_judges.md).
This asks the same question without the language model: a small reader of each clip's encoder outputs (the
video of one clip with the audio of the same clip or of another) is scored on pairs of held-out clips. Readers:
  mean+max, mean, max   fixed poolings over each modality's tokens, standardised, then a two-layer MLP
  attention             --heads learned queries per modality, softmax attention over the tokens (what a language
                        model's heads can do: one weighted mean per head), then the same MLP
It trains on a fresh draw of pairs of the training clips every batch, so it sees far more pairs than the judge's
dataset holds; --negatives N gives it a dataset's budget instead (N distinct negatives, every clip's own audio).

Printed first, the ceiling the world itself sets: of random partners, the share whose sound contradicts the
picture by one of the world's links (a pitched note whose colour is not on screen, a timbre whose shape is not,
an ambience the place does not have). The rest are undetectable by anyone.

Usage: python -m research.pooled_head [--clips 300] [--encoders aligned|random|FILE] [--steps 3000]
       [--batch-size 64] [--reader mean+max|mean|max|attention] [--heads 4] [--negatives 0] [--world KEY=VALUE ...]
(about a minute on 2 CPU cores at the defaults; the attention reader two to three)
"""

import argparse
import random
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from avjudge.config import load_config, parse_overrides
from avjudge.demo import TRAIN_CONFIGS
from avjudge.jsonl import read_jsonl
from avjudge.judges import Judge
from avjudge.judges.tiny import make_tiny_judges
from avjudge.stats import auroc, printed
from avjudge.train import TrainConfig
from avjudge.world import MANIFEST, vocab
from research.align import POOLINGS, clip_tokens, heard_objects, world_media
from research.learnability import encoders_argument, make_demo_world

HELD_OUT = 0.25  # the demo recipe's test share


def contradictions(picture: dict, sound: dict) -> set[str]:
    """The world's links that ``sound``'s audio breaks when heard with ``picture``'s frames (both scenes)."""
    colours = {o["colour"] for o in picture["objects"]}
    timbres = {vocab.SHAPES[o["shape"]] for o in picture["objects"]}
    broken = set()
    for obj in heard_objects(sound):
        timbre = obj["sound"]["timbre"]
        if timbre != "noise_burst" and obj["colour"] not in colours:  # a noise burst has no pitch to give away
            broken.add("colour-note")
        if timbre not in timbres:
            broken.add("shape-timbre")
    if sound["ambience"] != "none" and sound["ambience"] not in vocab.BACKGROUNDS[picture["background"]]["ambiences"]:
        broken.add("place-ambience")
    return broken


def world_ceiling(scenes: list[dict], draws: int = 20000, seed: int = 0) -> dict[str, float]:
    """Share of random (picture, another clip's sound) pairs that break each link, and any link."""
    rng = random.Random(seed)
    counts = {"colour-note": 0, "shape-timbre": 0, "place-ambience": 0, "any": 0}
    for _ in range(draws):
        i, j = rng.sample(range(len(scenes)), 2)
        broken = contradictions(scenes[i], scenes[j])
        for link in broken:
            counts[link] += 1
        counts["any"] += bool(broken)
    return {link: count / draws for link, count in counts.items()}


def clip_token_sets(judge, media: list, batch_size: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    """(video, audio) output tokens of every clip, stacked: (clips, tokens, width) each."""
    core, video, audio = judge.adapter.model.model, [], []
    with torch.no_grad():
        for start in range(0, len(media), batch_size):
            batch = judge.adapter.collate(media[start : start + batch_size])
            for store, tokens in zip((video, audio), clip_tokens(core, batch)):
                store.extend(tokens)
    for name, tokens in (("video", video), ("audio", audio)):
        if len({len(t) for t in tokens}) > 1:
            raise ValueError(f"the clips give different numbers of {name} tokens: make a world of one clip length")
    return torch.stack(video), torch.stack(audio)


def standardise(x: torch.Tensor) -> torch.Tensor:
    return (x - x.mean(0)) / (x.std(0) + 1e-6)


def two_layer_mlp(width: int, hidden: int = 128) -> torch.nn.Module:
    """``width`` inputs -> one logit, through ``hidden`` GELU units: the head every reader here ends in."""
    return torch.nn.Sequential(torch.nn.Linear(width, hidden), torch.nn.GELU(), torch.nn.Linear(hidden, 1))


class PooledReader(torch.nn.Module):
    """Pools each modality's tokens by fixed ``poolings`` (standardised over the clips once, outside training),
    then a two-layer MLP over [video, audio]: what the judge could do if pooling were free."""

    def __init__(self, poolings: list[str], width: int, hidden: int = 128):
        super().__init__()
        self.poolings = poolings
        self.mlp = two_layer_mlp(2 * len(poolings) * width, hidden)

    def inputs(self, tokens: torch.Tensor) -> torch.Tensor:
        return standardise(torch.stack([torch.cat([POOLINGS[p](t) for p in self.poolings]) for t in tokens]))

    def forward(self, video: torch.Tensor, audio: torch.Tensor) -> torch.Tensor:
        return self.mlp(torch.cat([video, audio], 1)).squeeze(1)


class AttentionPool(torch.nn.Module):
    """Softmax attention of ``heads`` learned queries over RMS-normalised tokens, as a language model's heads read
    media tokens: one weighted mean per head, not a maximum per feature."""

    def __init__(self, heads: int, width: int, head_dim: int = 16):
        super().__init__()
        self.heads, self.head_dim = heads, head_dim
        self.norm = torch.nn.RMSNorm(width)
        self.query = torch.nn.Parameter(torch.randn(heads, head_dim) * 0.02)
        self.key = torch.nn.Linear(width, heads * head_dim, bias=False)
        self.value = torch.nn.Linear(width, heads * head_dim, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.norm(tokens)
        shape = (*x.shape[:2], self.heads, self.head_dim)
        weights = torch.einsum("bthd,hd->bht", self.key(x).view(shape), self.query / self.head_dim**0.5).softmax(-1)
        return torch.einsum("bht,bthd->bhd", weights, self.value(x).view(shape)).flatten(1)


class AttentionReader(torch.nn.Module):
    """Each modality read by its own `AttentionPool`, then the same MLP as `PooledReader`."""

    def __init__(self, heads: int, width: int, hidden: int = 128):
        super().__init__()
        self.video, self.audio = AttentionPool(heads, width), AttentionPool(heads, width)
        self.mlp = two_layer_mlp(2 * heads * self.video.head_dim, hidden)

    def inputs(self, tokens: torch.Tensor) -> torch.Tensor:
        return tokens

    def forward(self, video: torch.Tensor, audio: torch.Tensor) -> torch.Tensor:
        return self.mlp(torch.cat([self.video(video), self.audio(audio)], 1)).squeeze(1)


def make_reader(name: str, width: int, heads: int = 4) -> torch.nn.Module:
    """``name``: a pooling ("mean", "max"), both ("mean+max"), or "attention" (``heads`` learned queries)."""
    if name == "attention":
        return AttentionReader(heads, width)
    poolings = name.split("+")
    unknown = sorted(set(poolings) - set(POOLINGS))
    if unknown:
        raise ValueError(f"unknown reader {name!r}: use attention or poolings of {sorted(POOLINGS)} joined by +")
    return PooledReader(poolings, width)


def draw_pairs(clips: list[int], count: int, rng: random.Random) -> list[tuple[int, int, int]]:
    """(picture clip, sound clip, label): half a clip with its own audio (1), half with another's (0)."""
    pairs = []
    for _ in range(count):
        i = rng.choice(clips)
        j = i if rng.random() < 0.5 else rng.choice([c for c in clips if c != i])
        pairs.append((i, j, int(i == j)))
    return pairs


class FixedPairs:
    """Batches from a fixed set: every clip with its own audio, and ``negatives`` distinct (clip, another clip's
    audio) pairs — the budget of a materialised pair dataset, where `draw_pairs` is a fresh draw every batch."""

    def __init__(self, clips: list[int], negatives: int, rng: random.Random):
        if negatives > len(clips) * (len(clips) - 1):
            raise ValueError(f"{len(clips)} clips make at most {len(clips) * (len(clips) - 1)} distinct negatives")
        self.positives, self.rng = [(i, i, 1) for i in clips], rng
        drawn: set[tuple[int, int]] = set()
        while len(drawn) < negatives:
            drawn.add(tuple(rng.sample(clips, 2)))
        self.negatives = [(i, j, 0) for i, j in sorted(drawn)]

    def __call__(self, count: int) -> list[tuple[int, int, int]]:
        return [self.rng.choice(self.positives if self.rng.random() < 0.5 else self.negatives) for _ in range(count)]


def train_pair_head(
    reader: torch.nn.Module,
    video: torch.Tensor,
    audio: torch.Tensor,
    train: list[int],
    test: list[int],
    steps: int,
    every: int = 500,
    seed: int = 0,
    batch_size: int = 64,
    negatives: int = 0,
) -> list[tuple[int, float, float]]:
    """Train ``reader`` on [video of clip i, audio of clip j] -> (i == j), ``video`` and ``audio`` being its inputs
    per clip; pairs of ``train`` clips drawn fresh each batch, or from ``negatives`` distinct negatives if not 0.
    Every ``every`` steps, its AUROC on 2,000 pairs of ``test`` clips. Returns [(step, loss, AUROC)]."""
    rng = random.Random(seed)
    torch.manual_seed(seed)
    optimiser = torch.optim.AdamW(reader.parameters(), lr=1e-3, weight_decay=0.01)
    draw = FixedPairs(train, negatives, rng) if negatives else lambda count: draw_pairs(train, count, rng)

    def logits(pairs):
        i, j, label = (torch.tensor(column) for column in zip(*pairs))
        return reader(video[i], audio[j]), label.float()

    held_out, history, losses = draw_pairs(test, 2000, rng), [], []
    for step in range(1, steps + 1):
        loss = F.binary_cross_entropy_with_logits(*logits(draw(batch_size)))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
        if step % every == 0 or step == steps:
            with torch.no_grad():
                score, label = logits(held_out)
            history.append((step, float(np.mean(losses)), auroc(score.numpy(), label.numpy())))
            losses = []
    return history


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clips", type=int, default=300)
    p.add_argument("--steps", type=int, default=3000, help="batches of pairs")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument(
        "--reader",
        default="mean+max",
        metavar="mean|max|mean+max|attention",
        help="how each modality's tokens become the MLP's input: fixed poolings, or learned attention",
    )
    p.add_argument("--heads", type=int, default=4, help="learned queries per modality of --reader attention")
    p.add_argument(
        "--negatives",
        type=int,
        default=0,
        help="train on this many distinct negatives (a pair dataset's budget); 0: fresh pairs every batch",
    )
    p.add_argument("--every", type=int, default=500)
    p.add_argument("--encoders", type=encoders_argument, default="aligned", metavar="aligned|random|FILE")
    p.add_argument(
        "--world",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a WorldConfig field of the world, e.g. ambience_prob=1.0",
    )
    args = p.parse_args()
    try:
        make_reader(args.reader, 1, args.heads)  # before minutes of world making
    except ValueError as err:
        p.error(str(err))
    av = load_config(TrainConfig, TRAIN_CONFIGS["av"], [])
    with tempfile.TemporaryDirectory() as tmp:
        world = make_demo_world(Path(tmp) / "world", args.clips, 0, parse_overrides(args.world))
        scenes = [record["scene"] for record in read_jsonl(world / MANIFEST)]
        print(
            "random partners that break a link of the world: "
            + ", ".join(f"{link} {share:.2f}" for link, share in world_ceiling(scenes).items()),
            flush=True,
        )
        judge = Judge.load(
            "av",
            make_tiny_judges(Path(tmp) / "cache", encoders=args.encoders)["qwen2_5_omni"],
            fps=av.fps,
            max_pixels=av.max_pixels,
            use_audio_in_video=av.use_audio_in_video,
        )
        video, audio = clip_token_sets(judge, world_media(judge, world))
    reader = make_reader(args.reader, video.shape[-1], args.heads)
    clips = list(range(len(scenes)))
    split = int(len(clips) * (1 - HELD_OUT))
    for step, loss, value in train_pair_head(
        reader,
        reader.inputs(video),
        reader.inputs(audio),
        clips[:split],
        clips[split:],
        args.steps,
        args.every,
        batch_size=args.batch_size,
        negatives=args.negatives,
    ):
        print(
            f"step {step:>5}  loss {loss:.3f}  held-out AUROC, own audio vs another clip's {printed(value, 3, 'n/a')}",
            flush=True,
        )


if __name__ == "__main__":
    main()
