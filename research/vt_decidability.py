"""Which of the demo's VT caption edits can a judge tell from the frames it is shown? (issue #5)

For each VT negative of a finished demo run (held out unless --split train), whether the frames the VT judge samples
at each --fps show what telling the edit needs (`avjudge.world.decidability`: an event count needs every event of
the object caught, an event's look one of them, the rest is shown from the first frame on). Printed per edited
dimension and per kind of edit: the share that can be told, and the best balanced accuracy a judge that sees only
those frames can reach, (1 + that share) / 2: it accepts every positive and turns away exactly the negatives its
frames contradict; beside them, what the caption's words alone give away (AUROC of `avjudge data audit`'s
text-only classifier, fitted on the training pairs: a kind far above 0.5 can be learned without looking). The demo
prints the same ceiling beside each VT target it misses (`research/demo_targets.py`).

Usage: python -m research.vt_decidability OUT [--split test] [--fps 2 4 8]
(OUT: an `avjudge demo` output folder; default --fps: the demo VT judge's, from the shipped tiny_world_vt config;
a second or so)
"""

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np

from avjudge.config import load_config
from avjudge.data import load_pairs
from avjudge.data.audit import text_only_held_out
from avjudge.demo import TRAIN_CONFIGS
from avjudge.jsonl import read_jsonl
from avjudge.stats import auroc, per_negative_type, printed
from avjudge.train import TrainConfig
from avjudge.world import MANIFEST
from research.demo_targets import caption_edits_told


def told_shares(rows: list[tuple[str, str, bool]], key) -> dict[str, tuple[int, float]]:
    """group -> (negatives, share the frames tell); ``key(dimension, kind)`` names a row's group."""
    groups = defaultdict(list)
    for dimension, kind, told in rows:
        groups[key(dimension, kind)].append(told)
    return {name: (len(told), float(np.mean(told))) for name, told in sorted(groups.items())}


def text_alone(records: list[dict], scores: np.ndarray, rows: list[tuple[str, str, bool]], key) -> dict[str, float]:
    """group -> AUROC of the text-only ``scores`` of ``records`` on that group's negatives against every positive;
    ``rows``: `caption_edits_told` of ``records`` (one per negative, in order)."""
    groups = iter(key(dimension, kind) for dimension, kind, _ in rows)
    names = [next(groups) if record["label"] == 0 else "positive" for record in records]
    return per_negative_type(scores, [record["label"] for record in records], names, auroc)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path, help="an `avjudge demo` output folder")
    p.add_argument("--split", default="test", help="which pairs: test (held out, the demo's table) or train")
    p.add_argument("--fps", type=float, nargs="+", help="judge frame rates to compare (default: the demo VT judge's)")
    args = p.parse_args()
    rates = args.fps or [load_config(TrainConfig, TRAIN_CONFIGS["vt"]).fps]
    world = {record["id"]: record for record in read_jsonl(args.out / "world" / MANIFEST)}
    if args.split == "train":  # the text-only classifier is fitted on these pairs: its reading of them tells nothing
        records, scores = load_pairs(args.out / "pairs", "vt", "train"), None
    else:
        records, scores = text_only_held_out(args.out / "pairs", "vt", "train", args.split)
    rows = {fps: caption_edits_told(records, world, fps) for fps in rates}
    header = "".join(f"{f'{fps:g} fps: told / ceiling':>26}" for fps in rates) + f"{'text alone':>12}"
    for title, key in (
        ("dimension", lambda dimension, kind: dimension),
        ("dimension / kind of edit", lambda dimension, kind: f"{dimension} / {kind}"),
    ):
        table = {fps: told_shares(rows[fps], key) for fps in rates}
        leak = {} if scores is None else text_alone(records, scores, rows[rates[0]], key)
        print(f"\n{title:<48}{'n':>5}{header}")
        for name, (n, _) in table[rates[0]].items():
            print(
                f"{name:<48}{n:>5}"
                + "".join(f"{table[fps][name][1]:>18.2f} / {(1 + table[fps][name][1]) / 2:.2f}" for fps in rates)
                + f"{printed(leak.get(name), 2, 'n/a'):>12}"
            )


if __name__ == "__main__":
    main()
