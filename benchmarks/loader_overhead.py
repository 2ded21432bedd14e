"""On-the-fly negatives in a torch DataLoader vs reading materialised files, on the same pairs.

Builds a world and an AV pair set with --materialize, then iterates the same negatives
twice through `PairDataset` in a DataLoader: once applying each recipe while loading,
once reading the stored float32 WAVs. Frames at 1 fps, audio at 16 kHz (the AV judge's input).

Usage: python benchmarks/loader_overhead.py [--clips 24] [--pairs 192] [--workers 2] [--rounds 5] [--size 256x256]
"""

import argparse
import tempfile
import time
from pathlib import Path

from torch.utils.data import DataLoader

from avjudge.data import PairDataset, Recipe, build_dataset, load_manifest
from avjudge.data.recipe import AV_STRATEGY_WEIGHTS, JudgeRecipe
from avjudge.jsonl import read_jsonl
from avjudge.perturb import SourcePool
from avjudge.world import MANIFEST, WorldConfig, make_world


def timed(dataset: PairDataset, workers: int) -> float:
    loader = DataLoader(dataset, batch_size=None, num_workers=workers, collate_fn=lambda x: x)
    start = time.perf_counter()
    for _ in loader:
        pass
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clips", type=int, default=24)
    p.add_argument("--pairs", type=int, default=192)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--size", default="256x256", help="world frame size WxH (real clips decode slower than 256x256)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        world = Path(tmp) / "world"
        width, height = (int(v) for v in args.size.split("x"))
        make_world(WorldConfig(n=args.clips, seed=5, width=width, height=height), world, progress=False)
        recipe = Recipe(
            source=str(world / MANIFEST),
            splits={"train": 1.0},
            judges={"av": JudgeRecipe(pairs=args.pairs, strategies=AV_STRATEGY_WEIGHTS)},
        )
        out = Path(tmp) / "pairs"
        build_dataset(recipe, world / MANIFEST, out, materialize=True, progress=False)
        negatives = [r for r in read_jsonl(out / "pairs" / "av" / "train.jsonl") if r["label"] == 0]
        pool = SourcePool(load_manifest(world / MANIFEST))
        lazy = PairDataset([{**r, "media": {"video": r["media"]["video"]}} for r in negatives], pool, fps=1.0)
        stored = PairDataset(negatives, pool, fps=1.0, root=out)
        t_lazy = min(timed(lazy, args.workers) for _ in range(args.rounds))
        t_stored = min(timed(stored, args.workers) for _ in range(args.rounds))
    print(
        f"{len(negatives)} AV negatives of 8 s at {args.size} through a DataLoader ({args.workers} workers), "
        f"best of {args.rounds}:"
    )
    print(f"  materialised float32 WAV: {t_stored:.2f} s ({len(negatives) / t_stored:.1f} samples/s)")
    print(f"  recipe applied on the fly: {t_lazy:.2f} s ({len(negatives) / t_lazy:.1f} samples/s)")
    print(f"  overhead of on-the-fly: {100 * (t_lazy / t_stored - 1):+.1f}%")


if __name__ == "__main__":
    main()
