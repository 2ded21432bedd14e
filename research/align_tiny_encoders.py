"""Rebuild checkpoints/tiny/qwen2_5_omni_encoders.safetensors: the tiny Qwen2.5-Omni thinker's encoders,
pretrained on a synthetic world of their own (research.align), the start the demo's AV and VT judges take
in place of Qwen2.5-Omni's pretrained encoders.

The committed encoders were made in two stages (docs/research/tiny_judges.md has why and what each gave):
  python -m research.align_tiny_encoders --out /tmp/contrastive                       # ~10 min
  python -m research.align_tiny_encoders --objective presence --clips 1200 --steps 3600 --every 900 \
      --start /tmp/contrastive/qwen2_5_omni_encoders.safetensors                     # ~12 min
and the demo AV judge's encoders that keep time, checkpoints/tiny/qwen2_5_omni_sync_encoders.safetensors, from those:
  python -m research.align_tiny_encoders --objective sync --clips 2000 --held-out 64 --steps 2400 --every 600 \
      --batch-size 16 --world-seed 3 --start checkpoints/tiny/qwen2_5_omni_encoders.safetensors \
      --name qwen2_5_omni_sync_encoders.safetensors                                  # ~12 min
The first aligns them contrastively: a clip's pooled audio against its own pooled video and the other clips' of
the batch. The second (--objective presence, `pretrain_presence`) trains what each modality shows: colours,
shapes and place on screen, notes, timbres and ambience heard, read linearly from one clip's video tokens pooled
with another clip's audio tokens; its reports add the held-out AUROC of those labels.

The world (seed 1 by default; the demo uses seed 0) has clips of the demo's size (4 s, 192x192) and the world's
default mix of ambience (--ambience-prob), shown to the encoders as the demo's AV config shows them (its fps,
pixels and audio layout); its last --held-out clips are kept out of training and measure the result, among them
the AUROC, by cosine similarity, of a clip's own audio against every other held-out clip's, by both poolings (max
and mean over a clip's tokens). The weights file and a JSON record beside it (settings, that curve, code version,
and the record of the --start weights, if one lies beside them) are written; `make_tiny_judges` then builds the
tiny thinker with these encoders. --start FILE continues from encoder weights written before; runs that are not
meant to replace the committed encoders take another --out.

Usage: python -m research.align_tiny_encoders [--clips 1500] [--steps 2000] [--objective contrastive|presence]
       [--start FILE] [--out checkpoints/tiny]
"""

import argparse
import dataclasses
import json
import tempfile
import time
from pathlib import Path

import torch

from avjudge.config import load_config
from avjudge.demo import TRAIN_CONFIGS, DemoSize
from avjudge.jsonl import read_jsonl
from avjudge.judges import Judge
from avjudge.judges.tiny import ALIGNED_ENCODERS, build_tiny_omni_thinker, build_tokenizer
from avjudge.train import TrainConfig
from avjudge.train.trainer import code_version
from avjudge.world import MANIFEST, WorldConfig, make_world
from research.align import (
    POOLINGS,
    align_encoders,
    align_in_time,
    encoder_parameters,
    own_audio_auroc,
    pretrain_presence,
    shift_auroc,
    world_media,
)

