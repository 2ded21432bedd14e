"""Do `avjudge bench align`'s intervals cover the truth? A seeded simulation of clustered human votes.

Each simulated study has P prompts, one pair of models a prompt (the metric prefers the first on each) and V votes a
pair; each prompt's people prefer the first model with their own probability, drawn from a Beta around ``mean``
(``concentration``: how much prompts differ). The 2AFC accuracy to estimate is then ``mean``. For each resampling
unit (prompts, each with all its votes; or single votes) it prints the share of studies whose 95 % interval covers
``mean`` and the intervals' mean width.

    python benchmarks/align_coverage.py                          # 100 studies each of 20 x 15 and 30 x 10, ~1 min
    python benchmarks/align_coverage.py --sizes 20x15 --runs 60 --draws 150
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from avjudge.bench.align import Judgment, align


def clustered_votes(rng: np.random.Generator, prompts: int = 20, votes: int = 15, mean: float = 0.7,
                    concentration: float = 2.0) -> tuple[list[Judgment], dict]:  # fmt: skip
    """One simulated study: its judgments and the per-sample scores `align` reads."""
    agree = rng.beta(mean * concentration, (1 - mean) * concentration, prompts)
    judgments = [
        Judgment(f"p{k}", "m1", "m2", "av", "A" if rng.random() < agree[k] else "B")
        for k in range(prompts)
        for _ in range(votes)
    ]
    scores = {(m, f"p{k}"): {"av": s} for k in range(prompts) for m, s in (("m1", 1.0), ("m2", 0.0))}
    return judgments, scores


def coverage(prompts: int, votes: int, runs: int, draws: int, seed: int = 0, mean: float = 0.7) -> dict:
    """Per resampling unit: the share of ``runs`` studies whose 2AFC interval covers ``mean``, and its mean width."""
    rng = np.random.default_rng(seed)
    covered = {"prompt": 0, "judgment": 0}
    widths: dict[str, list[float]] = {"prompt": [], "judgment": []}
    for _ in range(runs):
        judgments, scores = clustered_votes(rng, prompts, votes, mean)
        for unit in covered:
            low, high = align(judgments, scores, bootstrap=draws, seed=1, resample=unit)["av"]["accuracy_2afc_ci95"]
            covered[unit] += low <= mean <= high
            widths[unit].append(high - low)
    return {unit: {"coverage": covered[unit] / runs, "mean_width": float(np.mean(widths[unit]))} for unit in covered}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="20x15,30x10", help="prompts x votes a prompt, comma-separated")
    p.add_argument("--runs", type=int, default=100, help="simulated studies per size")
    p.add_argument("--draws", type=int, default=300, help="bootstrap draws per interval")
    args = p.parse_args()
    results = {}
    for size in args.sizes.split(","):
        prompts, votes = (int(n) for n in size.split("x"))
        results[size] = coverage(prompts, votes, args.runs, args.draws)
        print(size, json.dumps(results[size]), flush=True)


if __name__ == "__main__":
    main()
