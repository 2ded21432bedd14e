"""Speed and memory of the three judge architectures at their released size, with random weights.

The 7B weights cannot be downloaded here, but what a judge costs depends only on its architecture
and its inputs. This builds each model from its released configuration (the sizes below, copied
from each model's Hugging Face config.json; special tokens from the tiny tokenizer) with random bf16
weights on the GPU, and measures it through the same Judge, adapters and collator that
`avjudge score` and `avjudge train` use:

- scoring: clips/s and peak GPU memory per batch size, from prepared inputs (the GPU's work) and
  from frames and audio in memory (the CPU preparation in worker threads included);
- the same scoring with other attention implementations (``--attention auto,sdpa``), and how far the
  scores of the same clips move between them;
- the differentiable score (one clip; gradient to its pixels and waveform, the judge frozen);
- LoRA training steps (forward, backward, AdamW) per batch size, gradient checkpointing on, with
  the base weights in bf16 and in fp32 under bf16 autocast (how `avjudge train` runs today).

Clips are synthetic (random 720p frames at the judge's 1 fps, noise audio): the cost does not depend
on the content. Decoding is not included (`benchmarks/metrics_decode.py` measures it).

    python benchmarks/real_size_judges.py --out real_size.json          # on a CUDA GPU
    python benchmarks/real_size_judges.py --size tiny --seconds 2       # the same code, tiny judges, CPU
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from avjudge.judges import Judge, JudgeSample, JudgeSettings
from avjudge.judges.adapters import adapter_for
from avjudge.judges.tiny import make_tiny_judges
from avjudge.train.collator import AnswerCollator
from avjudge.train.freeze import apply_freeze, apply_lora

# Released sizes: Qwen/Qwen2.5-Omni-7B (thinker), Qwen/Qwen2-Audio-7B-Instruct, Qwen/Qwen3-Omni-30B-A3B-Instruct
# (thinker). Each entry overrides the tiny judge's config part by part; everything else (special tokens, patch
# sizes, mel bins) is already the released value. ``window_s``: the audio window of the released processor;
# ``train``: measure LoRA training steps (the paper's judges).
REAL_SIZES = {
    "qwen2_5_omni": {
        "tasks": ("av", "vt"),
        "window_s": 300,
        "train": True,
        "text_config": dict(
            vocab_size=152064,
            hidden_size=3584,
            intermediate_size=18944,
            num_hidden_layers=28,
            num_attention_heads=28,
            num_key_value_heads=4,
            max_position_embeddings=32768,
            rms_norm_eps=1e-6,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [16, 24, 24]},
        ),
        "audio_config": dict(
            d_model=1280, encoder_layers=32, encoder_attention_heads=20, encoder_ffn_dim=5120, output_dim=3584
        ),
        "vision_config": dict(
            depth=32,
            hidden_size=1280,
            num_heads=16,
            intermediate_size=3420,
            out_hidden_size=3584,
            fullatt_block_indexes=[7, 15, 23, 31],
        ),
    },
    "qwen2_audio": {
        "tasks": ("at",),
        "window_s": 30,
        "train": True,
        "text_config": dict(
            vocab_size=156032,
            hidden_size=4096,
            intermediate_size=11008,
            num_hidden_layers=32,
            num_attention_heads=32,
            num_key_value_heads=32,
            max_position_embeddings=8192,
            rms_norm_eps=1e-5,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        ),
        "audio_config": dict(
            d_model=1280, encoder_layers=32, encoder_attention_heads=20, encoder_ffn_dim=5120, max_source_positions=1500
        ),
    },
    "qwen3_omni": {
        "tasks": ("av",),
        "window_s": 300,
        "train": False,  # scored only: its fp32 weights alone fill a GPU
        "text_config": dict(
            vocab_size=152064,
            hidden_size=2048,
            intermediate_size=6144,
            moe_intermediate_size=768,
            num_experts=128,
            num_experts_per_tok=8,
            num_hidden_layers=48,
            num_attention_heads=32,
            num_key_value_heads=4,
            head_dim=128,
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 1000000.0,
                "mrope_section": [24, 20, 20],
                "interleaved": True,
            },
        ),
        "audio_config": dict(
            d_model=1280,
            encoder_layers=32,
            encoder_attention_heads=20,
            encoder_ffn_dim=5120,
            output_dim=2048,
            downsample_hidden_size=480,
        ),
        "vision_config": dict(
            depth=27,
            hidden_size=1152,
            num_heads=16,
            intermediate_size=4304,
            out_hidden_size=2048,
            num_position_embeddings=2304,
            deepstack_visual_indexes=[8, 16, 24],
        ),
    },
}
# Fields a config derives from its sizes; dropped so the new sizes derive them again.
DERIVED = ("layer_types", "max_window_layers", "head_dim")
CAPTION = (
    "A small red circle slides from left to right across a blue background while a low hum plays "
    "and a bright bell rings twice near the end."
)


def real_size_checkpoint(family: str, tiny_dir: Path, out: Path) -> Path:
    """A checkpoint folder without weights: the released sizes and audio window, the tiny tokenizer."""
    spec = REAL_SIZES[family]
    shutil.copytree(tiny_dir, out, ignore=shutil.ignore_patterns("*.safetensors"))
    config = json.loads((tiny_dir / "config.json").read_text())
    for part, sizes in spec.items():
        if part.endswith("_config"):
            config[part] = {k: v for k, v in config[part].items() if k not in DERIVED} | sizes
    (out / "config.json").write_text(json.dumps(config, indent=2))
    pre = json.loads((tiny_dir / "preprocessor_config.json").read_text())
    rate, hop = pre["sampling_rate"], pre["hop_length"]
    pre.update(
        chunk_length=spec["window_s"], n_samples=spec["window_s"] * rate, nb_max_frames=spec["window_s"] * rate // hop
    )
    (out / "preprocessor_config.json").write_text(json.dumps(pre, indent=2))
    return out


def build_adapter(checkpoint: Path, device: torch.device, dtype: torch.dtype, attention: str):
    """The checkpoint's adapter around a model of its config with random weights, built on ``device``."""
    from transformers import AutoConfig

    adapter_cls = adapter_for(checkpoint)
    config = AutoConfig.from_pretrained(str(checkpoint), local_files_only=True)
    torch.manual_seed(0)
    with torch.device(device):
        model = adapter_cls.model_class()._from_config(config, dtype=dtype).eval()
    adapter_cls.set_attention(model, attention)
    return adapter_cls.around(model, checkpoint)


