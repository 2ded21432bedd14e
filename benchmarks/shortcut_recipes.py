"""The paper's silence-padded shifts against the shortcut-free recipe, each trained the demo's way and audited.

One demo-sized world (240 clips of 5 s); from it two AV pair datasets of the demo's size: `world_demo` as shipped
(every pair a 3 s window of its source, shifts cut from inside it) and the same recipe the paper's way (whole clips,
shifts padded with silence). For each: the pairs' shortcut audit (audio and picture alone, held out), the tiny AV judge
trained as the demo trains it, its held-out balanced accuracy per negative type, and its judge card's reward audit on
held-out source clips (share of clips whose variant scores above the source), untrained and trained.

Usage: python benchmarks/shortcut_recipes.py --out /tmp/shortcut_recipes [--clips 240] [--audit-clips 40]
Prints a Markdown table per measure; writes OUT/shortcut_recipes.json. About 20 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

from avjudge.data import build_dataset, load_recipe
from avjudge.data.shortcuts import judge_audit
from avjudge.demo import DemoSize
from avjudge.demo.run import demo_config
from avjudge.judges.tiny import make_tiny_judges
from avjudge.rewards.card import card_of_run
from avjudge.stats import printed
from avjudge.train import run_training
from avjudge.world import MANIFEST, make_world

RECIPES = {
    "paper (whole clips, silence-padded shifts)": [
        "judges.av.crop=false",
        "judges.av.strategy_params={time_shift_medium: {shift_s: [1.0, 2.0], fill: silence}, "
        "time_shift_micro: {fill: silence}}",
    ],
    "shortcut-free (world_demo: 3 s windows, cut shifts)": [],
}
VARIANTS = ("shifted_sound", "window_shifted_sound", "looped_first_second", "silence", "other_sound", "in_sync_mute")


def run(name: str, overrides: list[str], world: Path, out: Path, size: DemoSize, checkpoints, audit_clips: int) -> dict:
    recipe, source = load_recipe("world_demo", [f"source={world / MANIFEST}", *overrides])
    recipe = dataclasses.replace(recipe, judges={"av": dataclasses.replace(recipe.judges["av"], pairs=size.pairs)})
    build_dataset(recipe, source, out / "pairs", progress=False)
    shortcuts = judge_audit(out / "pairs", "av", workers=2)
    start = time.perf_counter()
    config = demo_config("av", checkpoints, out / "pairs", out / "train", size)
    summary = run_training(config)
    seconds = time.perf_counter() - start
    card = card_of_run(config, summary, clips=audit_clips)
    return {"recipe": name, "shortcuts": shortcuts, "summary": summary, "card": card, "train_seconds": seconds}


def tables(results: list[dict]) -> str:
    names = [r["recipe"] for r in results]
    head = "| {} | " + " | ".join(names) + " |\n|---|" + "---|" * len(names) + "\n"
    kinds = sorted(results[0]["summary"]["eval_after"]["per_type"])
    text = "Held-out balanced accuracy after training (untrained -> trained):\n\n" + head.format("negative type")
    for kind in kinds:
        cells = []
        for r in results:
            before = r["summary"]["eval_before"]["per_type"][kind]["balanced_accuracy"]
            after = r["summary"]["eval_after"]["per_type"][kind]["balanced_accuracy"]
            cells.append(f"{printed(before, 2)} -> {printed(after, 2)}")
        text += f"| {kind} | " + " | ".join(cells) + " |\n"
    text += "\nShortcut audit of the pairs, held-out AUROC of the audio alone / the picture alone:\n\n"
    text += head.format("negative type")
    for kind in kinds:
        cells = [
            f"{printed(r['shortcuts']['audio']['per_type'][kind], 2)} / "
            f"{printed(r['shortcuts']['video']['per_type'][kind], 2)}"
            + (" LEAK" if kind in r["shortcuts"]["leaks"] else "")
            for r in results
        ]
        text += f"| {kind} | " + " | ".join(cells) + " |\n"
    clips = results[0]["card"]["reward_audit"]["clips"]
    text += (
        f"\nReward audit on {clips} held-out source clips, share scoring above the source (untrained -> trained):\n\n"
    )
    text += head.format("variant")
    for variant in VARIANTS:
        cells = []
        for r in results:
            audited = r["card"]["reward_audit"]
            before, after = (audited[when][variant]["reward"]["share"] for when in ("before", "after"))
            cells.append(f"{printed(before, 2)} -> {printed(after, 2)}")
        text += f"| {variant} | " + " | ".join(cells) + " |\n"
    return text


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--clips", type=int, default=DemoSize.clips)
    p.add_argument("--pairs", type=int, default=DemoSize.pairs, help="AV pairs (a smaller run to try the script)")
    p.add_argument("--epochs", type=float, help="training epochs (default: the demo's AV judge's)")
    p.add_argument("--audit-clips", type=int, default=40)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    size = DemoSize().scaled(clips=args.clips, pairs=args.pairs, epochs=args.epochs)
    checkpoints = make_tiny_judges(args.out / "judges")
    make_world(size.world(args.seed), args.out / "world", progress=False)
    results = [
        run(name, overrides, args.out / "world", args.out / f"run{k}", size, checkpoints, args.audit_clips)
        for k, (name, overrides) in enumerate(RECIPES.items())
    ]
    (args.out / "shortcut_recipes.json").write_text(json.dumps(results, indent=1, default=str))
    print(tables(results))


if __name__ == "__main__":
    main()