# each objective's default, as measured in docs/research/tiny_judges.md
LEARNING_RATES = {"contrastive": 3e-3, "presence": 1e-3, "sync": 3e-3}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clips", type=int, default=1500, help="clips in the alignment world")
    p.add_argument("--held-out", type=int, default=64, help="clips kept out of training to measure alignment")
    p.add_argument("--steps", type=int, default=2000, help="optimiser steps (batches of --batch-size clips)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument(
        "--learning-rate",
        type=float,
        help=f"default per objective: {', '.join(f'{k} {v:g}' for k, v in LEARNING_RATES.items())}",
    )
    p.add_argument("--every", type=int, default=250, help="measure on the held-out clips every N steps")
    p.add_argument(
        "--objective",
        choices=sorted(LEARNING_RATES),
        default="contrastive",
        help="contrastive: a clip's audio against its own video; presence: what each modality shows; sync: each "
        "moment's picture against the same clip's sound at that moment and at its other moments",
    )
    p.add_argument(
        "--pooling",
        choices=sorted(POOLINGS),
        default="max",
        help="how a clip's output tokens become the embedding aligned (contrastive)",
    )
    p.add_argument("--world-seed", type=int, default=1)
    p.add_argument(
        "--ambience-prob",
        type=float,
        default=WorldConfig.ambience_prob,
        help="share of the world's clips with their place's ambience (the demo's world: 1.0)",
    )
    p.add_argument("--seed", type=int, default=0, help="the tiny thinker's initialisation and the batch order")
    p.add_argument("--start", type=Path, help="encoder weights to start from (default: random encoders)")
    p.add_argument("--out", type=Path, default=ALIGNED_ENCODERS.parent)
    p.add_argument("--name", default=ALIGNED_ENCODERS.name, help="the weights file's name in --out (a JSON beside it)")
    args = p.parse_args()
    if args.learning_rate is None:
        args.learning_rate = LEARNING_RATES[args.objective]
    if args.clips <= args.held_out + args.batch_size:
        p.error(f"--clips must exceed --held-out + --batch-size ({args.held_out + args.batch_size})")
    av = load_config(TrainConfig, TRAIN_CONFIGS["av"], [])
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        make_world(
            dataclasses.replace(DemoSize().world(args.world_seed, args.clips), ambience_prob=args.ambience_prob),
            tmp / "world",
        )
        thinker = build_tiny_omni_thinker(tmp / "thinker", build_tokenizer(tmp / "tokenizer"), args.seed, args.start)
        judge = Judge.load(
            "av", thinker, fps=av.fps, max_pixels=av.max_pixels, use_audio_in_video=av.use_audio_in_video
        )
        media = world_media(judge, tmp / "world")
        scenes = [record["scene"] for record in read_jsonl(tmp / "world" / MANIFEST)]
    print(f"world of {len(media)} clips made and prepared: {time.perf_counter() - start:.0f} s", flush=True)
    core, held_out = judge.adapter.model.model, judge.adapter.collate(media[-args.held_out :])

    def by_pooling(measured: dict[str, float]) -> str:
        """Held-out AUROC by each pooling; ``measured``: those alignment already reported."""
        return ", ".join(
            f"{pooling} {measured[pooling] if pooling in measured else own_audio_auroc(core, held_out, pooling):.3f}"
            for pooling in POOLINGS
        )

    lag = max(1, round(judge.settings.fps / judge.adapter.vision.temporal_patch_size))  # 1 s in visual token groups
    print(
        f"start: held-out AUROC, own audio vs another clip's, by pooling: {by_pooling({})}; in-sync against 1 s "
        f"shifted moments {shift_auroc(core, held_out, lag):.3f}",
        flush=True,
    )
    torch.manual_seed(args.seed)
    train, test = slice(None, -args.held_out), slice(-args.held_out, None)
    common = (args.steps, args.every, args.seed, args.batch_size, args.learning_rate)
    # each objective: how it runs on the world's clips, and what its held-out measure is
    objectives = {
        "presence": (
            lambda report: pretrain_presence(
                judge, media[train], scenes[train], media[test], scenes[test], *common, report=report
            ),
            "held-out AUROC of what is seen and heard",
        ),
        "sync": (
            lambda report: align_in_time(judge, media[train], media[test], *common, report=report, lag=lag),
            "held-out AUROC of in-sync against 1 s shifted moments",
        ),
        "contrastive": (
            lambda report: align_encoders(
                judge, media[train], media[test], *common, report=report, pooling=args.pooling
            ),
            "held-out AUROC, own audio vs another clip's",
        ),
    }
    run, measured = objectives[args.objective]
    history = run(
        lambda step, loss, value: print(
            f"step {step:>5}  loss {loss:.3f}  {measured} {value:.3f}; own audio vs another clip's, by pooling: "
            f"{by_pooling({args.pooling: value} if args.objective == 'contrastive' else {})}",
            flush=True,
        )
    )
    from safetensors.torch import save_file

    args.out.mkdir(parents=True, exist_ok=True)
    weights = args.out / args.name
    save_file(
        {name: p.detach().contiguous() for name, p in encoder_parameters(judge.adapter.model.model).items()},
        str(weights),
    )
    record = {
        **{k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k not in ("out", "name")},
        "judge_settings": {"fps": av.fps, "max_pixels": av.max_pixels, "use_audio_in_video": av.use_audio_in_video},
        "held_out_auroc": [{"step": s, "loss": loss, "auroc": value} for s, loss, value in history],
        "code_version": code_version(),
        "seconds": round(time.perf_counter() - start),
    }
    if args.start and args.start.with_suffix(".json").exists():  # how the start was made, kept when it is replaced
        record["start_record"] = json.loads(args.start.with_suffix(".json").read_text())
    weights.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {weights} ({weights.stat().st_size / 1e6:.1f} MB) and {weights.with_suffix('.json').name}")


if __name__ == "__main__":
    main()
