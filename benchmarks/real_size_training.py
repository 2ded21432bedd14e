"""Full SFT of the Qwen2.5-Omni AV judge at its released size under DeepSpeed ZeRO on one GPU: does it fit, how fast.

The shipped config (``train_configs/av_qwen25omni_7b.yaml``) trains the language model (7.6 B of the thinker's
8.93 B parameters) with the encoders frozen: one 8 s AV clip per micro-batch (1,790 tokens), 8 accumulated,
gradient checkpointing, bf16, ZeRO-2 (``zero3`` ships too). Each variant runs in its own process, so one that runs
out of memory leaves the GPU clean for the next:

- ``zero2``, ``zero3``: the shipped DeepSpeed files as they are;
- ``zero3_offload``: ZeRO-3 with the optimiser (fp32 master weights, Adam moments, gradients) in CPU memory.

The model is built from the released configuration with random bf16 weights (what it costs does not depend on the
weights); the optimiser is torch's AdamW, as `avjudge train` hands the HF Trainer. Reported: samples/s over timed
optimiser steps (after one warm-up step), seconds per optimiser step, peak GPU memory and the process's peak host
memory, or the error and the stage it came at (``build``, ``initialize``, ``step``).

    python benchmarks/real_size_training.py --out training.json            # on a CUDA GPU
    python benchmarks/real_size_training.py --size tiny --variants zero2   # the same code, tiny judge, CPU
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_size_judges import build_adapter, real_size_checkpoint, synthetic_samples  # noqa: E402

from avjudge.judges import Judge, JudgeSettings  # noqa: E402
from avjudge.judges.tiny import make_tiny_judges  # noqa: E402
from avjudge.resources import resolve  # noqa: E402
from avjudge.train.collator import AnswerCollator  # noqa: E402
from avjudge.train.freeze import apply_freeze  # noqa: E402

FAMILY = "qwen2_5_omni"
# variant -> (shipped DeepSpeed file, whether the optimiser lives in CPU memory)
VARIANTS = {"zero2": ("zero2", False), "zero3": ("zero3", False), "zero3_offload": ("zero3", True)}


def deepspeed_config(variant: str, accumulation: int, hidden: int) -> dict:
    """The shipped file with the values the HF Trainer fills in for ``auto`` (its own rules for ZeRO-3's buckets)."""
    name, offload = VARIANTS[variant]
    config = json.loads(resolve(name, "deepspeed").read_text())
    config.update(
        bf16={"enabled": True},
        gradient_accumulation_steps=accumulation,
        train_micro_batch_size_per_gpu=1,
        train_batch_size=accumulation,
        gradient_clipping=1.0,
    )
    zero = config["zero_optimization"]
    automatic = {
        "reduce_bucket_size": hidden * hidden,
        "stage3_prefetch_bucket_size": int(0.9 * hidden * hidden),
        "stage3_param_persistence_threshold": 10 * hidden,
    }
    zero.update({k: v for k, v in automatic.items() if zero.get(k) == "auto"})
    if offload:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": False}
    return config


def run_variant(variant: str, args) -> dict:
    """One variant in this process: build, initialise, time; the stage reached and what it measured."""
    import deepspeed

    from avjudge.train.trainer import _ensure_distributed_env

    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    row: dict = {"variant": variant, "stage": "build"}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tiny = make_tiny_judges(Path(tmp) / "tiny")[FAMILY]
            checkpoint = real_size_checkpoint(FAMILY, tiny, Path(tmp) / "real") if args.size == "real" else tiny
            adapter = build_adapter(checkpoint, device, torch.bfloat16 if cuda else torch.float32, "auto")
        groups = apply_freeze(adapter.model, type(adapter), "llm")
        row["trainable_parameters"] = sum(g["trainable"] for g in groups.values())
        adapter.model.gradient_checkpointing_enable()
        adapter.model.train()
        judge = Judge(adapter, JudgeSettings(task="av", prepare_on="cpu"))
        sample = synthetic_samples("av", 1, args.seconds, args.height, args.width, judge.settings.fps)[0]
        collator = AnswerCollator(judge)
        batch = adapter.to_device(collator([collator.labelled(sample, 1)]))
        row["tokens"] = int(batch["input_ids"].shape[1])

        row["stage"] = "initialize"
        _ensure_distributed_env()
        hidden = adapter.model.config.text_config.hidden_size
        trainable = [p for p in adapter.model.parameters() if p.requires_grad]
        engine, *_ = deepspeed.initialize(
            model=adapter.model,
            optimizer=torch.optim.AdamW(trainable, lr=1e-5, foreach=False),
            config=deepspeed_config(variant, args.accumulation, hidden),
        )

        row["stage"] = "step"

        def optimiser_step() -> float:
            losses = []
            for _ in range(args.accumulation):
                loss = engine(**batch).loss
                engine.backward(loss)
                engine.step()
                losses.append(loss.item())
            return sum(losses) / len(losses)

        optimiser_step()  # warm-up: optimiser state, kernels
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        losses = [optimiser_step() for _ in range(args.steps)]
        if cuda:
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        row.update(
            stage="done",
            loss=losses[-1],
            seconds_per_optimiser_step=seconds / args.steps,
            samples_per_s=args.accumulation * args.steps / seconds,
        )
    except Exception as err:  # the measurement is the failure: which stage, what it said
        row["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:300]}"
        traceback.print_exc()
    if cuda:
        row["peak_gib"] = torch.cuda.max_memory_allocated() / 2**30
    row["host_peak_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return row


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", choices=("real", "tiny"), default="real")
    p.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    p.add_argument("--seconds", type=float, default=8.0)
    p.add_argument("--height", type=int, default=720)
    p.add_argument("--width", type=int, default=1280)
    p.add_argument("--accumulation", type=int, default=8, help="micro-batches per optimiser step (the shipped 8)")
    p.add_argument("--steps", type=int, default=2, help="timed optimiser steps, after one warm-up step")
    p.add_argument("--timeout", type=float, default=300, help="seconds a variant may take before it is stopped")
    p.add_argument("--out", type=Path, help="write the rows here as JSON")
    p.add_argument("--one", help=argparse.SUPPRESS)  # internal: run this variant here and print its row
    args = p.parse_args(argv)
    if args.one:
        print("ROW " + json.dumps(run_variant(args.one, args)), flush=True)
        return {}
    variants = args.variants.split(",")
    unknown = set(variants) - set(VARIANTS)
    if unknown:
        p.error(f"unknown variants {sorted(unknown)}; choose from {', '.join(VARIANTS)}")
    rows = []
    shared = ("size", "seconds", "height", "width", "accumulation", "steps")
    forwarded = [part for name in shared for part in (f"--{name}", str(getattr(args, name)))]
    for variant in variants:
        command = [sys.executable, __file__, *forwarded, "--one", variant]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout, env=os.environ)
            found = [line[4:] for line in done.stdout.splitlines() if line.startswith("ROW ")]
            row = json.loads(found[-1]) if found else {"variant": variant, "error": f"exit {done.returncode}"}
            if not found:
                print(done.stdout[-3000:], done.stderr[-3000:], sep="\n", file=sys.stderr)
        except subprocess.TimeoutExpired:
            row = {"variant": variant, "error": f"stopped after {args.timeout:.0f} s"}
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.out:
            args.out.write_text(json.dumps({"size": args.size, "rows": rows}, indent=2))
    return {"size": args.size, "rows": rows}


if __name__ == "__main__":
    main()