def synthetic_samples(
    task: str, count: int, seconds: float, height: int, width: int, fps: float, seed: int = 0
) -> list[JudgeSample]:
    """Random frames at the judge's fps and noise audio at 16 kHz, as the task needs them."""
    rng = np.random.default_rng(seed)
    needs_video, needs_audio = task in ("av", "vt"), task in ("av", "at")
    frames = max(1, int(round(seconds * fps)))
    return [
        JudgeSample(
            frames=rng.integers(0, 256, (frames, height, width, 3), dtype=np.uint8) if needs_video else None,
            fps=fps if needs_video else None,
            audio=(0.1 * rng.standard_normal(int(seconds * 16000))).astype(np.float32) if needs_audio else None,
            text=CAPTION if task in ("vt", "at") else None,
        )
        for _ in range(count)
    ]


class Clock:
    """Wall time and peak accelerator memory of a block of work."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def __enter__(self):
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self.cuda:
            torch.cuda.synchronize()
        self.seconds = time.perf_counter() - self.start
        self.peak_gib = torch.cuda.max_memory_allocated() / 2**30 if self.cuda else None


def _out_of_memory(err: Exception) -> bool:
    return isinstance(err, torch.OutOfMemoryError) or "out of memory" in str(err)


def _checked(results) -> None:
    bad = [r for r in results if r.error is not None or not 0.0 <= r.score <= 1.0]
    if bad:
        raise RuntimeError(f"{len(bad)} of {len(results)} scores failed or left [0, 1]: {bad[0]}")


def scoring_rows(
    judge: Judge, samples: list[JudgeSample], batch_sizes: list[int], device: torch.device, workers: int
) -> tuple[list[dict], list[float]]:
    """Per batch size: clips/s from prepared inputs and from samples (CPU preparation included), peak memory;
    and the scores of ``samples`` alone."""
    prepared = [judge.prepare(s) for s in samples]
    scores = [r.score for r in judge.score_prepared(prepared)]
    rows = []
    for size in batch_sizes:
        count = max(2 * size, len(samples))
        judge.settings = replace(judge.settings, batch_size=size, workers=workers)
        batch_prepared = [prepared[i % len(prepared)] for i in range(count)]
        try:
            judge.score_prepared(batch_prepared[:size])  # warm-up: kernels, allocator
            with Clock(device) as gpu:
                results = judge.score_prepared(batch_prepared)
            _checked(results)
            with Clock(device) as whole:
                results = judge.score_samples([samples[i % len(samples)] for i in range(count)])
            _checked(results)
        except RuntimeError as err:
            if not _out_of_memory(err):
                raise
            rows.append({"batch_size": size, "error": "out of memory"})
            torch.cuda.empty_cache()
            break
        rows.append(
            {
                "batch_size": size,
                "clips": count,
                "clips_per_s": count / gpu.seconds,
                "clips_per_s_with_preparation": count / whole.seconds,
                "peak_gib": gpu.peak_gib,
            }
        )
        print(
            f"  score  batch {size:>3}: {rows[-1]['clips_per_s']:7.2f} clips/s prepared, "
            f"{rows[-1]['clips_per_s_with_preparation']:7.2f} with preparation ({workers} workers), "
            f"peak {_gib(gpu.peak_gib)}",
            flush=True,
        )
    return rows, scores


def _gib(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} GiB"


def differentiable_row(judge: Judge, sample: JudgeSample, device: torch.device) -> dict:
    """One differentiable score and its backward pass to the clip's pixels and waveform, the judge frozen."""
    judge.adapter.model.requires_grad_(False)
    frames = audio = None
    if sample.frames is not None:
        frames = torch.tensor(sample.frames / 255.0, dtype=torch.float32, device=device, requires_grad=True)
    if sample.audio is not None:
        audio = torch.tensor(sample.audio, device=device, requires_grad=True)
    judge.score_differentiable(frames=frames, fps=sample.fps, waveform=audio, text=sample.text)  # warm-up
    with Clock(device) as clock:
        score = judge.score_differentiable(frames=frames, fps=sample.fps, waveform=audio, text=sample.text)
        score.backward()
    grads = [t.grad for t in (frames, audio) if t is not None]
    if not all(torch.isfinite(g).all() and g.abs().sum() > 0 for g in grads):
        raise RuntimeError("the differentiable score gave no finite, non-zero gradient to its inputs")
    print(f"  reward (score + backward to the clip): {clock.seconds:.3f} s, peak {_gib(clock.peak_gib)}", flush=True)
    return {"seconds": clock.seconds, "peak_gib": clock.peak_gib}


