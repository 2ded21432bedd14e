"""What a judge's decode costs when only the groups of pictures holding its sampled frames are decoded.

`avjudge.media.decode` at a judge's 1 fps decodes a group of pictures (a keyframe and the packets up to the next)
only if it holds a sampled frame, and stops inside it once the frame is shown (`skip_unneeded`, the default); before
it decoded every frame of the clip. This encodes 8 s 720p clips (24 fps, H.264 + AAC) with a keyframe every 24, 48
and 250 frames (x264's default) and reads what the AV judge reads of each (frames at 1 fps, audio at 16 kHz mono)
both ways, on one thread, best of ``--repeat``; the frames must be the same pixels.

    python benchmarks/decode_groups.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_size_judges import FILE_FPS, FILE_RATE, panning_clip  # noqa: E402

from avjudge.media import decode, encode_video  # noqa: E402

READ = dict(fps=1.0, sample_rate=16000, channels=1)


def best_time(path: Path, repeat: int, **options):
    times, clip = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        clip = decode(path, **READ, **options)
        times.append(time.perf_counter() - start)
    return min(times), clip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seconds", type=float, default=8.0)
    args = p.parse_args()
    frames, audio = panning_clip(args.seconds, 720, 1280, seed=0)
    print("| keyframe every | file | every frame | sampled groups | ratio | same frames |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for gop in (24, 48, 250):
            path = encode_video(Path(tmp) / f"gop{gop}.mp4", frames, FILE_FPS, audio, FILE_RATE, gop=gop)
            every, all_frames = best_time(path, args.repeat, skip_unneeded=False)
            gated, sampled = best_time(path, args.repeat)
            same = np.array_equal(all_frames.frames, sampled.frames)
            size = path.stat().st_size / 2**20
            print(f"| {gop} frames | {size:.1f} MiB | {every:.3f} s | {gated:.3f} s | {every / gated:.2f}× | {same} |")


if __name__ == "__main__":
    main()
