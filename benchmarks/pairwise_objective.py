"""The single-token SFT objective against the pairwise one (``objective: bt``) on the same pairs, in one run.

One world (--clips clips of the demo's kind); from it the AV pairs of `world_demo` as shipped (3 s windows, shifts cut
from inside them) and, beside them, the AVBench paper's way (whole clips, shifts padded with silence). Each pair set's
shortcut audit (the audio and the picture alone, held out) is printed beside what the tiny AV judge learns from it,
trained --steps steps with each objective from the same random judge: held-out pairwise accuracy (the share of
(positive, negative) pairs of one source ordered rightly), AUROC, and each negative type's AUROC.

Usage: python benchmarks/pairwise_objective.py [--clips 48] [--steps 120] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time
from pathlib import Path

from avjudge.config import load_config
from avjudge.data import build_dataset, load_recipe
from avjudge.data.shortcuts import judge_audit
from avjudge.demo import TRAIN_CONFIGS, DemoSize
from avjudge.judges.tiny import make_tiny_judges
from avjudge.stats import printed
from avjudge.train import TrainConfig, run_training
from avjudge.world import MANIFEST, make_world

RECIPES = {
    "shipped (3 s windows, cut shifts)": [],
    "paper (whole clips, silence-padded shifts)": [
        "judges.av.crop=false",
        "judges.av.strategy_params={time_shift_medium: {shift_s: [1.0, 2.0], fill: silence}, "
        "time_shift_micro: {fill: silence}}",
    ],
}
OBJECTIVES = ("sft", "bt")


def pairs(world: Path, out: Path, overrides: list[str], count: int) -> dict:
    """Build the AV pairs; their shortcut audit."""
    recipe, source = load_recipe("world_demo", [f"source={world / MANIFEST}", *overrides])
    av = dataclasses.replace(recipe.judges["av"], pairs=count)
    build_dataset(dataclasses.replace(recipe, judges={"av": av}), source, out, progress=False)
    return judge_audit(out, "av", workers=2)


def train(model: Path, dataset: Path, out: Path, objective: str, steps: int) -> dict:
    overrides = [f"model={model}", f"dataset={dataset}", f"output_dir={out}", f"objective={objective}"]
    overrides += [f"max_steps={steps}", "eval_steps=100000", "save_steps=100000", "report_to=[]"]
    start = time.perf_counter()
    summary = run_training(load_config(TrainConfig, TRAIN_CONFIGS["av"], overrides))
    return {"seconds": time.perf_counter() - start, "before": summary["eval_before"], "after": summary["eval_after"]}


def one_side(audit: dict) -> str:
    """Each negative type's held-out AUROC from each side alone, and the leaks the audit names."""
    sides = [side for side in audit if isinstance(audit[side], dict) and "per_type" in audit[side]]
    kinds = sorted(audit[sides[0]]["per_type"])
    told = "; ".join(
        f"{kind}: " + ", ".join(f"{side} {audit[side]['per_type'][kind]:.2f}" for side in sides) for kind in kinds
    )
    return f"{told} (named leaks, which take 20 held-out negatives of a type: {', '.join(audit['leaks']) or 'none'})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=48)
    parser.add_argument("--pairs", type=int, default=384)
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--out", type=Path, help="also write the figures here as JSON")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        make_world(DemoSize().world(seed=5, clips=args.clips), tmp / "world", progress=False)
        model = make_tiny_judges(tmp / "tiny")["qwen2_5_omni"]
        for k, (name, overrides) in enumerate(RECIPES.items()):
            dataset = tmp / f"pairs{k}"
            audit = pairs(tmp / "world", dataset, overrides, args.pairs)
            runs = {o: train(model, dataset, tmp / f"run{k}_{o}", o, args.steps) for o in OBJECTIVES}
            results[name] = {"audit": audit, "runs": runs}
    print(f"{args.clips} clips, {args.pairs} AV pairs a recipe, {args.steps} steps an objective, 2 cores")
    for name, result in results.items():
        print(f"\n{name}; the pairs' audit, one side alone (held-out AUROC): {one_side(result['audit'])}")
        print("| objective | pairwise accuracy | AUROC | " + " | ".join(_kinds(result)) + " | seconds |")
        print("|---|---|---|" + "---|" * len(_kinds(result)) + "---|")
        for objective, run in result["runs"].items():
            before, after = run["before"], run["after"]
            change = {
                key: f"{printed(before['overall'][key], 2)} -> {printed(after['overall'][key], 2)}"
                for key in ("pairwise_accuracy", "auroc")
            }
            cells = [
                change["pairwise_accuracy"],
                change["auroc"],
                *[printed(after["per_type"][kind]["auroc"], 2) for kind in _kinds(result)],
                f"{run['seconds']:.0f}",
            ]
            print(f"| {objective} | " + " | ".join(cells) + " |")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2, default=str))


def _kinds(result: dict) -> list[str]:
    return sorted(next(iter(result["runs"].values()))["after"]["per_type"])


if __name__ == "__main__":
    main()
