"""Frames traded for pixels: what each AV sampling lets the judge see, and what it costs (the table behind the AV
default, `avjudge.sampling`).

For each fps x max_pixels, on 8 s of 1280x720 video with 16 kHz sound:

- the grid step (2 frames a visual token group: 2 / fps seconds) and the visual tokens a second of video costs through
  the Qwen2.5-Omni processor the judges use (its own resize: pixels / 28² per group);
- what the judge can see of the AV recipe's shifts: the share at least a grid step long (the bound) of the shipped
  recipes' ranges drawn uniformly (micro 0.2-1 s, medium 1-3 s), and the share of a world's demo pairs whose events
  differ from the picture at the grid (ground truth, `avjudge.data.perceivability`);
- the forward pass of one clip on this CPU: the tiny judge (the demo's), and the released Qwen2.5-Omni thinker's
  widths with one layer of each kind (a windowed and a full-attention vision block, an audio encoder layer, a
  language-model layer; random fp32 weights), each timed with hooks and extrapolated to the released depth (28
  windowed + 4 full vision blocks, 32 audio layers, 28 language layers: every layer of a kind has the same shape),
  and the peak memory its first pass adds (peak RSS growth in a fresh process per row: inference frees a layer's
  activations before the next, so one layer's peak is the model's); times are the fastest of 3 passes.

With ``--sync-adapter``, only the AV default (`sync`) is measured, the clip's audio inside the video item, without
and with the sync adapter (`avjudge.judges.sync_adapter`: one token per visual token group), each in a fresh process:
what the adapter costs in tokens, time and memory.

    python benchmarks/sampling_cost.py --out sampling_cost.json      # ~5 min on 2 cores
    python benchmarks/sampling_cost.py --sync-adapter --out sampling_cost_sync_adapter.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_size_judges import build_adapter, real_size_checkpoint  # noqa: E402

from avjudge.data import build_dataset, load_recipe  # noqa: E402
from avjudge.data.perceivability import dataset_perceivability  # noqa: E402
from avjudge.judges import Judge, JudgeSettings  # noqa: E402
from avjudge.judges.adapters import JudgeSample  # noqa: E402
from avjudge.judges.tiny import make_tiny_judges  # noqa: E402
from avjudge.sampling import Sampling  # noqa: E402
from avjudge.world import MANIFEST, WorldConfig, make_world  # noqa: E402

FPS = (1.0, 2.0, 4.0, 8.0)
PIXELS = (480 * 640, 480 * 640 // 4, 480 * 640 // 16, 480 * 640 // 64)
RECIPE_SHIFTS = {"time_shift_micro": (0.2, 1.0), "time_shift_medium": (1.0, 3.0)}  # avbench_av_100k's ranges
DEPTHS = {"vision_window": 28, "vision_full": 4, "audio": 32, "language": 28}  # Qwen2.5-Omni-7B's thinker


def bound(low: float, high: float, step: float) -> float:
    """The share of shifts drawn uniformly in [low, high] that are at least ``step`` long."""
    return float(np.clip((high - max(low, step)) / (high - low), 0.0, 1.0))


def memory_mb(field: str) -> float:
    """This process's ``VmRSS`` (resident now) or ``VmHWM`` (its peak) in MB, from /proc (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak_rss() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS (Linux)


class LayerClock:
    """Seconds spent in each named module during forward passes, from pre- and post-forward hooks."""

    def __init__(self, modules: dict[str, torch.nn.Module]):
        self.seconds = dict.fromkeys(modules, 0.0)
        self._start = {}
        for name, module in modules.items():
            module.register_forward_pre_hook(lambda *_, n=name: self._start.__setitem__(n, time.perf_counter()))
            module.register_forward_hook(lambda *_, n=name: self._add(n))

    def _add(self, name: str) -> None:
        self.seconds[name] += time.perf_counter() - self._start[name]


def clip_sample(seconds: float, fps: float, seed: int = 0) -> JudgeSample:
    rng = np.random.default_rng(seed)
    frames = rng.integers(0, 256, (int(round(seconds * fps)), 720, 1280, 3), dtype=np.uint8)
    audio = (0.1 * rng.standard_normal(int(seconds * 16000))).astype(np.float32)
    return JudgeSample(frames=frames, fps=fps, audio=audio)


