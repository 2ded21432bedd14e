"""What time-aligned encoders give a judge that reads one clip: each encoder file's features on an unseen world, a 1 s
shift read three ways (`research.align.lag_readouts`): against other clips (unpaired AUROC, what pooling a clip's
agreement into one number gives), against the same clip's own shifted agreement (paired), and as the peak of the
clip's own lag profile (SyncNet's offset search).

    python -m research.sync_readout --encoders checkpoints/tiny/qwen2_5_omni_encoders.safetensors sync/a.safetensors
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from avjudge.config import load_config
from avjudge.demo import TRAIN_CONFIGS, DemoSize
from avjudge.judges import Judge
from avjudge.judges.tiny import build_tiny_omni_thinker, build_tokenizer
from avjudge.train import TrainConfig
from avjudge.world import make_world
from research.align import lag_readouts, world_media


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--encoders", type=Path, nargs="+", required=True, help="encoder files (.safetensors)")
    p.add_argument("--clips", type=int, default=96, help="clips of the unseen world")
    p.add_argument("--world-seed", type=int, default=7, help="a seed no alignment run used (they use 1)")
    p.add_argument("--lag", type=int, default=4, help="the shift in visual token groups (4 at 8 fps: 1 s)")
    p.add_argument("--lags", type=int, default=8, help="the offsets each clip's profile spans, in groups")
    args = p.parse_args()
    av = load_config(TrainConfig, TRAIN_CONFIGS["av"], [])
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        make_world(DemoSize().world(args.world_seed, args.clips), tmp / "world", progress=False)
        tokenizer = build_tokenizer(tmp / "tokenizer")
        for k, encoders in enumerate(args.encoders):
            thinker = build_tiny_omni_thinker(tmp / f"thinker{k}", tokenizer, 0, encoders)
            settings = dict(fps=av.fps, max_pixels=av.max_pixels, use_audio_in_video=av.use_audio_in_video)
            judge = Judge.load("av", thinker, **settings)
            batch = judge.adapter.collate(world_media(judge, tmp / "world"))
            results[str(encoders)] = lag_readouts(judge.adapter.model.model, batch, args.lag, args.lags)
            print(encoders, json.dumps(results[str(encoders)]), flush=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
