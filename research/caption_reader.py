"""How far could the demo's VT judge get on caption edits if reading its vision encoder cost nothing? (issue #5)

The VT judge must tell a clip's caption from the same caption with one phrase edited (a colour, a count, a
motion...), which needs a caption word and the picture at once. The learnability probe's tiny language model
stays at what the caption's text alone gives (docs/research/tiny_judges.md). This asks the question without it, the VT
analogue of `pooled_head.py`:
  - colours on screen: a linear probe per colour on each clip's pooled video tokens (mean and max, standardised)
    says whether the frozen vision encoder sees the colours at all (held-out clips);
  - the pairs: a two-layer MLP reads [pooled video tokens, the caption's words and word pairs] of the demo recipe's VT
    pairs and is scored on the held-out pairs, overall and per edited dimension, against the same MLP given the
    caption alone.
If the colours are on screen for a linear probe and the MLP still reads no more than the text, the picture is not
what is missing: binding a word to what is seen has to be learned from the pairs, and they are too few.

Usage: python -m research.caption_reader [--clips 300] [--pairs 2400] [--steps 3000] [--encoders aligned|random|FILE]
(about a minute on 2 CPU cores at the defaults)
"""

import argparse
import random
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from avjudge.config import load_config
from avjudge.data.audit import gram_features, gram_index
from avjudge.demo import TRAIN_CONFIGS
from avjudge.demo.run import build_demo_pairs
from avjudge.jsonl import read_jsonl
from avjudge.judges import Judge
from avjudge.judges.tiny import make_tiny_judges
from avjudge.stats import auroc, per_negative_type, printed
from avjudge.train import TrainConfig
from avjudge.world import MANIFEST, vocab
from research.align import world_media
from research.learnability import encoders_argument, make_demo_world
from research.pooled_head import PooledReader, clip_token_sets, two_layer_mlp

HELD_OUT = 0.25  # the demo recipe's test share


def fit(
    inputs: torch.Tensor,
    labels: torch.Tensor,
    train: list[int],
    steps: int,
    hidden: int | None,
    learning_rate: float = 1e-3,
    seed: int = 0,
    batch_size: int = 64,
) -> torch.nn.Module:
    """A logistic regression (``hidden`` None) or a two-layer MLP on ``inputs[train]`` -> ``labels[train]``."""
    rng = random.Random(seed)
    torch.manual_seed(seed)
    width = inputs.shape[1]
    model = torch.nn.Linear(width, 1) if hidden is None else two_layer_mlp(width, hidden)
    optimiser = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.01)
    for _ in range(steps):
        batch = torch.tensor(rng.sample(train, min(batch_size, len(train))))
        loss = F.binary_cross_entropy_with_logits(model(inputs[batch]).squeeze(1), labels[batch])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return model


def held_out_scores(model: torch.nn.Module, inputs: torch.Tensor, test: list[int]) -> np.ndarray:
    with torch.no_grad():
        return model(inputs[test]).squeeze(1).numpy()


def colours_on_screen(
    video: torch.Tensor, scenes: list[dict], train: list[int], test: list[int], steps: int = 1000
) -> dict[str, float]:
    """Held-out AUROC of a linear probe per world colour: is an object of that colour on screen?"""
    shown = {}
    for colour in vocab.COLOURS:
        labels = torch.tensor([float(any(o["colour"] == colour for o in s["objects"])) for s in scenes])
        if labels[test].min() == labels[test].max():
            continue  # every held-out clip alike: no AUROC
        probe = fit(video, labels, train, steps, None, learning_rate=1e-2)
        shown[colour] = auroc(held_out_scores(probe, video, test), labels[test].numpy())
    return shown


def caption_pair_aurocs(
    video: torch.Tensor, records: list[dict], clip_index: dict[str, int], steps: int, with_picture: bool
) -> dict[str, float]:
    """AUROC on the held-out pairs of an MLP trained on the training pairs, overall and per edited dimension;
    ``with_picture`` False reads the caption alone."""
    texts = [r["text"] for r in records]
    text = gram_features(texts, gram_index(texts))  # the audit's text features: words and word pairs
    inputs = torch.cat([video[[clip_index[r["source_id"]] for r in records]], text], 1) if with_picture else text
    labels = torch.tensor([float(r["label"]) for r in records])
    train = [i for i, r in enumerate(records) if r["split"] == "train"]
    test = [i for i, r in enumerate(records) if r["split"] == "test"]
    scores = held_out_scores(fit(inputs, labels, train, steps, hidden=256), inputs, test)
    held_labels = labels[test].numpy()
    types = np.array([records[i]["negative_type"] for i in test])
    return {"all": auroc(scores, held_labels), **per_negative_type(scores, held_labels, types, auroc)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clips", type=int, default=300)
    p.add_argument("--pairs", type=int, default=2400, help="VT pairs to build (75%% train, 25%% held out)")
    p.add_argument("--steps", type=int, default=3000, help="batches of 64 pairs")
    p.add_argument("--encoders", type=encoders_argument, default="aligned", metavar="aligned|random|FILE")
    args = p.parse_args()
    vt = load_config(TrainConfig, TRAIN_CONFIGS["vt"], [])
    with tempfile.TemporaryDirectory() as tmp:
        world = make_demo_world(Path(tmp) / "world", args.clips, 0)
        build_demo_pairs(world, Path(tmp) / "pairs", args.pairs, tasks=("vt",))
        records = [
            r
            for split in ("train", "test")
            for r in read_jsonl(Path(tmp) / "pairs" / "pairs" / "vt" / f"{split}.jsonl")
        ]
        manifest = list(read_jsonl(world / MANIFEST))
        # the AV judge prepares a clip's frames as the VT judge does (same frame rate and size) and needs no text
        judge = Judge.load(
            "av",
            make_tiny_judges(Path(tmp) / "cache", encoders=args.encoders)["qwen2_5_omni"],
            fps=vt.fps,
            max_pixels=vt.max_pixels,
            use_audio_in_video=False,
        )
        tokens, _ = clip_token_sets(judge, world_media(judge, world))
    video = PooledReader(["mean", "max"], tokens.shape[-1]).inputs(tokens)
    clips = list(range(len(manifest)))
    split = int(len(clips) * (1 - HELD_OUT))
    shown = colours_on_screen(video, [r["scene"] for r in manifest], clips[:split], clips[split:])
    print(
        "colour on screen, linear probe on held-out clips: "
        + ", ".join(f"{colour} {printed(value, 3, 'n/a')}" for colour, value in shown.items()),
        flush=True,
    )
    clip_index = {r["id"]: i for i, r in enumerate(manifest)}
    for with_picture, name in ((False, "caption alone"), (True, "picture and caption")):
        result = caption_pair_aurocs(video, records, clip_index, args.steps, with_picture)
        print(
            f"{name:<20} held-out AUROC "
            + "  ".join(f"{kind} {printed(value, 3, 'n/a')}" for kind, value in result.items()),
            flush=True,
        )


if __name__ == "__main__":
    main()
