"""Which of the demo's VT caption edits can a judge tell from the frames it is shown? (issue #5)

For each VT negative of a finished demo run (held out unless --split train), whether the frames the VT judge samples
at each --fps show what telling the edit needs (`avjudge.world.decidability`: an event count needs every event of
the object caught, an event's look one of them, the rest is shown from the first frame on). Printed per edited
dimension and per kind of edit: the share that can be told, and the best balanced accuracy a judge that sees only
those frames can reach, (1 + that share) / 2: it accepts every positive and turns away exactly the negatives its
frames contradict. The demo prints the same ceiling beside each VT target it misses (`avjudge.demo`).

Usage: python benchmarks/vt_decidability.py OUT [--split test] [--fps 2 4 8]
(OUT: an `avjudge demo` output folder; default --fps: the demo VT judge's, from train_configs/tiny_world_vt.yaml;
a second or so)
"""
import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np

from avjudge.config import load_config
from avjudge.data import load_pairs
from avjudge.demo import TRAIN_CONFIGS, caption_edits_told
from avjudge.jsonl import read_jsonl
from avjudge.train import TrainConfig
from avjudge.world import MANIFEST


def told_shares(rows: list[tuple[str, str, bool]], key) -> dict[str, tuple[int, float]]:
    """group -> (negatives, share the frames tell); ``key(dimension, kind)`` names a row's group."""
    groups = defaultdict(list)
    for dimension, kind, told in rows:
        groups[key(dimension, kind)].append(told)
    return {name: (len(told), float(np.mean(told))) for name, told in sorted(groups.items())}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path, help="an `avjudge demo` output folder")
    p.add_argument("--split", default="test", help="which pairs: test (held out, the demo's table) or train")
    p.add_argument("--fps", type=float, nargs="+", help="judge frame rates to compare (default: the demo VT judge's)")
    args = p.parse_args()
    rates = args.fps or [load_config(TrainConfig, TRAIN_CONFIGS["vt"]).fps]
    world = {record["id"]: record for record in read_jsonl(args.out / "world" / MANIFEST)}
    records = load_pairs(args.out / "pairs", "vt", args.split)
    rows = {fps: caption_edits_told(records, world, fps) for fps in rates}
    header = "".join(f"{f'{fps:g} fps: told / ceiling':>26}" for fps in rates)
    for title, key in (("dimension", lambda dimension, kind: dimension),
                       ("dimension / kind of edit", lambda dimension, kind: f"{dimension} / {kind}")):
        table = {fps: told_shares(rows[fps], key) for fps in rates}
        print(f"\n{title:<48}{'n':>5}{header}")
        for name, (n, _) in table[rates[0]].items():
            print(f"{name:<48}{n:>5}" + "".join(f"{table[fps][name][1]:>18.2f} / {(1 + table[fps][name][1]) / 2:.2f}"
                                                for fps in rates))


if __name__ == "__main__":
    main()
