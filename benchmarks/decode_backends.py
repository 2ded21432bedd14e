"""Decoding backends side by side on the same clips: PyAV (avjudge.media.decode, what avjudge uses) and decord
0.6.0 (the design's first pick, an optional extra), in one run.

Per backend: the time to read what the AV judge reads of a clip (frames at 1 fps, audio at 16 kHz mono), whether
the frames are the same pixels, and what each does with a file carrying rotation metadata (phones record so).

Usage: pip install decord==0.6.0; python benchmarks/decode_backends.py [--clips 24] [--repeat 3]
Needs the ffmpeg binary for the rotated copy.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from avjudge.jsonl import read_jsonl
from avjudge.media import decode
from avjudge.world import MANIFEST, WorldConfig, make_world

FPS, RATE = 1.0, 16000


def with_decord(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Frames on screen at k / FPS (the same choice as avjudge's: the last frame shown at or before each time) and
    the audio at RATE, mono, through decord's own readers."""
    import decord

    video = decord.VideoReader(str(path))
    starts = np.array([video.get_frame_timestamp(i)[0] for i in range(len(video))])
    duration = len(video) / video.get_avg_fps()
    times = np.arange(int(np.ceil(duration * FPS - 1e-9))) / FPS
    shown = np.clip(np.searchsorted(starts, times + 1e-6, side="right") - 1, 0, len(video) - 1)
    frames = video.get_batch(list(shown)).asnumpy()
    audio = decord.AudioReader(str(path), sample_rate=RATE, mono=True)[:].asnumpy()
    return frames, audio


def with_pyav(path: Path) -> tuple[np.ndarray, np.ndarray]:
    clip = decode(path, fps=FPS, sample_rate=RATE, channels=1)
    return clip.frames, clip.audio


def timed(read, paths: list[Path], repeat: int) -> tuple[float, list]:
    best, out = float("inf"), []
    for _ in range(repeat):
        start = time.perf_counter()
        out = [read(p) for p in paths]
        best = min(best, time.perf_counter() - start)
    return best, out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clips", type=int, default=24)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        make_world(WorldConfig(n=args.clips, seed=3, duration=4.0, width=320, height=240), tmp, progress=False)
        paths = [Path(tmp) / r["video"] for r in read_jsonl(Path(tmp) / MANIFEST)]
        with_decord(paths[0]), with_pyav(paths[0])  # first calls pay one-off costs neither way should be charged
        pyav_s, pyav = timed(with_pyav, paths, args.repeat)
        decord_s, dec = timed(with_decord, paths, args.repeat)
        frames_equal = sum(a[0].shape == b[0].shape and np.array_equal(a[0], b[0]) for a, b in zip(pyav, dec))
        frame_diff = max(
            float(np.abs(a[0].astype(int) - b[0].astype(int)).max())
            for a, b in zip(pyav, dec)
            if a[0].shape == b[0].shape
        )
        audio_diff = max(
            float(np.abs(a[1][0, : b[1].shape[-1]] - b[1].reshape(-1)[: a[1].shape[1]]).max())
            for a, b in zip(pyav, dec)
        )
        rotated = Path(tmp) / "rotated.mp4"
        subprocess.run(
            [
                "ffmpeg",
                "-loglevel",
                "error",
                "-i",
                str(paths[0]),
                "-c",
                "copy",
                "-metadata:s:v",
                "rotate=90",
                str(rotated),
            ],
            check=True,
        )
        shapes = {name: read(rotated)[0].shape[1:3] for name, read in (("pyav", with_pyav), ("decord", with_decord))}
    print(f"{len(paths)} world clips, 4 s, 320x240 (H.264 + AAC), frames at {FPS:g} fps + audio at {RATE} Hz mono")
    print(
        f"PyAV (avjudge.media.decode): {pyav_s:.2f} s; decord 0.6.0: {decord_s:.2f} s; "
        f"decord / PyAV {decord_s / pyav_s:.2f}x"
    )
    print(
        f"the same frames chosen, pixel for pixel: {frames_equal} of {len(paths)} clips "
        f"(largest difference {frame_diff:g})"
    )
    print(f"largest audio difference over the common samples: {audio_diff:.3g}")
    print(
        "a 320x240 file with rotate=90 metadata decodes as (height, width): "
        f"PyAV {shapes['pyav']}, decord {shapes['decord']}"
    )


if __name__ == "__main__":
    main()
