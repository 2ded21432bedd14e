"""How much batching can speed up a judge's scoring here: the cost of one clip split into what batching shares (the
forward pass) and what it does not (decoding, the processor), and the ceiling that follows.

On --clips world clips like those `benchmarks/serve_load.py` sends (3 s, 256x256), with the tiny AV judge (or the
released-size one, random weights, on a CUDA GPU with --size real), it times per clip, in wall and CPU seconds:
decoding what the judge needs (u_d), preparing its inputs (frame sampling, patches, audio features, tokens: u_p),
and the forward pass one clip at a time (f_1) and --batch-size clips at a time (f_B, per clip). A server that
batches perfectly still decodes and prepares every clip, so:

- on a CPU, where everything shares the cores, no server can answer more than
  cores / CPU time of (u_d + u_p + f_B) clips a second, before its HTTP work and its clients' own;
- on a GPU, where --workers threads decode and prepare beside the forward pass, the slower of u / workers and
  the forward pass sets the pace (u = u_d + u_p, wall times): where it is the forward pass, a server gains about
  what batching gains on it, f_1 / f_B.

Usage: python benchmarks/batching_bound.py [--clips 32] [--batch-size 16] [--workers 14] [--size tiny|real]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import torch
from serve_load import _judge  # this script's neighbour: the judge the load test serves

from avjudge.jsonl import read_jsonl
from avjudge.judges import Judge
from avjudge.world import MANIFEST, WorldConfig, make_world


def _per_clip(fn, items: list, repeats: int = 3) -> tuple[float, float]:
    """(wall, CPU) seconds per item of ``fn`` over ``items``, each the best of ``repeats`` passes; CPU seconds are
    this process's, every thread's."""
    wall = cpu = float("inf")
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        for item in items:
            fn(item)
        wall, cpu = min(wall, time.perf_counter() - start), min(cpu, time.process_time() - start_cpu)
    return wall / len(items), cpu / len(items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--workers", type=int, default=14, help="a GPU server's decoding threads")
    parser.add_argument("--size", choices=["tiny", "real"], default="tiny")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        make_world(WorldConfig(n=args.clips, seed=3, duration=3.0, max_duration=4.0), tmp / "world", progress=False)
        paths = [tmp / "world" / r["video"] for r in read_jsonl(tmp / "world" / MANIFEST)]
        judge = Judge.load("av", _judge(args.size, tmp), batch_size=args.batch_size, workers=1)
        adapter = judge.adapter

        decode_s, decode_cpu = _per_clip(judge.decode, paths)
        clips = [judge.decode(p) for p in paths]
        prepare_s, prepare_cpu = _per_clip(lambda clip: judge.prepare(judge.sample(clip)), clips)
        prepared = [judge.prepare(judge.sample(clip)) for clip in clips]

        def forward(batch):
            with torch.inference_mode():
                adapter.next_token_logits(adapter.collate(batch))

        singles = [[p] for p in prepared]
        batches = [prepared[i : i + args.batch_size] for i in range(0, len(prepared), args.batch_size)]
        forward(batches[0])  # warm-up
        one_s, one_cpu = _per_clip(forward, singles)
        batched_s, batched_cpu = (t * len(batches) / len(prepared) for t in _per_clip(forward, batches))

    print(f"{args.clips} world clips, the {args.size} AV judge on {adapter.device}, {torch.get_num_threads()} threads")
    for name, wall, cpu in [
        ("decode", decode_s, decode_cpu),
        ("prepare", prepare_s, prepare_cpu),
        ("forward, one clip at a time", one_s, one_cpu),
        (f"forward in batches of {args.batch_size}, per clip", batched_s, batched_cpu),
    ]:
        print(f"{name}: {1e3 * wall:.1f} ms ({1e3 * cpu:.1f} ms CPU)")
    unshared = decode_s + prepare_s
    if adapter.device.type == "cpu":
        cores = len(os.sched_getaffinity(0))
        per_clip = decode_cpu + prepare_cpu + batched_cpu
        print(
            f"no server on these {cores} cores answers more than {cores / per_clip:.1f} clips/s (CPU per clip ", end=""
        )
        print(f"{1e3 * per_clip:.1f} ms, {(decode_cpu + prepare_cpu) / per_clip:.0%} of it decoding and preparing)")
    else:
        beside = unshared / args.workers
        print(f"decoding and preparing across {args.workers} threads: {1e3 * beside:.1f} ms a clip; ", end="")
        pace = "the forward pass" if beside < batched_s else "decoding"
        print(f"{pace} sets the pace; batching speeds the forward pass up {one_s / batched_s:.2f}x")


if __name__ == "__main__":
    main()