def training_rows(
    judge: Judge, samples: list[JudgeSample], batch_sizes: list[int], device: torch.device, autocast: bool, steps: int
) -> list[dict]:
    """LoRA (r=16 on every linear layer of the language model), gradient checkpointing, AdamW: seconds per step."""
    adapter = judge.adapter
    apply_freeze(adapter.model, type(adapter), "llm")
    adapter.model = apply_lora(adapter.model, 16, 32, 0.05)
    adapter.model.gradient_checkpointing_enable()
    adapter.model.train()
    collator = AnswerCollator(judge)
    examples = [collator.labelled(s, i % 2) for i, s in enumerate(samples)]
    optimiser = torch.optim.AdamW([p for p in adapter.model.parameters() if p.requires_grad], lr=1e-5)

    def step(batch):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
            loss = adapter.model(**batch).loss
        loss.backward()
        optimiser.step()
        optimiser.zero_grad(set_to_none=True)
        return loss.item()

    rows = []
    for size in batch_sizes:
        batch = adapter.to_device(collator([examples[i % len(examples)] for i in range(size)]))
        try:
            step(batch)  # warm-up: optimiser state, kernels
            with Clock(device) as clock:
                losses = [step(batch) for _ in range(steps)]
        except RuntimeError as err:
            if not _out_of_memory(err):
                raise
            rows.append({"batch_size": size, "error": "out of memory"})
            optimiser.zero_grad(set_to_none=True)
            torch.cuda.empty_cache()
            break
        if not np.isfinite(losses).all():
            raise RuntimeError(f"training loss is not finite: {losses}")
        rows.append(
            {
                "batch_size": size,
                "seconds_per_step": clock.seconds / steps,
                "samples_per_s": size * steps / clock.seconds,
                "peak_gib": clock.peak_gib,
            }
        )
        print(
            f"  train  batch {size:>3}: {rows[-1]['seconds_per_step']:.3f} s/step, "
            f"{rows[-1]['samples_per_s']:.2f} samples/s, peak {_gib(clock.peak_gib)}",
            flush=True,
        )
    return rows


