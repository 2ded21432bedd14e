"""What one optimiser step of the demo's tiny judges costs on this CPU, and where the time goes.

For each judge (the demo's configs, batch 8, clips of the demo's size) one epoch builds every
example (decode, negative applied from its recipe, processing) and a second epoch reuses them
from the in-memory cache (`cache_examples: true`; negatives as built, none redrawn); both include
forward, backward and the optimiser. Each judge runs twice: decoding every pair's source clip
(`source_cache_mb: 0`) and decoding each clip once for all its pairs (the demo's setting). The AT
judge is also timed with a 30 s audio window, the real Qwen2-Audio's, against the tiny one's 10 s:
its encoder always runs over its whole window, padded.

Usage: python benchmarks/tiny_train_step.py [--clips 24] [--pairs 96]
"""

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch
from transformers import PreTrainedTokenizerFast

from avjudge.config import load_config
from avjudge.demo import TRAIN_CONFIGS, DemoSize
from avjudge.demo.run import build_demo_pairs
from avjudge.judges.tiny import AUDIO_DIR, build_tiny_qwen2_audio, make_tiny_judges
from avjudge.prompts import task as judge_task
from avjudge.train import TrainConfig, build_training
from avjudge.world import make_world


def seconds_per_step(config: TrainConfig) -> tuple[float, float]:
    """(seconds per step while building examples, seconds per step from cached examples)."""
    trainer, *_ = build_training(config)
    examples, model = trainer.train_dataset, trainer.model.train()
    optimiser = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=config.learning_rate)
    batches = [
        list(range(i, i + config.per_device_train_batch_size))
        for i in range(0, len(examples) - config.per_device_train_batch_size + 1, config.per_device_train_batch_size)
    ]
    per_epoch = []
    for _epoch in range(2):
        start = time.perf_counter()
        for batch in batches:
            model(**trainer.data_collator([examples[i] for i in batch])).loss.backward()
            optimiser.step()
            optimiser.zero_grad()
        per_epoch.append((time.perf_counter() - start) / len(batches))
    return per_epoch[0], per_epoch[1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clips", type=int, default=24)
    p.add_argument("--pairs", type=int, default=96, help="pairs per judge (75%% train)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        make_world(DemoSize().world(clips=args.clips), tmp / "world", progress=False)
        build_demo_pairs(tmp / "world", tmp / "pairs", args.pairs)
        dirs = make_tiny_judges(tmp / "cache")
        tokenizer = PreTrainedTokenizerFast.from_pretrained(str(dirs["qwen2_audio"].parent / "tokenizer"))
        at_30s = build_tiny_qwen2_audio(tmp / "at_30s" / AUDIO_DIR, tokenizer, window_s=30)

        def config(task: str, model: Path) -> TrainConfig:
            return load_config(
                TrainConfig,
                TRAIN_CONFIGS[task],
                [f"model={model}", f"dataset={tmp / 'pairs'}", f"output_dir={tmp / 'out' / task}", "max_eval_pairs=2"],
            )

        print(f"{'judge':<16}{'sources decoded':>16}{'s/step, building':>18}{'s/step, cached':>16}{'ratio':>8}")
        cached = {}
        for task in TRAIN_CONFIGS:
            for decoded_once in (False, True):
                settings = config(task, dirs[judge_task(task).family])
                if not decoded_once:
                    settings = replace(settings, source_cache_mb=0.0)
                built, cached[task] = seconds_per_step(settings)
                print(
                    f"{task:<16}{'once' if decoded_once else 'every pair':>16}{built:>18.3f}{cached[task]:>16.3f}"
                    f"{built / cached[task]:>8.2f}"
                )
        _, at_real_window = seconds_per_step(config("at", at_30s))
        print(
            f"{'at, 30 s window':<16}{'once':>16}{'':>18}{at_real_window:>16.3f}"
            f"{at_real_window / cached['at']:>8.2f}  (against the tiny 10 s window)"
        )


if __name__ == "__main__":
    main()
