"""Which random mismatches does a trained demo AV judge turn away, and which positives does it accept? (issue #5)

In the demo world every clip has its place's ambience (hum or babble indoors, rain or wind outdoors), so another
clip's audio from the other place gives itself away by an ambience the picture's place cannot have
(`avjudge.world.decidability.ambience_gives_away`, which the demo's random-mismatch line also reads); a partner from
the same place can only be told by the objects: which notes (colours) and timbres (shapes) sound, and when. This
scores a finished demo run's held-out AV pairs with its trained judge (OUT/train/av/final, or --checkpoint) and
prints, at the demo's threshold 0.5 and as AUROC against the held-out positives, the random mismatches of each kind
apart; and the share of positives accepted, held out and from training (one per clip, at most --train-positives): a
judge that accepts its training clips and turns away unseen ones has memorised them, and every negative type's
balanced accuracy pays for it.

Usage: python -m research.mismatch_places OUT [--checkpoint DIR] [--train-positives 300]
(OUT: an `avjudge demo` output folder; about 1 min on 2 CPU cores)
"""

import argparse
import json
from pathlib import Path

import numpy as np

from avjudge.data import PairDataset, load_manifest, load_pairs
from avjudge.jsonl import read_jsonl
from avjudge.judges import Judge
from avjudge.perturb import SourcePool
from avjudge.stats import auroc, printed
from avjudge.train.trainer import prepared_pairs
from avjudge.world import MANIFEST
from research.decidability import ambience_gives_away


def mismatch_groups(records: list[dict], scenes: dict[str, dict]) -> dict[str, list[int]]:
    """Positions in ``records`` (AV pairs) of the positives and of the random mismatches whose audio brings an
    ambience the picture's place can have and one it cannot; ``scenes``: clip id -> its world scene."""
    groups = {
        "positives": [],
        "random mismatch, ambience fits the place": [],
        "random mismatch, ambience the place cannot have": [],
    }
    for i, record in enumerate(records):
        if record["label"] == 1:
            groups["positives"].append(i)
        elif record["strategy"] == "random_mismatch":
            given_away = ambience_gives_away(scenes[record["source_id"]], scenes[record["params"]["source"]])
            groups[
                f"random mismatch, {'ambience the place cannot have' if given_away else 'ambience fits the place'}"
            ].append(i)
    return groups


def scores(judge: Judge, records: list[dict], pool: SourcePool, pairs: Path) -> np.ndarray:
    dataset = PairDataset(records, pool, judge.settings.sample_rate, judge.settings.fps, pairs)
    return np.array([result.score for result in judge.score_prepared(prepared_pairs(judge, dataset))])


def one_positive_per_clip(records: list[dict], limit: int) -> list[dict]:
    """The first positive pair of each clip in ``records``, at most ``limit`` (a clip's positives are one input)."""
    firsts = {}
    for record in records:
        if record["label"] == 1:
            firsts.setdefault(record["source_id"], record)
    return list(firsts.values())[:limit]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path, help="an `avjudge demo` output folder")
    p.add_argument("--checkpoint", type=Path, help="the judge to score with (default OUT/train/av/final)")
    p.add_argument("--train-positives", type=int, default=300, help="training clips whose positive is scored")
    args = p.parse_args()
    pairs = args.out / "pairs"
    judge = Judge.load("av", args.checkpoint or args.out / "train" / "av" / "final")
    pool = SourcePool(load_manifest(json.loads((pairs / "stats.json").read_text())["manifest"]))
    scenes = {record["id"]: record["scene"] for record in read_jsonl(args.out / "world" / MANIFEST)}
    held_out = load_pairs(pairs, "av", "test")
    held_out_scores = scores(judge, held_out, pool, pairs)
    groups = mismatch_groups(held_out, scenes)
    positives = held_out_scores[groups.pop("positives")]
    print(f"{'held-out positives':<48} n {len(positives):>4}  accepted {np.mean(positives >= 0.5):.3f}")
    training = one_positive_per_clip(load_pairs(pairs, "av", "train"), args.train_positives)
    print(
        f"{'training positives':<48} n {len(training):>4}  accepted "
        f"{np.mean(scores(judge, training, pool, pairs) >= 0.5):.3f}"
    )
    for name, where in groups.items():
        negatives = held_out_scores[where]
        turned_away = float(np.mean(negatives < 0.5)) if len(negatives) else None  # a quick world may have none
        value = auroc(np.r_[positives, negatives], np.r_[np.ones(len(positives)), np.zeros(len(negatives))])
        print(
            f"{name:<48} n {len(negatives):>4}  turned away {printed(turned_away, 3, 'n/a')}  "
            f"AUROC against the positives {printed(value, 3, 'n/a')}"
        )


if __name__ == "__main__":
    main()
