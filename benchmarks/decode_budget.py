"""Hostile clips against `avjudge serve`: small files that declare long, large videos (120 s at 2048x2048 in under
100 KB, 20 s at 4096x4096), sent by path and as base64 uploads, one at a time and four in one request, while
another caller scores a 3 s world clip over and over; beside them an ordinary clip of 60 s at 512x512, as many
frames as the VT judge reads (64 at most), the yardstick of what a clip may cost.

For each case: what the hostile item got (a score, or its error), how long its request took, how much the server's
resident memory grew at its peak above what it held before (sampled every 20 ms from /proc), and the other caller's
slowest and median answer meanwhile. The server runs with its default decode budget (`avjudge serve --help`,
"decode budget"): the 4096x4096 frames are over its frame limit and refused from the headers; the 2048x2048 clip
is decoded, its frames scaled as they are decoded to the size the VT judge reads.

Usage: python benchmarks/decode_budget.py [--out FILE.json]
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import signal
import tempfile
import threading
import time
import urllib.error
import urllib.request
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
from serve_load import start_server  # this script's neighbour

from avjudge.judges.tiny import make_tiny_judges
from avjudge.world import MANIFEST, WorldConfig, make_world

CASES = (  # (name, clip, sent as, items in the request)
    ("60 s 512x512 (ordinary), path", "ordinary", "path", 1),  # as many frames as the judge reads: the yardstick
    ("120 s 2048x2048, path", "long", "path", 1),
    ("120 s 2048x2048, upload", "long", "upload", 1),
    ("120 s 2048x2048, upload x4", "long", "upload", 4),
    ("20 s 4096x4096, path", "large", "path", 1),
    ("20 s 4096x4096, upload", "large", "upload", 1),
)


def oversized_clip(path: Path, seconds: int, side: int, fps: int = 3, piece_s: int = 10) -> Path:
    """A small file declaring ``seconds`` of ``side`` x ``side`` video with silent audio: ``piece_s`` seconds of a
    still picture encoded once, its packets written again and again later in time (a long clip that costs
    seconds to make)."""
    piece = io.BytesIO()
    with av.open(piece, "w", format="mp4") as container:
        video = container.add_stream("libx264", rate=fps)
        video.width = video.height = side
        video.pix_fmt = "yuv420p"
        video.options = {"preset": "veryfast", "crf": "51", "x264-params": f"keyint={piece_s * fps}:bframes=16"}
        picture = np.zeros((side, side, 3), np.uint8)
        picture[: side // 2] = 200
        for k in range(piece_s * fps):
            frame = av.VideoFrame.from_ndarray(picture, format="rgb24")
            frame.pts, frame.time_base = k, Fraction(1, fps)
            for packet in video.encode(frame):
                container.mux(packet)
        for packet in video.encode():
            container.mux(packet)
    piece.seek(0)
    rate, chunk = 16000, 1024
    with av.open(piece) as source, av.open(str(path), "w") as out:
        stream = out.add_stream_from_template(source.streams.video[0])
        packets = [p for p in source.demux(source.streams.video[0]) if p.size]
        step = round(piece_s / packets[0].time_base)
        sound = out.add_stream("aac", rate=rate, layout="mono")
        sent = 0
        for r in range(seconds // piece_s):
            for p in packets:
                copy = av.Packet(bytes(p))
                copy.pts, copy.dts, copy.duration = p.pts + r * step, p.dts + r * step, p.duration
                copy.time_base, copy.stream, copy.is_keyframe = p.time_base, stream, p.is_keyframe
                out.mux(copy)
            while sent < (r + 1) * piece_s * rate:
                frame = av.AudioFrame.from_ndarray(np.zeros((1, chunk), np.float32), format="fltp", layout="mono")
                frame.sample_rate, frame.pts = rate, sent
                sent += chunk
                out.mux(sound.encode(frame))
        out.mux(sound.encode())
    return path


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def _post(url: str, items: list[dict], timeout: float = 300.0) -> dict:
    request = urllib.request.Request(
        url + "/v1/score", json.dumps({"items": items}).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def _case(url: str, pid: int, hostile: list[dict], small: dict) -> dict:
    """One hostile request, the other caller's requests meanwhile, the server's memory sampled throughout."""
    before = _rss_mb(pid)
    peak, latencies, answer, done = [before], [], {}, threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _rss_mb(pid))
            time.sleep(0.02)

    def other_caller() -> None:
        while not done.is_set():
            start = time.monotonic()
            reply = _post(url, [small], timeout=60)
            assert reply["results"][0]["error"] is None, reply
            latencies.append(time.monotonic() - start)

    threads = [threading.Thread(target=sample), threading.Thread(target=other_caller)]
    for t in threads:
        t.start()
    start = time.monotonic()
    try:
        answer = _post(url, hostile)
    finally:
        seconds = time.monotonic() - start
        done.set()
        for t in threads:
            t.join()
    result = answer["results"][0]
    return {
        "outcome": "scored" if result["error"] is None else result["error"].split(": ", 1)[-1],
        "answered_s": seconds,
        "memory_growth_mb": peak[0] - before,
        "other_caller_max_s": max(latencies, default=float("nan")),
        "other_caller_p50_s": float(np.median(latencies)) if latencies else float("nan"),
        "other_caller_answers": len(latencies),
    }


def measure(folder: Path) -> dict:
    """Every case of `CASES` against a server of the tiny AV and VT judges; name -> figures."""
    make_world(WorldConfig(n=2, seed=5, duration=3.0, max_duration=3.0), folder / "world", progress=False)
    record = json.loads((folder / "world" / MANIFEST).read_text().splitlines()[0])
    small = {"id": "small", "judge": "av", "video": str(folder / "world" / record["video"])}
    clips = {
        "long": oversized_clip(folder / "long.mp4", 120, 2048),
        "large": oversized_clip(folder / "large.mp4", 20, 4096),
        "ordinary": oversized_clip(folder / "ordinary.mp4", 60, 512, fps=24),
    }
    tiny = make_tiny_judges(folder / "tiny")
    judge = tiny["qwen2_5_omni"]
    server, url = start_server(["--judge", f"av={judge}", "--judge", f"vt={judge}"], start_timeout=300)
    try:
        _post(url, [small])  # the models warm, as a serving server's are
        figures = {}
        for name, clip, sent, count in CASES:
            media = (
                {"video": str(clips[clip])}
                if sent == "path"
                else {"video_b64": base64.b64encode(clips[clip].read_bytes()).decode()}
            )
            items = [{"id": f"hostile{k}", "judge": "vt", "text": "a still picture", **media} for k in range(count)]
            figures[name] = _case(url, server.pid, items, small)
        figures["sizes_kb"] = {clip: path.stat().st_size / 1024 for clip, path in clips.items()}
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="also write the figures here as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        figures = measure(Path(tmp))
    sizes = figures.pop("sizes_kb")
    print(f"files: 120 s 2048x2048 {sizes['long']:.0f} KB, 20 s 4096x4096 {sizes['large']:.0f} KB")
    print(f"{os.cpu_count()} cores")
    print("the hostile items ask the tiny VT judge (64 frames at most, 360x420 pixels each); the other caller the AV")
    header = ("case", "hostile item", "answered s", "memory +MB", "other max s", "other p50 s")
    print(f"{header[0]:<30}{header[1]:<44}" + "".join(f"{h:>12}" for h in header[2:]))
    for name, f in figures.items():
        print(
            f"{name:<30}{f['outcome'][:42]:<44}{f['answered_s']:>12.2f}{f['memory_growth_mb']:>12.0f}"
            f"{f['other_caller_max_s']:>12.2f}{f['other_caller_p50_s']:>12.2f}"
        )
    if args.out:
        args.out.write_text(json.dumps({"sizes_kb": sizes, "cases": figures}, indent=2))


if __name__ == "__main__":
    main()
