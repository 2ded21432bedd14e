"""What writing an AV negative's audio (`avjudge data build --materialize`) costs per negative, decoding the
source's frames or not.

Every media strategy changes the audio alone, so the builder decodes no frames (`pair_clip(..., frames=False)`);
decoding them as a judge sample does costs the frames' decode for nothing, at the source's own frame rate and
size. Both are timed on the same negatives of a world at the demo's size (or larger frames with --size), then
a materialised build of those pairs.

Usage: python benchmarks/materialize_speed.py [--clips 24] [--pairs 96] [--size 192] [--seconds 4]
"""

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from avjudge.data import build_dataset, load_manifest, load_recipe, pair_clip
from avjudge.demo import RECIPE, DemoSize
from avjudge.jsonl import read_jsonl
from avjudge.perturb import SourcePool
from avjudge.world import MANIFEST, make_world


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clips", type=int, default=24)
    p.add_argument("--pairs", type=int, default=96, help="AV pairs (half of them negatives)")
    p.add_argument("--size", type=int, default=192, help="frame width and height of the world's clips")
    p.add_argument("--seconds", type=float, default=4.0, help="clip length")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        world = replace(
            DemoSize().world(clips=args.clips),
            width=args.size,
            height=args.size,
            duration=args.seconds,
            max_duration=None,
        )
        make_world(world, tmp / "world", progress=False)
        manifest = tmp / "world" / MANIFEST
        recipe, source = load_recipe(RECIPE, [f"source={manifest}"])
        recipe = replace(recipe, judges={"av": replace(recipe.judges["av"], pairs=args.pairs)})
        lazy = build_dataset(recipe, source, tmp / "lazy", progress=False)
        negatives = [
            r
            for split in ("train", "test")
            for r in read_jsonl(tmp / "lazy" / "pairs" / "av" / f"{split}.jsonl")
            if r["label"] == 0
        ]
        pool = SourcePool(load_manifest(manifest))
        print(
            f"{len(negatives)} AV negatives of {args.clips} clips, {args.size}x{args.size}, {args.seconds:g} s "
            f"({lazy['judges']['av']['pairs']} pairs)"
        )
        for frames in (True, False):
            start = time.perf_counter()
            for record in negatives:
                pair_clip(record, pool, recipe.sample_rate, frames=frames)
            per = (time.perf_counter() - start) / len(negatives)
            print(
                f"  negative's audio, {'frames decoded too' if frames else 'no frames (the builder)':<26} "
                f"{per * 1000:7.1f} ms per negative"
            )
        start = time.perf_counter()
        build_dataset(recipe, source, tmp / "materialized", materialize=True, progress=False)
        print(
            f"  avjudge data build --materialize: {time.perf_counter() - start:.1f} s for the "
            f"{len(negatives)} negatives and their positives"
        )


if __name__ == "__main__":
    main()