def measure_family(family: str, checkpoint: Path, args, device: torch.device) -> dict:
    tasks = REAL_SIZES[family]["tasks"]
    report: dict = {"tasks": {}}
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    adapter = build_adapter(checkpoint, device, dtype, args.attention[0])
    report["parameters"] = sum(p.numel() for p in adapter.model.parameters())
    print(f"{family}: {report['parameters'] / 1e9:.2f} B parameters", flush=True)
    for task in tasks:
        judge = Judge(adapter, JudgeSettings(task=task, workers=args.workers))
        samples = synthetic_samples(task, args.clips, args.seconds, args.height, args.width, judge.settings.fps)
        tokens = judge.prepare(samples[0]).length
        print(f" {task}: {tokens} tokens a clip ({args.seconds:g} s, {args.width}x{args.height})", flush=True)
        measured = report["tasks"][task] = {"tokens_per_clip": tokens, "scoring": {}}
        for attention in args.attention:
            type(adapter).set_attention(adapter.model, attention)
            print(f"  attention {attention}:", flush=True)
            rows, scores = scoring_rows(judge, samples, args.batch_sizes, device, args.workers)
            measured["scoring"][attention] = rows
            if attention == args.attention[0]:
                first = scores
            else:  # the same clips through another attention: how far the scores move
                measured.setdefault("max_score_difference", {})[attention] = float(
                    np.max(np.abs(np.subtract(scores, first)))
                )
        type(adapter).set_attention(adapter.model, args.attention[0])
    judge = Judge(adapter, JudgeSettings(task=tasks[0]))
    samples = synthetic_samples(tasks[0], args.clips, args.seconds, args.height, args.width, judge.settings.fps)
    report["differentiable"] = differentiable_row(judge, samples[0], device)
    if args.train and REAL_SIZES[family]["train"]:
        report["train_bf16_weights"] = training_rows(judge, samples, args.train_batch_sizes, device, False, args.steps)
        del adapter, judge
        _free(device)
        if device.type == "cuda":  # fp32 weights under bf16 autocast, as the HF Trainer runs `avjudge train`
            adapter = build_adapter(checkpoint, device, torch.float32, args.attention[0])
            judge = Judge(adapter, JudgeSettings(task=tasks[0]))
            print(" fp32 weights, bf16 autocast:", flush=True)
            report["train_fp32_weights_bf16_autocast"] = training_rows(
                judge, samples, args.train_batch_sizes, device, True, args.steps
            )
    return report


def _free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def environment(device: torch.device) -> dict:
    import transformers

    env = {"torch": torch.__version__, "transformers": transformers.__version__, "python": platform.python_version()}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        env.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1))
    else:
        env["cpu"] = platform.processor() or platform.machine()
    return env


def _sizes(text: str) -> list[int]:
    return [int(v) for v in text.split(",")]


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--size",
        choices=("real", "tiny"),
        default="real",
        help="real: the released sizes with random weights (a GPU's work); tiny: the tiny judges",
    )
    p.add_argument("--families", default=",".join(REAL_SIZES), help=f"comma-separated, of {', '.join(REAL_SIZES)}")
    p.add_argument("--seconds", type=float, default=8.0, help="clip length")
    p.add_argument("--height", type=int, default=720)
    p.add_argument("--width", type=int, default=1280)
    p.add_argument("--clips", type=int, default=8, help="distinct synthetic clips, cycled to fill larger batches")
    p.add_argument("--batch-sizes", type=_sizes, default=[1, 4, 8, 16, 32], help="scoring batch sizes, e.g. 1,4,8")
    p.add_argument("--workers", type=int, default=8, help="threads preparing clips while the model scores")
    p.add_argument(
        "--attention",
        type=lambda text: text.split(","),
        default=["auto"],
        help="attention implementations to score with, e.g. auto,sdpa (the first also trains); "
        "auto: packed window attention in the Omni encoders (avjudge.judges.attention)",
    )
    p.add_argument("--no-train", dest="train", action="store_false", help="skip the LoRA training steps")
    p.add_argument("--train-batch-sizes", type=_sizes, default=[1, 4, 8])
    p.add_argument("--steps", type=int, default=3, help="timed training steps per batch size (after one warm-up)")
    p.add_argument("--out", type=Path, help="write the measurements here as JSON")
    args = p.parse_args(argv)
    unknown = set(args.families.split(",")) - set(REAL_SIZES)
    if unknown:
        p.error(f"unknown families {sorted(unknown)}; choose from {', '.join(REAL_SIZES)}")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if args.size == "real" and device.type != "cuda":
        print("warning: no CUDA GPU; the released sizes on CPU take minutes per clip", file=sys.stderr)
    report = {
        "environment": environment(device),
        "size": args.size,
        "clip": {"seconds": args.seconds, "height": args.height, "width": args.width},
        "families": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        tiny = make_tiny_judges(Path(tmp) / "tiny")
        for family in args.families.split(","):
            checkpoint = (
                real_size_checkpoint(family, tiny[family], Path(tmp) / family) if args.size == "real" else tiny[family]
            )
            try:
                report["families"][family] = measure_family(family, checkpoint, args, device)
            except Exception as err:  # one family failing still leaves the others measured
                traceback.print_exc()
                report["families"][family] = {"error": f"{type(err).__name__}: {err}"}
            _free(device)
            if args.out:  # after each family, so a run cut short keeps what it measured
                args.out.write_text(json.dumps(report, indent=2))
    failed = [family for family, measured in report["families"].items() if "error" in measured]
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")
    return report


if __name__ == "__main__":
    main()
