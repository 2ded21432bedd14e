"""A bounded load test of `avjudge serve`: many concurrent clients against the tiny AV judge, the server batching
their requests (--max-batch-size 16) against the same server scoring one item at a time (--max-batch-size 1), in
one run on this machine.

Each of --clients threads sends up to --requests requests of one world clip each (the clips taken in turn), and
stops when --seconds have passed. Printed per server: answers, 5xx, answers under the wrong id, throughput, p50 and
p99 latency, the mean batch size the server saw (its /metrics), and the throughput ratio.

`--size real` serves the Qwen2.5-Omni-7B AV judge at its released size with random bf16 weights (built as
`benchmarks/real_size_judges.py` builds it, saved once for both servers) on a CUDA GPU; the clips stay the world's
256x256 ones.

Usage: python benchmarks/serve_load.py [--clients 64] [--requests 20] [--seconds 120] [--clips 32]
       python benchmarks/serve_load.py --size real --workers 8 --out serve_load_gpu.json    # on a CUDA GPU
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np

from avjudge.judges.tiny import make_tiny_judges
from avjudge.world import MANIFEST, WorldConfig, make_world


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _judge(size: str, folder: Path) -> Path:
    """The AV judge to serve: the tiny one, or the released size with random weights (CUDA)."""
    tiny = make_tiny_judges(folder / "tiny")["qwen2_5_omni"]
    if size == "tiny":
        return tiny
    import torch
    from real_size_judges import build_adapter, real_size_checkpoint  # this script's neighbour

    checkpoint = real_size_checkpoint("qwen2_5_omni", tiny, folder / "real")
    build_adapter(checkpoint, torch.device("cuda"), torch.bfloat16, "auto").model.save_pretrained(str(checkpoint))
    torch.cuda.empty_cache()
    return checkpoint


def _start(
    judge: Path, batch: int, workers: int, processes: int = 0, start_timeout: float = 900.0
) -> tuple[subprocess.Popen, str]:
    options = ["--judge", f"av={judge}", "--max-batch-size", str(batch), "--batch-size", str(batch)]
    options += ["--max-wait-ms", "10", "--workers", str(workers), "--decode-processes", str(processes)]
    return start_server(options, start_timeout)


def start_server(options: list[str], start_timeout: float = 900.0) -> tuple[subprocess.Popen, str]:
    """``avjudge serve OPTIONS`` on a free loopback port, once it answers /health: (the process, its URL)."""
    port = _free_port()
    command = [sys.executable, "-m", "avjudge.cli", "serve", *options, "--port", str(port)]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + start_timeout
    while time.monotonic() < deadline and server.poll() is None:
        try:
            urllib.request.urlopen(url + "/health", timeout=1).read()
            return server, url
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.2)
    server.kill()
    raise RuntimeError("the server did not start")


def _load(url: str, clips: list[str], clients: int, requests: int, seconds: float) -> dict:
    latencies, statuses, wrong, lock = [], [], [0], threading.Lock()
    deadline = time.monotonic() + seconds

    def client(c: int) -> None:
        for r in range(requests):
            if time.monotonic() > deadline:
                return
            item_id = f"{c}-{r}"
            body = json.dumps({"items": [{"id": item_id, "judge": "av", "video": clips[(c + r) % len(clips)]}]})
            request = urllib.request.Request(url + "/v1/score", body.encode(), {"Content-Type": "application/json"})
            start = time.monotonic()
            try:
                with urllib.request.urlopen(request, timeout=300) as response:
                    status, reply = response.status, json.loads(response.read())
            except urllib.error.HTTPError as err:
                status, reply = err.code, None
            with lock:
                statuses.append(status)
                if status == 200:
                    latencies.append(time.monotonic() - start)
                    wrong[0] += reply["results"][0]["id"] != item_id or reply["results"][0]["error"] is not None

    start = time.monotonic()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    metrics = urllib.request.urlopen(url + "/metrics").read().decode()
    total = float(re.search(r"avjudge_batch_size_sum (\S+)", metrics).group(1))
    count = float(re.search(r"avjudge_batch_size_count (\S+)", metrics).group(1))
    return {
        "answers": len(latencies),
        "5xx": sum(s >= 500 for s in statuses),
        "wrong": wrong[0],
        "per_second": len(latencies) / elapsed,
        "p50": float(np.percentile(latencies, 50)),
        "p99": float(np.percentile(latencies, 99)),
        "mean_batch": total / count,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--clips", type=int, default=32)
    parser.add_argument("--size", choices=("tiny", "real"), default="tiny", help="real: the 7B judge, random weights")
    parser.add_argument("--workers", type=int, default=2, help="the server's decoding threads")
    parser.add_argument("--decode-processes", type=int, default=0, help="processes the server's threads decode in")
    parser.add_argument("--out", type=Path, help="also write the figures here as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        make_world(WorldConfig(n=args.clips, seed=3, duration=3.0, max_duration=4.0), tmp / "world", progress=False)
        clips = [str(tmp / "world" / json.loads(line)["video"]) for line in (tmp / "world" / MANIFEST).open()]
        judge = _judge(args.size, tmp)
        results = {}
        for batch in (16, 1):
            server, url = _start(judge, batch, args.workers, args.decode_processes)
            try:
                results[batch] = _load(url, clips, args.clients, args.requests, args.seconds)
            finally:
                server.send_signal(signal.SIGTERM)
                server.wait(timeout=60)
    print(f"{args.size} judge; {args.clients} clients x up to {args.requests} requests (one clip each)")
    print(f"{os.cpu_count()} cores, {args.workers} decoding threads, {_accelerator()}")
    header = ("max batch", "answers", "5xx", "wrong id", "req/s", "p50 s", "p99 s", "mean batch")
    print("".join(f"{h:>{w}}" for h, w in zip(header, (10, 9, 5, 9, 8, 8, 8, 11))))
    for batch, r in results.items():
        print(
            f"{batch:>10}{r['answers']:>9}{r['5xx']:>5}{r['wrong']:>9}{r['per_second']:>8.2f}{r['p50']:>8.2f}"
            f"{r['p99']:>8.2f}{r['mean_batch']:>11.1f}"
        )
    ratio = results[16]["per_second"] / results[1]["per_second"]
    print(f"throughput, batched / one at a time: {ratio:.2f}x")
    if args.out:
        report = {"size": args.size, "accelerator": _accelerator(), "workers": args.workers, "ratio": ratio}
        args.out.write_text(json.dumps(report | {"servers": results}, indent=2))


def _accelerator() -> str:
    import torch

    return torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"


if __name__ == "__main__":
    main()
