"""`avjudge filter` on a local Ray cluster against the local engine, with an actor killed mid-run.

Makes --clips world clips (--corrupt of them truncated or not media), then filters them on the tiny AV judge and
DNSMOS (real weights) twice: in this process, and on `ray.init(num_cpus=--cpus)` with --actors actors of
--cpus-per-actor CPUs, one of which dies (``os._exit``) the first time it meets a chosen clip. Actors of one CPU
decode their own clips (Ray Data fuses the stages); of less, they leave decoding to CPU tasks beside them.
Checks and prints: every id written once, the corrupt clips failed with errors, the largest score difference
between the two runs, the kept / dropped / failed manifests (the same clips in the same order, dropped by the
same rules), and each run's time.

Usage: python benchmarks/ray_engine.py [--clips 200] [--corrupt 5] [--actors 2] [--cpus-per-actor 1] [--cpus 2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from avjudge.filter import parse_rules, run_filter
from avjudge.jsonl import read_jsonl
from avjudge.judges.tiny import make_tiny_judges
from avjudge.runtime import make_engine
from avjudge.scoring.clip_scorer import ClipScorer
from avjudge.scoring.dimensions import parse_dimensions
from avjudge.world import MANIFEST, WorldConfig, make_world

RULES = "av>=0.5,dnsmos>=2.0"


class CrashingScorer(ClipScorer):
    """The scorer whose process dies the first time it meets ``victim`` (a marker file remembers it did)."""

    def __init__(self, *args, marker: Path, victim: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.marker, self.victim = marker, victim

    def job(self, record):
        def crashing(item: dict, scored: dict) -> dict:
            if item["id"] == self.victim and not self.marker.exists():
                self.marker.touch()
                os._exit(1)
            return record(item, scored)

        return super().job(crashing)


def _world(folder: Path, clips: int, corrupt: int) -> Path:
    make_world(WorldConfig(n=clips, seed=7, duration=1.0, max_duration=1.0, width=64, height=64), folder, False)
    records = list(read_jsonl(folder / MANIFEST))
    for k, record in enumerate(records[3 :: max(1, len(records) // corrupt)][:corrupt]):
        path = folder / record["video"]
        path.write_bytes(path.read_bytes()[:900] if k % 2 else b"not a video")
    return folder / MANIFEST


def _verdicts(path: Path) -> list[tuple]:
    return [(r["id"], r.get("dropped_by"), bool(r.get("failed_because"))) for r in read_jsonl(path)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=200)
    parser.add_argument("--corrupt", type=int, default=5)
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--cpus-per-actor", type=float, default=1.0)
    parser.add_argument("--cpus", type=int, default=2)
    args = parser.parse_args()
    import ray

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        manifest = _world(tmp / "world", args.clips, args.corrupt)
        judges = {"av": make_tiny_judges(tmp / "tiny")["qwen2_5_omni"]}
        dims, rules = parse_dimensions("av,dnsmos"), parse_rules(RULES)

        start = time.perf_counter()
        run_filter(manifest, rules, tmp / "local", ClipScorer(dims, judges), progress=False)
        local_s = time.perf_counter() - start

        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
        victim = json.loads(manifest.read_text().splitlines()[len(manifest.read_text().splitlines()) // 2])["id"]
        scorer = CrashingScorer(dims, judges, marker=tmp / "crashed", victim=victim)
        start = time.perf_counter()
        engine = make_engine("ray", actors=args.actors, cpus_per_actor=args.cpus_per_actor)
        run_filter(manifest, rules, tmp / "ray", scorer, progress=False, engine=engine)
        ray_s = time.perf_counter() - start
        ray.shutdown()

        local = {r["id"]: r for r in read_jsonl(tmp / "local" / "scores.jsonl")}
        on_ray = list(read_jsonl(tmp / "ray" / "scores.jsonl"))
        ids = [r["id"] for r in on_ray]
        differences = [
            abs(value - local[r["id"]]["scores"][name])
            for r in on_ray
            for name, value in (r.get("scores") or {}).items()
        ]
        same = {  # the same clips in each manifest, in the same order, dropped by the same rules
            name: _verdicts(tmp / "ray" / f"{name}.jsonl") == _verdicts(tmp / "local" / f"{name}.jsonl")
            for name in ("kept", "dropped", "failed")
        }
        counts = {name: sum(1 for _ in read_jsonl(tmp / "ray" / f"{name}.jsonl")) for name in same}
        failed = sum(1 for r in on_ray if r.get("error"))
        pool = f"{args.actors} actors of {args.cpus_per_actor:g} CPU"
        print(f"{args.clips} clips ({args.corrupt} corrupt), rules {RULES}, {args.cpus} CPUs, {pool}")
        crashed = (tmp / "crashed").exists()
        print(f"an actor died at {victim}: {crashed}")
        print(f"ids written: {len(ids)}, distinct {len(set(ids))}; clips with a decode error: {failed}")
        print(f"largest score difference, Ray vs local: {max(differences):.2e} over {len(differences)} scores")
        print(f"kept / dropped / failed: {counts}; identical to the local run: {same}")
        print(f"time: local {local_s:.1f} s, Ray {ray_s:.1f} s ({local_s / ray_s:.2f}x)")
        ok = crashed and len(ids) == len(set(ids)) == args.clips and failed == args.corrupt and all(same.values())
        sys.exit(0 if ok and max(differences) <= 1e-6 else 1)


if __name__ == "__main__":
    main()
