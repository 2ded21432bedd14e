"""The signal-metric suite on world clips: each clip decoded once and shared (avjudge) vs decoded again
for every metric (as AVBench's ten standalone scripts do, each reading only the streams it needs),
in one run, same clips, same metrics.

Usage: python benchmarks/metrics_decode.py [--clips 32] [--metrics dnsmos,nisqa,...]
Weights are looked up in $AVJUDGE_CHECKPOINTS, else ../shared/checkpoints (NISQA only). For the whole
suite without the real weights, build real-size random ones first (timing is what counts here):
  avjudge checkpoints make-random --out /tmp/rck --nisqa ../shared/checkpoints/nisqa
  AVJUDGE_CHECKPOINTS=/tmp/rck python benchmarks/metrics_decode.py
"""

import argparse
import os
import tempfile
import time
from pathlib import Path

from avjudge.jsonl import read_jsonl
from avjudge.media import load_clip
from avjudge.metrics import get_metric
from avjudge.scoring import MetricScorer, Scoring
from avjudge.world import MANIFEST, WorldConfig, make_world


def timed(fn, metric, totals: dict):
    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            totals[metric] += time.perf_counter() - t

    return wrapper


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clips", type=int, default=32)
    p.add_argument(
        "--metrics", default="dnsmos,nisqa,nisqa_tts,speech_content,dfarena,audiobox,syncnet,laion_aesthetic"
    )
    args = p.parse_args()
    if "AVJUDGE_CHECKPOINTS" not in os.environ and Path("../shared/checkpoints").is_dir():
        os.environ["AVJUDGE_CHECKPOINTS"] = str(Path("../shared/checkpoints").resolve())
    names = args.metrics.split(",")
    metrics = [get_metric(n) for n in names]  # loaded once for both ways: only decoding differs
    scoring = Scoring([MetricScorer(m) for m in metrics], workers=1)
    with tempfile.TemporaryDirectory() as tmp:
        make_world(WorldConfig(n=args.clips, seed=5, duration=4.0, width=320, height=240), tmp, progress=False)
        records = list(read_jsonl(Path(tmp) / MANIFEST))
        items = [(str(Path(tmp) / r["video"]), r["captions"]) for r in records]
        # warm-up: the first call of each model pays one-off costs that neither way should be charged
        scoring.score([{"video": items[0][0], "captions": items[0][1]}])

        start = time.perf_counter()
        per_metric = 0.0
        for metric in metrics:
            for video, captions in items:
                t = time.perf_counter()
                # what it needs, at its own frame rate
                clip = load_clip(video, metric.needs)
                per_metric += time.perf_counter() - t
                try:
                    metric.compute(clip, captions=captions)
                except Exception:  # noqa: BLE001 - a clip a metric cannot score counts the same in both ways
                    pass
        separate = time.perf_counter() - start

        start = time.perf_counter()
        compute_times = {m: 0.0 for m in metrics}
        for metric in metrics:  # time each metric's share of the shared run
            metric.compute = timed(metric.compute, metric, compute_times)
        for video, captions in items:
            scoring.score([{"video": video, "captions": captions}])
        shared = time.perf_counter() - start
    print(f"{len(items)} clips x {len(metrics)} metrics ({', '.join(names)}), 4 s, 320x240, 2 cores")
    print(f"decoded per metric: {separate:.1f} s ({per_metric:.1f} s of it decoding)")
    print("per metric, decoded once (s):", {m.name: round(t, 1) for m, t in compute_times.items()})
    print(f"decoded once:       {shared:.1f} s")
    print(f"speed-up: {separate / shared:.2f}x")


if __name__ == "__main__":
    main()
