"""The avjudge filter inside the curation engines against `avjudge filter` itself, on the same clips in one run:
world clips (--clips, 2 s), the tiny AV judge and DNSMOS (real weights), thresholds at each dimension's median.
Runs `avjudge filter` (this process), data-juicer's default executor and its Ray executor (`avjudge_filter` through
`dj-process`), and NeMo Curator's pipeline on its Ray Data executor (`AvjudgeFilterStage`); prints each one's clips
per second, its ratio to `avjudge filter`, and whether it kept the same clips. Needs the datajuicer and curator
extras.

Usage: python benchmarks/curation_engines.py [--clips 60] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from avjudge.filter import Rule, run_filter
from avjudge.jsonl import read_jsonl
from avjudge.judges.tiny import make_tiny_judges
from avjudge.scoring.clip_scorer import ClipScorer
from avjudge.scoring.dimensions import parse_dimensions
from avjudge.world import MANIFEST, WorldConfig, make_world

DIMENSIONS = "av,dnsmos"


def avjudge_filter(manifest: Path, out: Path, judge: str, minimum: dict | None) -> tuple[list[str], dict]:
    scorer = ClipScorer(parse_dimensions(DIMENSIONS), {"av": Path(judge)}, {"device": "cpu"})
    rules = [Rule(d, ">=", v) for d, v in (minimum or {"av": -1.0, "dnsmos": -1.0}).items()]
    run_filter(manifest, rules, out, scorer, progress=False)
    scores = {r["id"]: r.get("scores") or {} for r in read_jsonl(out / "scores.jsonl")}
    return [r["id"] for r in read_jsonl(out / "kept.jsonl")], scores


def data_juicer(records: list[dict], work: Path, judge: str, minimum: dict, ray: bool) -> list[tuple[dict, dict]]:
    """data-juicer's own `dj-process` with the `avjudge_filter` step: each kept sample with its statistics."""
    work.mkdir(parents=True, exist_ok=True)
    dataset = work / "dataset.jsonl"
    dataset.write_text("".join(json.dumps({"id": r["id"], "videos": [r["video"]], "text": ""}) + "\n" for r in records))
    recipe = {
        "project_name": "avjudge", "dataset_path": str(dataset), "export_path": str(work / "out" / "kept.jsonl"),
        "np": 1, "open_tracer": True, **({"executor_type": "ray", "ray_address": "local"} if ray else {}),
        "process": [{"avjudge_filter": {"dimensions": DIMENSIONS, "judges": {"av": judge}, "min": minimum,
                                        "device": "cpu"}}],
    }  # fmt: skip
    (work / "recipe.yaml").write_text(json.dumps(recipe))  # YAML reads JSON
    command = [str(Path(sys.executable).with_name("dj-process")), "--config", str(work / "recipe.yaml")]
    run = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if run.returncode:
        raise RuntimeError(f"dj-process failed: {run.stderr[-3000:]}")
    out = work / "out" / "kept.jsonl"
    if out.is_file():  # the default executor: the samples, and their statistics beside them line by line
        kept = [json.loads(line) for line in out.read_text().splitlines()]
        stats = [
            json.loads(line)["__dj__stats__"] for line in out.with_name("kept_stats.jsonl").read_text().splitlines()
        ]
        return list(zip(kept, stats))
    kept = [json.loads(line) for path in sorted(out.glob("*.json")) for line in path.read_text().splitlines()]
    return [(sample, sample["__dj__stats__"]) for sample in kept]  # Ray's: each sample with its statistics


def nemo_curator(records: list[dict], judge: str, minimum: dict) -> list:
    """NeMo Curator's own pipeline runner (its Ray Data executor) with `AvjudgeFilterStage`: the tasks it returns."""
    from nemo_curator.backends.ray_data import RayDataExecutor
    from nemo_curator.pipeline import Pipeline
    from nemo_curator.tasks.video import Clip, Video, VideoTask

    from avjudge.integrations.nemo_curator import AvjudgeFilterStage

    tasks = [VideoTask(dataset_name="world", data=Video(input_video=Path(r["video"]), clips=[
        Clip(uuid=uuid.uuid5(uuid.NAMESPACE_URL, r["id"]), source_video=r["id"], span=(0.0, 2.0),
             buffer=Path(r["video"]).read_bytes())])) for r in records]  # fmt: skip
    stage = AvjudgeFilterStage(dimensions=DIMENSIONS, judges={"av": judge}, min=minimum, device="cpu")
    return Pipeline(name="avjudge", stages=[stage]).run(RayDataExecutor(), initial_tasks=tasks)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clips", type=int, default=60)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        make_world(WorldConfig(n=args.clips, seed=3, duration=2.0, width=96, height=96, speech="off"), tmp / "w",
                   progress=False)  # fmt: skip
        records = [json.loads(line) for line in (tmp / "w" / MANIFEST).read_text().splitlines()]
        for r in records:
            r["video"] = str((tmp / "w" / r["video"]).resolve())
        manifest = tmp / "clips.jsonl"
        manifest.write_text("".join(json.dumps(r) + "\n" for r in records))
        judge = str(make_tiny_judges(tmp / "judges")["qwen2_5_omni"])
        _, scores = avjudge_filter(manifest, tmp / "probe", judge, None)  # the medians, from a first scoring
        minimum = {d: float(np.median([s[d] for s in scores.values() if d in s])) for d in ("av", "dnsmos")}
        runs = {
            "avjudge filter": lambda: avjudge_filter(manifest, tmp / "filter", judge, minimum)[0],
            "data-juicer (default)": lambda: [
                s["id"] for s, _ in data_juicer(records, tmp / "dj", judge, minimum, False)
            ],
            "data-juicer (Ray)": lambda: [
                s["id"] for s, _ in data_juicer(records, tmp / "djray", judge, minimum, True)
            ],
            "NeMo Curator (Ray Data)": lambda: [
                c.source_video for t in nemo_curator(records, judge, minimum) for c in t.data.clips
            ],  # fmt: skip
        }
        report, reference = {"clips": len(records), "engines": {}}, None
        for name, run in runs.items():
            start = time.perf_counter()
            kept = sorted(run())
            seconds = time.perf_counter() - start
            reference = reference if reference is not None else (kept, seconds)
            report["engines"][name] = {"seconds": round(seconds, 1), "clips_per_s": round(len(records) / seconds, 2),
                                       "vs_avjudge_filter": round(reference[1] / seconds, 2),
                                       "same_kept": kept == reference[0], "kept": len(kept)}  # fmt: skip
            print(name, report["engines"][name], flush=True)
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return report


if __name__ == "__main__":
    main()