def one_layer_thinker(tiny_dir: Path, folder: Path) -> Path:
    """The released Qwen2.5-Omni thinker's widths with one layer of each kind, the tiny tokenizer's vocabulary."""
    checkpoint = real_size_checkpoint("qwen2_5_omni", tiny_dir, folder)
    config = json.loads((checkpoint / "config.json").read_text())
    config["vision_config"].update(depth=2, fullatt_block_indexes=[1])
    config["audio_config"].update(encoder_layers=1)
    config["text_config"].update(num_hidden_layers=1, vocab_size=json.loads((tiny_dir / "config.json").read_text())
                                 ["text_config"]["vocab_size"])  # fmt: skip
    (checkpoint / "config.json").write_text(json.dumps(config, indent=2))
    return checkpoint


def forward_row(judge: Judge, sample: JudgeSample, clock: LayerClock | None = None, passes: int = 3) -> dict:
    """One clip's tokens and forward pass: the peak memory its first pass adds to the process (run in a fresh one, so
    no freed memory is reused), the fastest of ``passes`` and the tower times ``clock`` saw in that one."""
    prepared = judge.prepare(sample)
    batch = judge.adapter.collate([prepared])
    best, layers = float("inf"), {}
    with torch.inference_mode():
        before = memory_mb("VmRSS")
        reset_peak_rss()
        judge.adapter.next_token_logits(batch)
        added = memory_mb("VmHWM") - before
        for _ in range(passes):
            if clock is not None:
                clock.seconds = dict.fromkeys(clock.seconds, 0.0)
            start = time.perf_counter()
            judge.adapter.next_token_logits(batch)
            seconds = time.perf_counter() - start
            if seconds < best:
                best, layers = seconds, dict(clock.seconds) if clock is not None else {}
    video_id = judge.adapter.tokenizer.convert_tokens_to_ids("<|VIDEO|>")
    row = {
        "visual_tokens": int((batch["input_ids"] == video_id).sum()),
        "sequence": int(batch["input_ids"].shape[1]),
        "seconds": best,
        "peak_added_mb": added,
    }
    if clock is not None:
        row["layer_seconds"] = layers
    return row


def measure_row(fps: float, pixels: int, seconds: float, max_released_tokens: int, sync: bool | None = None) -> dict:
    """One sampling's forward passes, tiny and released, in this process (a fresh one per row: see `forward_row`).
    ``sync``: None, the audio as its own item; False, inside the video item; True, there and with a sync adapter."""
    tiny = make_tiny_judges()["qwen2_5_omni"]
    settings = JudgeSettings(task="av", fps=fps, max_pixels=pixels, max_frames=128, workers=1, device="cpu",
                             use_audio_in_video=sync is not None)  # fmt: skip
    sample = clip_sample(seconds, fps)

    def judge_of(adapter) -> Judge:
        if sync:
            adapter.add_sync_adapter()
        return Judge(adapter, settings)

    tiny_row = forward_row(judge_of(Judge.load("av", tiny, workers=1, device="cpu").adapter), sample)
    row = {"visual_tokens": tiny_row["visual_tokens"], "sequence": tiny_row["sequence"],
           "tiny_seconds": tiny_row["seconds"]}  # fmt: skip
    if tiny_row["visual_tokens"] > max_released_tokens:
        return row
    with tempfile.TemporaryDirectory() as tmp:
        real = build_adapter(one_layer_thinker(tiny, Path(tmp) / "real"), torch.device("cpu"), torch.float32, "auto")
    visual, audio, language = real.model.model.visual, real.model.model.audio_tower, real.model.model.language_model
    clock = LayerClock({"vision_window": visual.blocks[0], "vision_full": visual.blocks[1],
                        "audio": audio.layers[0], "language": language.layers[0]})  # fmt: skip
    real_row = forward_row(judge_of(real), sample, clock)
    layers = real_row["layer_seconds"]
    row.update(
        released_seconds_estimate=real_row["seconds"] + sum(layers[k] * (DEPTHS[k] - 1) for k in DEPTHS),
        released_layer_seconds=layers,
        peak_added_mb=real_row["peak_added_mb"],
    )
    return row


