"""What do the tiny thinker's starting encoders say about clips they never saw? (issue #5)

For each set of encoder weights given, linear heads are fitted on the frozen encoders' joint means (clip k's picture
with clip k+1's sound, as `pretrain_presence` pools them) of the first --train clips of a demo-sized world (seed 0,
which no committed encoders were pretrained on), and the held-out AUROC of what is on screen and what is heard is
printed for the rest (`research.align.linear_presence_auroc`; the committed encoders' figure is what
tests/test_align.py checks). One line per weights file: random, the committed ones (aligned) or any FILE.

Usage: python -m research.encoder_presence [--clips 48] [--train 32] [--encoders random aligned FILE ...]
(about 15 s on 2 CPU cores)
"""

import argparse
import tempfile
from pathlib import Path

from avjudge.config import load_config
from avjudge.demo import TRAIN_CONFIGS
from avjudge.jsonl import read_jsonl
from avjudge.judges import Judge
from avjudge.judges.tiny import build_tiny_omni_thinker, build_tokenizer
from avjudge.stats import printed
from avjudge.train import TrainConfig
from avjudge.world import MANIFEST
from research.align import linear_presence_auroc, world_media
from research.learnability import encoders_argument, make_demo_world


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clips", type=int, default=48)
    p.add_argument("--train", type=int, default=32, help="clips the heads are fitted on; the rest are held out")
    p.add_argument("--encoders", nargs="+", default=["random", "aligned"], metavar="random|aligned|FILE")
    args = p.parse_args()
    if not 0 < args.train < args.clips:
        p.error("--train must be between 0 and --clips")
    encoders = {name: encoders_argument(name) for name in args.encoders}
    av = load_config(TrainConfig, TRAIN_CONFIGS["av"], [])
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        world = make_demo_world(tmp / "world", args.clips, seed=0)
        scenes = [record["scene"] for record in read_jsonl(world / MANIFEST)]
        tokenizer = build_tokenizer(tmp / "tokenizer")
        for i, (name, weights) in enumerate(encoders.items()):
            judge = Judge.load(
                "av",
                build_tiny_omni_thinker(tmp / f"thinker_{i}", tokenizer, encoders=weights),
                fps=av.fps,
                max_pixels=av.max_pixels,
                use_audio_in_video=av.use_audio_in_video,
            )
            value = linear_presence_auroc(judge, world_media(judge, world), scenes, args.train)
            print(f"{name:<24} held-out AUROC of what is seen and heard {printed(value, 3, 'n/a')}", flush=True)


if __name__ == "__main__":
    main()
