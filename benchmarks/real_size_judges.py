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
  the base weights in bf16 and in fp32 under bf16 autocast (how `avjudge train` runs today);
- with ``--end-to-end``, the AV judge on encoded 8 s 720p files (H.264 and AAC, a keyframe every ``--gop``
  frames), from the file to the score, before and after in one run: before, every frame decoded and the frames
  resized and normalised on the CPU (``prepare_on="cpu"``); after, only the groups of pictures holding the sampled
  frames decoded and the frames resized and normalised on the GPU (``prepare_on="device"``). Each stage alone is
  timed too, the two paths' inputs and scores compared (and the audio features a GPU would make), and one batch's
  forward pass profiled; and the "after" judge through `avjudge score`'s batch job (``score_items``: the scoring
  core and the local engine, which on a GPU decodes in processes of its own beside the model, one per core the
  model's process leaves). ``--decode-processes N`` has the "after" judge's own `Judge.score` decode in N
  processes. Last, with
  ``--align-widths N`` or ``--compile``, the "after" judge's forward pass and scores as released, with its MLP
  widths padded to a multiple of N (8: Qwen2.5-Omni's 3,420-wide vision MLPs to 3,424; `avjudge.judges.widths`)
  and with its repeated blocks compiled too (`avjudge.judges.compiling`), in one run.

Clips are synthetic (random 720p frames at the judge's 1 fps, noise audio): the cost does not depend
on the content. Decoding is not included (`benchmarks/metrics_decode.py` measures it).

    python benchmarks/real_size_judges.py --out real_size.json          # on a CUDA GPU
    python benchmarks/real_size_judges.py --size tiny --seconds 2       # the same code, tiny judges, CPU
    python benchmarks/real_size_judges.py --families qwen2_5_omni --end-to-end --batch-sizes 8,32 --no-train
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
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
import torch

from avjudge.judges import Judge, JudgeSample, JudgeSettings
from avjudge.judges.adapters import adapter_for
from avjudge.judges.compiling import compile_blocks, repeated_blocks
from avjudge.judges.media_inputs import video_patches, video_patches_on_device
from avjudge.judges.tiny import make_tiny_judges
from avjudge.judges.widths import align_mlp_widths
from avjudge.media import decode, encode_video
from avjudge.runtime import read_records
from avjudge.scoring.jobs import score_items
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


FILE_FPS, FILE_RATE = 24, 48000  # what the files hold; the judge samples its own 1 fps and 16 kHz from them


def panning_clip(seconds: float, height: int, width: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(frames at 24 fps, stereo audio at 48 kHz): a textured picture panning right over a tone in noise. Decoding
    costs what the file's size and bitrate make it cost, not what it shows; the texture keeps the bitrate high."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width]
    picture = np.stack([xx * 200 // width, yy * 200 // height, (xx + yy) * 200 // (width + height)], -1)
    picture = (picture + rng.integers(0, 50, (height, width, 3))).astype(np.uint8)
    frames = np.stack([np.roll(picture, 6 * i, axis=1) for i in range(int(seconds * FILE_FPS))])
    t = np.arange(int(seconds * FILE_RATE)) / FILE_RATE
    tone = 0.2 * np.sin(2 * np.pi * (220 + 40 * seed) * t) + 0.05 * rng.standard_normal(len(t))
    return frames, np.stack([tone, tone]).astype(np.float32)


def write_clips(folder: Path, count: int, args) -> list[Path]:
    """``count`` distinct clips as .mp4 files (in parallel: each encode is single-file work)."""
    folder.mkdir(parents=True, exist_ok=True)

    def write(i: int) -> Path:
        frames, audio = panning_clip(args.seconds, args.height, args.width, i)
        return encode_video(folder / f"clip{i:03d}.mp4", frames, FILE_FPS, audio, FILE_RATE, gop=args.gop)

    with ThreadPoolExecutor(min(8, count)) as pool:
        return list(pool.map(write, range(count)))


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def stage_rates(before: Judge, after: Judge, paths: list[Path], workers: int, device: torch.device) -> dict:
    """Clips/s of each stage alone (CPU stages in ``workers`` threads, as scoring runs them; GPU stages in batches
    of the judge's size): what bounds the pipeline, and what each path spends where."""
    options = after.needs.options()
    every, gated = partial(decode, **options, skip_unneeded=False), partial(decode, **options)
    rates: dict = {}
    with ThreadPoolExecutor(workers) as pool:

        def rate(name, fn, items):
            start = time.perf_counter()
            out = list(pool.map(fn, items))
            rates[name] = len(items) / (time.perf_counter() - start)
            return out

        rate("decode_every_frame", every, paths)
        clips = rate("decode_sampled_groups", gated, paths)
        samples = [after.sample(clip) for clip in clips]
        rate("prepare_on_cpu", before.prepare, samples)
        deferred = rate("prepare_tokens_only", after.prepare, samples)
    adapter, size = after.adapter, after.settings.batch_size
    cycled = [deferred[i % len(deferred)] for i in range(2 * size)]  # two whole batches, however few files
    batches = [cycled[:size], cycled[size:]]
    adapter.collate(batches[0], device=device)  # warm-up: kernels, the resize's weights
    _sync(device)
    start = time.perf_counter()
    inputs = [adapter.to_device(adapter.collate(b, device=device)) for b in batches]
    _sync(device)
    rates["media_on_device"] = size * len(batches) / (time.perf_counter() - start)
    rates["forward"] = forward_rate(adapter, inputs, device)
    for name, value in rates.items():
        print(f"    stage {name:<22} {value:8.2f} clips/s", flush=True)
    return rates


def forward_rate(adapter, inputs: list[dict], device: torch.device) -> float:
    """Clips/s of the model's forward pass alone over batches already on the device (after one warm-up)."""
    with torch.inference_mode():
        adapter.next_token_logits(inputs[0])
        _sync(device)
        start = time.perf_counter()
        for batch in inputs:
            adapter.next_token_logits(batch)
        _sync(device)
    return sum(len(batch["input_ids"]) for batch in inputs) / (time.perf_counter() - start)


@contextmanager
def aligned_widths(model: torch.nn.Module, multiple: int):
    """The model with its MLP widths padded (`avjudge.judges.widths`) inside the block, as released after it; yields
    how many MLPs were padded."""
    released = {
        m: (m.weight, m.bias, m.in_features, m.out_features) for m in model.modules() if type(m) is torch.nn.Linear
    }
    try:
        yield align_mlp_widths(model, multiple)
    finally:
        for m, (weight, bias, fan_in, fan_out) in released.items():
            m.weight, m.bias, m.in_features, m.out_features = weight, bias, fan_in, fan_out


@contextmanager
def compiled_blocks(model: torch.nn.Module):
    """The model with its repeated blocks compiled (`avjudge.judges.compiling`) inside the block, eager after it;
    yields how many blocks were compiled."""
    blocks = repeated_blocks(model)
    try:
        yield compile_blocks(model)
    finally:
        for block in blocks:
            block._compiled_call_impl = None  # what torch.nn.Module.compile set; None calls the block eagerly again


def forward_variants(judge: Judge, paths: list[Path], args, device: torch.device) -> dict:
    """The judge's forward pass and end-to-end scoring as released, with its MLP widths padded to a multiple of
    ``--align-widths``, and (``--compile``) with its blocks compiled as well, in one run: clips/s of each, the first
    batch's seconds (compiling included), how far the scores move from the released model's, each changed model's
    forward pass profiled."""
    adapter, size = judge.adapter, judge.settings.batch_size
    inputs = device_batches(judge, paths, 2)
    work = [paths[i % len(paths)] for i in range(max(8 * size, len(paths)))]
    variants = [("released", [])]
    if args.align_widths:
        variants.append(("aligned", [partial(aligned_widths, adapter.model, args.align_widths)]))
    if args.compile:
        variants.append(("compiled", variants[-1][1] + [partial(compiled_blocks, adapter.model)]))
    report: dict = {"align_widths": args.align_widths}
    for label, changes in variants:
        with ExitStack() as stack:
            changed = [stack.enter_context(change()) for change in changes]
            with Clock(device) as first:
                judge.score(work[:size])  # warm-up: kernels and, compiled, the graphs
            forward = forward_rate(adapter, inputs, device)
            with Clock(device) as clock:
                results = judge.score(work)
            _checked(results)
            row = report[label] = {"forward_clips_per_s": forward, "clips_per_s": len(work) / clock.seconds}
            row.update(first_batch_s=first.seconds, changed=changed, scores=[r.score for r in results])
            if changes:
                out = args.out and args.out.with_suffix(f".{label}.json")
                row["profile"] = forward_profile(adapter, inputs[0], device, out)
        print(
            f"    {label:<9} forward {forward:7.2f} clips/s, end to end {row['clips_per_s']:7.2f} clips/s, first "
            f"batch {row['first_batch_s']:.1f} s, modules changed {changed}",
            flush=True,
        )
    released = report["released"]["scores"]
    for label, _ in variants:
        scores = report[label].pop("scores")
        report[label]["max_score_difference"] = float(np.max(np.abs(np.subtract(scores, released))))
    return report


def media_agreement(before: Judge, after: Judge, path: Path, device: torch.device) -> dict:
    """How far the device's pixel values and audio features are from the CPU's, on one clip."""
    sample = after.sample(decode(path, **after.needs.options()))
    cpu_pixels, _ = video_patches(sample.frames, before.adapter.vision)
    gpu_pixels, _ = video_patches_on_device(torch.from_numpy(sample.frames).to(device), after.adapter.vision)
    cpu_features, _, _ = before.adapter.audio_features(sample.audio)
    gpu_features, _ = after.adapter.audio_feature_tensors(torch.from_numpy(sample.audio).to(device))
    return {
        "pixel_values_equal": bool(torch.equal(gpu_pixels.cpu(), torch.from_numpy(cpu_pixels))),
        "audio_features_max_difference": float(np.abs(gpu_features.cpu().numpy() - cpu_features).max()),
    }


def device_batches(judge: Judge, paths: list[Path], count: int) -> list[dict]:
    """``count`` batches of the judge's size of the clips in ``paths`` (cycled), collated and on the model's device
    as its scoring makes them."""
    adapter, size = judge.adapter, judge.settings.batch_size
    prepared = [judge.prepare(judge.sample(judge.decode(p))) for p in paths[: count * size]]
    device = adapter.device if adapter.media_on_device else None
    return [
        adapter.to_device(
            adapter.collate([prepared[(b * size + i) % len(prepared)] for i in range(size)], device=device)
        )
        for b in range(count)
    ]


def forward_profile(adapter, batch: dict, device: torch.device, out: Path | None) -> dict:
    """One batch's forward pass under the profiler: the share of the wall the GPU is busy, and the top kernels."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with torch.inference_mode():
        adapter.next_token_logits(batch)
        _sync(device)
        with profile(activities=activities) as prof:
            start = time.perf_counter()
            adapter.next_token_logits(batch)
            _sync(device)
            wall = time.perf_counter() - start
    events = prof.key_averages()
    # torch names a kernel's time device time (older releases: cuda time)
    key = next((k for k in ("self_device_time_total", "self_cuda_time_total") if hasattr(events[0], k)), None)
    kernels = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA]  # operators would count twice
    busy = sum(getattr(e, key) for e in kernels) / 1e6 if key and device.type == "cuda" else 0.0
    table = events.table(sort_by=key if busy else "self_cpu_time_total", row_limit=20)
    print(table, flush=True)
    if out is not None:
        out.with_suffix(".profile.txt").write_text(table)
    return {"wall_s": wall, "device_busy_s": busy, "device_busy_share": busy / wall}


def job_run(judge: Judge, paths: list[Path], count: int, size: int, folder: Path, device: torch.device):
    """``count`` clips through `avjudge score`'s batch job (`score_items` with its defaults: the local engine's
    decoding processes ahead of the model, clips back through shared memory, then the judge scores them): (its figures,
    the scores in the order of the clips). Each clip is a link of its own, so no two items share a decode."""
    folder.mkdir(parents=True, exist_ok=True)
    links = []
    for i in range(count):
        link = folder / f"item{i:04d}.mp4"
        link.symlink_to(paths[i % len(paths)])
        links.append(link)
    items = [{"id": f"{i:04d}", "video": str(link)} for i, link in enumerate(links)]
    score_items(judge, items[:size], folder / "warm-up.jsonl", chunk_size=size, progress=False)  # processes start
    out = folder / "scores.jsonl"
    with Clock(device) as clock:
        score_items(judge, items, out, chunk_size=4 * size, progress=False)
    records = sorted(read_records(out), key=lambda r: r["id"])
    if any(r.get("score") is None for r in records):
        raise RuntimeError(f"the batch job failed clips: {[r.get('error') for r in records if r.get('error')][:3]}")
    figures = {"clips": count, "clips_per_s": count / clock.seconds, "peak_gib": clock.peak_gib}
    return figures, [r["score"] for r in records]


def end_to_end(adapter, args, device: torch.device, folder: Path) -> dict:
    """The AV judge from encoded files to scores, before and after, at each batch size; stages alone; agreement."""
    paths = write_clips(folder, args.files, args)
    before = Judge(adapter, JudgeSettings(task="av", workers=args.workers, prepare_on="cpu"))
    before.decode = partial(decode, **before.needs.options(), skip_unneeded=False)  # every frame, as before
    # a second adapter object around the same model: where media are made is the adapter's own setting
    after_adapter = type(adapter)(
        adapter.model, adapter.tokenizer, adapter.feature_extractor, adapter.vision, adapter.checkpoint
    )
    after = Judge(
        after_adapter,
        JudgeSettings(task="av", workers=args.workers, prepare_on="device", decode_processes=args.decode_processes),
    )
    report: dict = {"files": len(paths), "gop": args.gop, "workers": args.workers, "runs": {}, "stages": {}}
    report["decode_processes"] = args.decode_processes
    report["agreement"] = media_agreement(before, after, paths[0], device)
    print(f"  device media vs CPU: {report['agreement']}", flush=True)
    scores: dict = {}
    for size in args.batch_sizes:
        print(f"  batch {size}:", flush=True)
        count = max(2 * 4 * size, len(paths))  # two scoring windows at least: the pipeline's steady state
        work = [paths[i % len(paths)] for i in range(count)]
        for label, judge in (("before", before), ("after", after)):
            judge.settings = replace(judge.settings, batch_size=size)
            judge.score(work[:size])  # warm-up
            with Clock(device) as clock:
                results = judge.score(work)
            _checked(results)
            scores.setdefault(size, {})[label] = [r.score for r in results]
            report["runs"].setdefault(str(size), {})[label] = {
                "clips": count,
                "clips_per_s": count / clock.seconds,
                "peak_gib": clock.peak_gib,
            }
            print(
                f"    {label:<6} {count / clock.seconds:7.2f} clips/s end to end, peak {_gib(clock.peak_gib)}",
                flush=True,
            )
        job, scores[size]["job"] = job_run(after, paths, count, size, folder / f"job_{size}", device)
        report["runs"][str(size)]["job"] = job
        print(f"    job    {job['clips_per_s']:7.2f} clips/s end to end (`avjudge score`'s batch job)", flush=True)
        report["stages"][str(size)] = stage_rates(before, after, paths, args.workers, device)
        run, before_scores = report["runs"][str(size)], scores[size]["before"]
        run["max_score_difference"] = float(np.max(np.abs(np.subtract(before_scores, scores[size]["after"]))))
        run["max_score_difference_job"] = float(np.max(np.abs(np.subtract(before_scores, scores[size]["job"]))))
    after.settings = replace(after.settings, batch_size=args.batch_sizes[0])
    report["profile"] = forward_profile(after.adapter, device_batches(after, paths, 1)[0], device, args.out)
    if args.align_widths or args.compile:
        report["variants"] = forward_variants(after, paths, args, device)
    return report


def measure_family(family: str, checkpoint: Path, args, device: torch.device) -> dict:
    tasks = REAL_SIZES[family]["tasks"]
    report: dict = {"tasks": {}}
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    adapter = build_adapter(checkpoint, device, dtype, args.attention[0])
    report["parameters"] = sum(p.numel() for p in adapter.model.parameters())
    print(f"{family}: {report['parameters'] / 1e9:.2f} B parameters", flush=True)
    if args.end_to_end:  # the AV judge end to end, then (with --train) its LoRA steps
        if "av" in tasks:
            with tempfile.TemporaryDirectory() as folder:
                report["end_to_end"] = end_to_end(adapter, args, device, Path(folder))
        if args.train and REAL_SIZES[family]["train"]:
            judge = Judge(adapter, JudgeSettings(task=tasks[0], prepare_on="cpu"))
            samples = synthetic_samples(tasks[0], args.clips, args.seconds, args.height, args.width, judge.settings.fps)
            report["train_bf16_weights"] = training_rows(
                judge, samples, args.train_batch_sizes, device, False, args.steps
            )
        return report
    for task in tasks:
        judge = Judge(adapter, JudgeSettings(task=task, workers=args.workers, prepare_on="cpu"))
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
    judge = Judge(adapter, JudgeSettings(task=tasks[0], prepare_on="cpu"))
    samples = synthetic_samples(tasks[0], args.clips, args.seconds, args.height, args.width, judge.settings.fps)
    report["differentiable"] = differentiable_row(judge, samples[0], device)
    if args.train and REAL_SIZES[family]["train"]:
        report["train_bf16_weights"] = training_rows(judge, samples, args.train_batch_sizes, device, False, args.steps)
        del adapter, judge
        _free(device)
        if device.type == "cuda":  # fp32 weights under bf16 autocast, as the HF Trainer runs `avjudge train`
            adapter = build_adapter(checkpoint, device, torch.float32, args.attention[0])
            judge = Judge(adapter, JudgeSettings(task=tasks[0], prepare_on="cpu"))
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
    p.add_argument(
        "--end-to-end",
        action="store_true",
        help="instead of the rows below, the AV judge from encoded files to scores, before and after (see above)",
    )
    p.add_argument("--files", type=int, default=16, help="--end-to-end: distinct clips written, cycled to fill runs")
    p.add_argument("--gop", type=int, default=24, help="--end-to-end: a keyframe every this many frames (24 fps)")
    p.add_argument(
        "--decode-processes", type=int, default=0, help="--end-to-end: processes decoding for the 'after' judge"
    )
    p.add_argument(
        "--align-widths",
        type=int,
        default=0,
        metavar="N",
        help="--end-to-end: the 'after' judge again with its MLP widths padded to a multiple of N, e.g. 8 (0: not)",
    )
    p.add_argument(
        "--compile",
        action="store_true",
        help="--end-to-end: the 'after' judge again with its repeated blocks compiled too (minutes on a GPU)",
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