def world_perceivability(folder: Path, samplings: dict[tuple, Sampling]) -> dict[tuple, dict]:
    """Ground-truth perceivability of the demo recipe's shifts on a world of the demo's 5 s clips, per sampling."""
    make_world(WorldConfig(n=48, seed=5, duration=5.0, width=64, height=64), folder / "world", progress=False)
    recipe, source = load_recipe(
        "world_demo",
        [f"source={folder / 'world' / MANIFEST}", "judges.av.pairs=480", "judges.vt.pairs=2", "judges.at.pairs=2"],
    )
    build_dataset(recipe, source, folder / "pairs", progress=False)
    return {key: dataset_perceivability(folder / "pairs", s)["per_type"] for key, s in samplings.items()}


def row_in_process(args, fps: float, pixels: int, *extra: str) -> dict:
    command = [sys.executable, __file__, "--row", str(fps), str(pixels), "--seconds", str(args.seconds),
               "--max-released-tokens", str(args.max_released_tokens), *extra]  # fmt: skip
    return json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout.splitlines()[-1])


def sync_adapter_rows(args) -> dict:
    """The AV default's cost, the audio inside the video item, without and with a sync adapter, and their ratios."""
    sampling = Sampling(fps=8.0, max_pixels=480 * 640 // 16, max_frames=128)
    rows = {
        state: row_in_process(args, sampling.fps, sampling.max_pixels, "--row-sync", state) for state in ("off", "on")
    }
    off, on = rows["off"], rows["on"]
    measured = ("sequence", "tiny_seconds", "released_seconds_estimate", "peak_added_mb")
    ratios = {key: on[key] / off[key] for key in measured if key in off}
    print(
        f"sequence {off['sequence']} -> {on['sequence']} tokens; "
        + ", ".join(f"{k} x{v:.3f}" for k, v in ratios.items())
    )
    result = {"seconds": args.seconds, "torch_threads": torch.get_num_threads(), "without": off, "with": on,
              "ratios": ratios}  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))
    return result


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=4.0, help="the clip's length (the CPU cost grows past linearly)")
    p.add_argument(
        "--max-released-tokens",
        type=int,
        default=800,
        help="skip the released-size forward pass where the clip has more visual tokens than this (CPU time)",
    )
    p.add_argument("--sync-adapter", action="store_true", help="the sync sampling without and with a sync adapter")
    p.add_argument("--row", nargs=2, type=float, metavar=("FPS", "PIXELS"), help=argparse.SUPPRESS)
    p.add_argument("--row-sync", choices=["off", "on"], help=argparse.SUPPRESS)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    if args.row:  # one row, in a process of its own: print it as JSON
        fps, pixels = args.row
        sync = None if args.row_sync is None else args.row_sync == "on"
        print(json.dumps(measure_row(fps, int(pixels), args.seconds, args.max_released_tokens, sync)))
        return {}
    if args.sync_adapter:
        return sync_adapter_rows(args)
    samplings = {(fps, px): Sampling(fps=fps, max_pixels=px, max_frames=128) for fps in FPS for px in PIXELS}
    with tempfile.TemporaryDirectory() as tmp:
        seen = world_perceivability(Path(tmp), samplings)
    rows = []
    for (fps, px), sampling in samplings.items():
        measured = row_in_process(args, fps, px)
        row = {
            "fps": fps,
            "max_pixels": px,
            "grid_s": sampling.grid_s,
            "visual_tokens_per_s": measured["visual_tokens"] / args.seconds,
            "bound": {k: bound(*r, sampling.grid_s) for k, r in RECIPE_SHIFTS.items()},
            "seen_in_events": {k: seen[(fps, px)][k]["seen_in_events"] for k in RECIPE_SHIFTS if k in seen[(fps, px)]},
            **measured,
        }
        rows.append(row)
        released = (
            f"released ~{row['released_seconds_estimate']:.1f} s/clip (CPU), +{row['peak_added_mb']:.0f} MB"
            if "peak_added_mb" in row
            else "released: not run on the CPU (tokens)"
        )
        print(
            f"{fps:>4g} fps {px:>7,} px  grid {sampling.grid_s:5.3g} s  {row['visual_tokens_per_s']:6.1f} visual "
            f"tokens/s  shifts >= grid: micro {row['bound']['time_shift_micro']:.0%} medium "
            f"{row['bound']['time_shift_medium']:.0%}  seen (world): "
            + " ".join(f"{k.split('_')[-1]} {v:.0%}" for k, v in row["seen_in_events"].items())
            + f"  tiny {row['tiny_seconds']:.3f} s  {released}",
            flush=True,
        )
    result = {"seconds": args.seconds, "torch_threads": torch.get_num_threads(), "rows": rows}
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
