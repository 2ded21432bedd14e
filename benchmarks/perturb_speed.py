"""Speed of each audio strategy on one core: 10 s of 16 kHz mono, as a multiple of real time.

Usage: python benchmarks/perturb_speed.py [--repeats 5]
"""

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

from avjudge.media import MediaClip, encode_audio
from avjudge.perturb import STRATEGIES, Context, SourcePool, get_strategy


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    try:
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core
    except (AttributeError, OSError):
        pass
    sr, seconds = 16000, 10.0
    rng = np.random.default_rng(0)
    audio = (0.1 * rng.standard_normal((1, int(sr * seconds)))).astype(np.float32)
    clip = MediaClip(audio=audio, sample_rate=sr, duration=seconds)
    with tempfile.TemporaryDirectory() as tmp:
        records = []
        for i in range(6):
            path = Path(tmp) / f"s{i}.wav"
            encode_audio(path, (0.1 * rng.standard_normal((1, int(sr * seconds)))).astype(np.float32), sr)
            records.append(
                {"id": f"s{i}", "video": str(path), "captions": {"audio": f"sound {i}", "utterance": "hello"}}
            )
        pool = SourcePool(records)
        ctx = Context(record={"id": "s0", "meta": {"background": "indoor"}}, pool=pool)
        print(f"{'strategy':<18} {'ms per 10 s':>12} {'x real time':>12}")
        for name in STRATEGIES:
            strategy = get_strategy(name)
            params = strategy.sample(np.random.default_rng(1), clip, ctx)
            strategy.apply(clip, params, ctx)  # warm caches (pool decoding, imports)
            start = time.perf_counter()
            for _ in range(args.repeats):
                strategy.apply(clip, params, ctx)
            per = (time.perf_counter() - start) / args.repeats
            print(f"{name:<18} {per * 1e3:>12.1f} {seconds / per:>12.0f}")


if __name__ == "__main__":
    main()
