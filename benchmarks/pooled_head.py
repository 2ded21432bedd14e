"""How far could the demo's AV judge get on random mismatch if reading its encoders cost nothing? (issue #5)

The learnability probes (benchmarks/learnability.py) train the tiny language model to tell a clip's own audio
from another clip's, and it stops near 0.72-0.78 held-out AUROC whatever its depth or width (README, Training).
This asks the same question without the language model: a two-layer MLP reads each clip's encoder outputs pooled
(mean and max over each modality's tokens, standardised), the video of one clip with the audio of the same clip
or of another, and is scored on pairs of held-out clips. It trains on a fresh draw of pairs of the training
clips every batch, so it sees far more pairs than the judge's dataset holds.

Printed first, the ceiling the world itself sets: of random partners, the share whose sound contradicts the
picture by one of the world's links (a pitched note whose colour is not on screen, a timbre whose shape is not,
an ambience the place does not have). The rest are undetectable by anyone.

Usage: python benchmarks/pooled_head.py [--clips 300] [--encoders aligned|random|FILE] [--steps 3000]
       [--world KEY=VALUE ...]
(about 2 minutes on 2 CPU cores at the defaults)
"""
import argparse
import random
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from learnability import encoders_argument, make_demo_world  # noqa: E402

from avjudge.config import load_config, parse_overrides  # noqa: E402
from avjudge.demo import TRAIN_CONFIGS  # noqa: E402
from avjudge.jsonl import read_jsonl  # noqa: E402
from avjudge.judges import Judge  # noqa: E402
from avjudge.judges.tiny import make_tiny_judges  # noqa: E402
from avjudge.stats import auroc, format_statistic  # noqa: E402
from avjudge.train import TrainConfig  # noqa: E402
from avjudge.train.align import POOLINGS, clip_tokens, world_media  # noqa: E402
from avjudge.world import MANIFEST, vocab  # noqa: E402

HELD_OUT = 0.25  # the demo recipe's test share


def heard(scene: dict) -> list[dict]:
    """The objects whose sound is heard in ``scene`` (a world record's scene): sounding ones with an event."""
    return [scene["objects"][i] for i in sorted({e["object"] for e in scene["events"]})
            if scene["objects"][i]["sound"] is not None]


def contradictions(picture: dict, sound: dict) -> set[str]:
    """The world's links that ``sound``'s audio breaks when heard with ``picture``'s frames (both scenes)."""
    colours = {o["colour"] for o in picture["objects"]}
    timbres = {vocab.SHAPES[o["shape"]] for o in picture["objects"]}
    broken = set()
    for obj in heard(sound):
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


def pooled_features(judge, media: list, batch_size: int = 32) -> tuple[torch.Tensor, torch.Tensor]:
    """(video, audio) per clip: every pooling of its output tokens side by side, standardised over the clips."""
    core, video, audio = judge.adapter.model.model, [], []
    with torch.no_grad():
        for start in range(0, len(media), batch_size):
            batch = judge.adapter.collate(media[start:start + batch_size])
            for store, tokens in zip((video, audio), clip_tokens(core, batch)):
                store.extend(torch.cat([pool(t) for pool in POOLINGS.values()]) for t in tokens)

    def standardise(x: torch.Tensor) -> torch.Tensor:
        return (x - x.mean(0)) / (x.std(0) + 1e-6)

    return standardise(torch.stack(video)), standardise(torch.stack(audio))


def draw_pairs(clips: list[int], count: int, rng: random.Random) -> list[tuple[int, int, int]]:
    """(picture clip, sound clip, label): half a clip with its own audio (1), half with another's (0)."""
    pairs = []
    for _ in range(count):
        i = rng.choice(clips)
        j = i if rng.random() < 0.5 else rng.choice([c for c in clips if c != i])
        pairs.append((i, j, int(i == j)))
    return pairs


def train_pair_head(video: torch.Tensor, audio: torch.Tensor, train: list[int], test: list[int], steps: int,
                    every: int = 500, seed: int = 0, hidden: int = 128) -> list[tuple[int, float, float]]:
    """Train an MLP on [video of clip i, audio of clip j] -> (i == j) over fresh pairs of ``train`` clips each
    batch; every ``every`` steps, its AUROC on 2,000 pairs of ``test`` clips. Returns [(step, loss, AUROC)]."""
    rng = random.Random(seed)
    torch.manual_seed(seed)
    head = torch.nn.Sequential(torch.nn.Linear(video.shape[1] + audio.shape[1], hidden), torch.nn.GELU(),
                               torch.nn.Linear(hidden, 1))
    optimiser = torch.optim.AdamW(head.parameters(), lr=1e-3, weight_decay=0.01)

    def logits(pairs):
        i, j, label = (torch.tensor(column) for column in zip(*pairs))
        return head(torch.cat([video[i], audio[j]], 1)).squeeze(1), label.float()

    held_out, history, losses = draw_pairs(test, 2000, rng), [], []
    for step in range(1, steps + 1):
        loss = F.binary_cross_entropy_with_logits(*logits(draw_pairs(train, 64, rng)))
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
    p.add_argument("--steps", type=int, default=3000, help="batches of 64 fresh pairs")
    p.add_argument("--every", type=int, default=500)
    p.add_argument("--encoders", type=encoders_argument, default="aligned", metavar="aligned|random|FILE")
    p.add_argument("--world", action="append", default=[], metavar="KEY=VALUE",
                   help="a WorldConfig field of the world, e.g. ambience_prob=1.0")
    args = p.parse_args()
    av = load_config(TrainConfig, TRAIN_CONFIGS["av"], [])
    with tempfile.TemporaryDirectory() as tmp:
        world = make_demo_world(Path(tmp) / "world", args.clips, 0, parse_overrides(args.world))
        scenes = [record["scene"] for record in read_jsonl(world / MANIFEST)]
        print("random partners that break a link of the world: "
              + ", ".join(f"{link} {share:.2f}" for link, share in world_ceiling(scenes).items()), flush=True)
        judge = Judge.load("av", make_tiny_judges(Path(tmp) / "cache", encoders=args.encoders)["qwen2_5_omni"],
                           fps=av.fps, max_pixels=av.max_pixels, use_audio_in_video=av.use_audio_in_video)
        video, audio = pooled_features(judge, world_media(judge, world))
    clips = list(range(len(scenes)))
    split = int(len(clips) * (1 - HELD_OUT))
    for step, loss, value in train_pair_head(video, audio, clips[:split], clips[split:], args.steps, args.every):
        print(f"step {step:>5}  loss {loss:.3f}  held-out AUROC, own audio vs another clip's {format_statistic(value)}",
              flush=True)


if __name__ == "__main__":
    main()
