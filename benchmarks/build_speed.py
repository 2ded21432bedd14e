"""Build 100K lazy pairs per judge from 30K source records (AVBench's scale), timing each judge.

Source records are synthetic (captions from the world's vocabulary, a content hash given,
no media read: the AV negatives' sound check, `check_changed`, is off), so this measures the builder itself:
splits, sampling, text negatives (rule backend), writing JSONL, the Hugging Face export and the stats.

Usage: python benchmarks/build_speed.py [--sources 30000] [--pairs 100000] [--judges av,vt]
"""

import argparse
import json
import tempfile
import time
from pathlib import Path

from avjudge.data import Recipe, build_dataset
from avjudge.data.recipe import JudgeRecipe
from avjudge.world import WorldConfig, captions, sample_scene


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sources", type=int, default=30000)
    p.add_argument("--pairs", type=int, default=100000)
    p.add_argument("--judges", default="av,vt")
    args = p.parse_args()
    cfg = WorldConfig(n=200, speech="off")
    templates = [(captions(s), s.background) for s in (sample_scene(cfg, i) for i in range(200))]
    with tempfile.TemporaryDirectory() as tmp:
        manifest = Path(tmp) / "sources.jsonl"
        with open(manifest, "w") as f:
            for i in range(args.sources):
                caps, background = templates[i % len(templates)]
                f.write(
                    json.dumps(
                        {
                            "id": f"src{i:06d}",
                            "video": f"clips/src{i:06d}.mp4",
                            "content_hash": f"h{i}",
                            "captions": caps,
                            "meta": {"background": background},
                        }
                    )
                    + "\n"
                )
        for judge in args.judges.split(","):
            dims = {
                "vt": {"appearance": 1, "counting": 1, "motion": 1, "spatial": 1, "temporal": 1},
                "at": {"numerical_value": 1, "frequency": 1, "sound_source": 1, "background_presence": 1},
            }
            recipe = Recipe(
                source=str(manifest),
                name="bench",
                # no media to compare a negative's sound with its source's (`check_changed`, on by default)
                judges={judge: JudgeRecipe(pairs=args.pairs, dimensions=dims.get(judge, {}), check_changed=False)},
            )
            start = time.perf_counter()
            stats = build_dataset(recipe, manifest, Path(tmp) / f"out_{judge}", progress=False)
            elapsed = time.perf_counter() - start
            entry = stats["judges"][judge]
            print(
                f"{judge}: {entry['pairs']} lazy pairs from {args.sources} sources in {elapsed:.1f} s "
                f"({entry['pairs'] / elapsed:,.0f} pairs/s; {entry['rejected']} text rejections)"
            )


if __name__ == "__main__":
    main()
