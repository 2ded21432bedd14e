"""Time `make_world` for the foundation issue's figure: 20 clips of 8 s, 256x256, 25 fps, with audio.

Usage: python benchmarks/world_speed.py [--n 20] [--workers 2]
Prints clips per second and the real-time factor (seconds of audio-video made per second).
"""

import argparse
import tempfile
import time

from avjudge.world import WorldConfig, make_world


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=20)
    p.add_argument("--workers", type=int, default=None)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        summary = make_world(WorldConfig(n=args.n, seed=0), out, workers=args.workers, progress=False)
        elapsed = time.perf_counter() - start
    print(
        f"world make: {summary['clips']} clips ({summary['total_duration_s']:.0f} s of 256x256 25 fps video + "
        f"16 kHz audio, {summary['with_speech']} with speech) in {elapsed:.2f} s = "
        f"{summary['clips'] / elapsed:.1f} clips/s, {summary['total_duration_s'] / elapsed:.0f}x real time"
    )


if __name__ == "__main__":
    main()
