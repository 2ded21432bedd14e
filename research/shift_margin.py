"""Why a trained AV judge reads 1-2 s shifts less well than 0.2-1 s ones (#80): how far each held-out shift moves the
world's sounding events off their pictures, at the judge's own grid, against how well the judge tells it apart.

For each held-out shift negative of a demo run, from the world's ground truth (`avjudge.data.perceivability`): per
visual token group of the pair's window, does a sampled frame show a sounding event, and does the negative's sound
(its events moved by the shift) overlap the group; the **margin** is the share of groups where the two disagree,
less the share where the picture and its own sound disagree. A margin near 0 is a shift that lands the clip's sounds
on other events of the same clip: at the grid, that negative looks in sync. Printed per shift type and per margin
band: pairs, mean |shift|, mean margin, and the judge's held-out AUROC of those negatives against every held-out
positive (its last evaluation's scores).

Usage: python -m research.shift_margin DEMO_OUT [--bands 0,0.15,0.3,1]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from avjudge.data import load_pairs
from avjudge.data.build import built_sources
from avjudge.data.perceivability import Event, grid_patterns, scene_events
from avjudge.judges.judge import checkpoint_sampling
from avjudge.stats import auroc

SHIFTS = ("time_shift_micro", "time_shift_medium")


def margin(sampling, start: float, duration: float, events: list[Event], shift_s: float) -> float:
    """The share of the window's token groups where the picture and the sound moved by ``shift_s`` disagree, less
    the share where the picture and its own sound do."""
    moved = [Event(e.start + shift_s, e.end + shift_s) for e in events]
    picture, own = grid_patterns(sampling, start, duration, events, events)
    _, shifted = grid_patterns(sampling, start, duration, events, moved)
    return float(np.mean(picture != shifted) - np.mean(picture != own))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("demo_out", type=Path, help="a folder `avjudge demo` wrote")
    p.add_argument("--bands", default="0,0.15,0.3,1", help="margin band edges")
    args = p.parse_args()
    pairs, checkpoint = args.demo_out / "pairs", args.demo_out / "train" / "av" / "final"
    sampling = checkpoint_sampling("av", checkpoint)
    evaluations = sorted((args.demo_out / "train" / "av" / "eval").glob("step_*.json"))
    scores = json.loads(evaluations[-1].read_text())["scores"]
    sources = {s["id"]: s for s in built_sources(pairs)}
    records = [r for r in load_pairs(pairs, "av", "test") if r["id"] in scores]
    positives = [scores[r["id"]] for r in records if r["label"] == 1]
    rows = []
    for r in records:
        if r["label"] == 0 and r["negative_type"] in SHIFTS:
            events = scene_events(sources[r["source_id"]])
            window = r["window"]
            m = margin(sampling, window["start_s"], window["duration_s"], events, r["params"]["shift_s"])
            rows.append((r["negative_type"], abs(r["params"]["shift_s"]), m, scores[r["id"]]))
    edges = [float(e) for e in args.bands.split(",")]
    print(f"{sampling.describe()}; {len(positives)} held-out positives; last evaluation {evaluations[-1].name}")
    print(f"{'negatives':<34}{'pairs':>6}{'|shift| s':>11}{'margin':>8}{'AUROC':>8}")

    def line(name: str, chosen: list) -> None:
        if not chosen:
            return
        area = auroc(np.array(positives + [c[3] for c in chosen]), np.array([1] * len(positives) + [0] * len(chosen)))
        print(f"{name:<34}{len(chosen):>6}{np.mean([c[1] for c in chosen]):>11.2f}"
              f"{np.mean([c[2] for c in chosen]):>8.2f}{area:>8.3f}")  # fmt: skip

    for kind in SHIFTS:
        of_kind = [row for row in rows if row[0] == kind]
        line(kind, of_kind)
        for low, high in zip(edges, edges[1:]):
            line(f"  margin {low:g} to {high:g}", [row for row in of_kind if low <= row[2] < high])
    for low, high in zip(edges, edges[1:]):
        line(f"both, margin {low:g} to {high:g}", [row for row in rows if low <= row[2] < high])


if __name__ == "__main__":
    main()
