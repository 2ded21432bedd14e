"""`avjudge bench align`: how well a benchmark's scores agree with people's pairwise (2AFC) judgments.

Definitions (one judgment: a prompt, models A and B, a dimension, the human's winner A | B | tie):

- The metric's outcome on a judgment compares the two clips' per-sample scores of that dimension on
  that prompt: A when s_A - s_B > eps, B when s_B - s_A > eps, else a tie (eps = 0 unless given;
  lower-is-better dimensions are compared the other way). Judgments where either clip has no score
  are left out of every statistic and counted in ``unscored``.
- WinRatio of a model = (W + 0.5 T) / (W + T + L) over the judgments it appears in, once with the human's
  outcomes and once with the metric's, on the same judgments.
- Pearson, Spearman and Kendall (tau-b) correlations between the human and metric WinRatios across
  models, with percentile bootstrap confidence intervals from resampling judgments with replacement.
- 2AFC accuracy: over judgments where the human chose a winner (human ties left out), the share where the
  metric picks the same one; a metric tie counts one half.
- Tie-aware pairwise accuracy (acc_eq, Deutsch et al. 2023): over all judgments, the share where the
  outcomes agree, a tie agreeing only with a tie; reported at eps and at the eps that maximises it
  (tie calibration).
"""

from __future__ import annotations

import csv
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

from ..jsonl import write_json
from ..scoring.dimensions import DIMENSIONS
from ..stats import finite_number, printed
from .errors import BenchError
from .report import load_results

WINNERS = {"a": "A", "b": "B", "tie": "tie"}
CSV_COLUMNS = ("prompt_id", "model_a", "model_b", "dimension", "winner")


@dataclass(frozen=True)
class Judgment:
    prompt_id: str
    model_a: str
    model_b: str
    dimension: str
    winner: str  # A | B | tie
    annotator: str = ""


def load_judgments(path: str | Path) -> list[Judgment]:
    path = Path(path)
    if not path.is_file():
        raise BenchError(f"{path}: no such judgments file")
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in CSV_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise BenchError(
                f"{path}: columns {missing} are missing; a judgments CSV has {', '.join(CSV_COLUMNS)}, annotator"
            )
        out = []
        for line, row in enumerate(reader, start=2):
            empty = [c for c in CSV_COLUMNS if not (row.get(c) or "").strip()]
            if empty:
                raise BenchError(f"{path}:{line}: no {', '.join(empty)}; each judgment names {', '.join(CSV_COLUMNS)}")
            winner = WINNERS.get(row["winner"].strip().lower())
            if winner is None:
                raise BenchError(f"{path}:{line}: winner must be A, B or tie, got {row['winner']!r}")
            if row["model_a"] == row["model_b"]:
                raise BenchError(f"{path}:{line}: a model compared with itself ({row['model_a']!r})")
            out.append(
                Judgment(
                    row["prompt_id"].strip(),
                    row["model_a"].strip(),
                    row["model_b"].strip(),
                    row["dimension"].strip(),
                    winner,
                    (row.get("annotator") or "").strip(),
                )
            )
    if not out:
        raise BenchError(f"{path}: no judgments")
    return out


def outcome(diff: float, eps: float) -> str:
    """The winner a score difference (oriented so positive favours A) names; within eps, a tie."""
    return "A" if diff > eps else "B" if diff < -eps else "tie"


def win_ratios(pairs: list[tuple[str, str, str]]) -> dict[str, float]:
    """(model_a, model_b, outcome) -> model -> (W + 0.5 T) / (W + T + L)."""
    tally: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])  # points, games
    for a, b, outcome in pairs:
        point_a = {"A": 1.0, "B": 0.0, "tie": 0.5}[outcome]
        tally[a][0] += point_a
        tally[b][0] += 1.0 - point_a
        tally[a][1] += 1
        tally[b][1] += 1
    return {m: points / games for m, (points, games) in sorted(tally.items())}


def _correlations(human: dict[str, float], metric: dict[str, float]) -> dict[str, float | None]:
    models = sorted(human)
    x, y = np.array([metric[m] for m in models]), np.array([human[m] for m in models])
    if len(models) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"pearson": None, "spearman": None, "kendall": None}
    return {
        "pearson": float(stats.pearsonr(x, y)[0]),
        "spearman": float(stats.spearmanr(x, y)[0]),
        "kendall": float(stats.kendalltau(x, y)[0]),
    }


def accuracy_2afc(rows: list[tuple[str, str]]) -> float | None:
    """(human, metric) outcomes -> 2AFC accuracy (human ties left out, metric ties count one half)."""
    decided = [(h, m) for h, m in rows if h != "tie"]
    if not decided:
        return None
    return float(np.mean([1.0 if h == m else 0.5 if m == "tie" else 0.0 for h, m in decided]))


def tie_aware_accuracy(rows: list[tuple[str, float]], eps: float) -> float:
    """(human outcome, metric difference A - B oriented so positive favours A) -> acc_eq at eps."""
    agree = [h == outcome(d, eps) for h, d in rows]
    return float(np.mean(agree))


def tie_calibration(rows: list[tuple[str, float]]) -> tuple[float, float]:
    """The eps (0 or one of the |differences|) that maximises acc_eq, and that accuracy."""
    candidates = sorted({0.0, *(abs(d) for _, d in rows)})
    best = max(candidates, key=lambda e: (tie_aware_accuracy(rows, e), -e))
    return best, tie_aware_accuracy(rows, best)


def align(
    judgments: list[Judgment],
    scores: dict[tuple[str, str], dict[str, float]],
    eps: float = 0.0,
    bootstrap: int = 1000,
    seed: int = 0,
) -> dict:
    """Per dimension: win ratios, correlations with bootstrap CIs, 2AFC and tie-aware accuracy.

    ``scores``: (model, prompt id) -> dimension -> score (the bench run's per-sample scores).
    """
    by_dim: dict[str, list[Judgment]] = defaultdict(list)
    for j in judgments:
        by_dim[j.dimension].append(j)
    rng = np.random.default_rng(seed)
    results = {}
    for dim, items in sorted(by_dim.items()):
        higher = DIMENSIONS[dim].higher_is_better if dim in DIMENSIONS else True
        rows, unscored = [], 0
        for j in items:
            sa = scores.get((j.model_a, j.prompt_id), {}).get(dim)
            sb = scores.get((j.model_b, j.prompt_id), {}).get(dim)
            if not (finite_number(sa) and finite_number(sb)):  # no score (an error, a dimension not run)
                unscored += 1
                continue
            diff = (sa - sb) if higher else (sb - sa)
            rows.append((j, diff, outcome(diff, eps)))
        if not rows:
            results[dim] = {"judgments": len(items), "unscored": unscored}
            continue

        def ratios(sample):
            human = win_ratios([(j.model_a, j.model_b, j.winner) for j, _, _ in sample])
            metric = win_ratios([(j.model_a, j.model_b, outcome) for j, _, outcome in sample])
            return human, metric

        human, metric = ratios(rows)
        point = _correlations(human, metric)
        draws = defaultdict(list)
        for _ in range(bootstrap):
            sample = [rows[i] for i in rng.integers(0, len(rows), len(rows))]
            h, m = ratios(sample)
            if len(h) == len(human):  # a resample that lost a model has no comparable ranking
                for name, value in _correlations(h, m).items():
                    if value is not None and np.isfinite(value):
                        draws[name].append(value)
        correlations = {
            name: {
                "value": value,
                "ci95": (
                    [float(np.percentile(draws[name], 2.5)), float(np.percentile(draws[name], 97.5))]
                    if draws[name]
                    else None
                ),
            }
            for name, value in point.items()
        }
        diffs = [(j.winner, d) for j, d, _ in rows]
        calibrated_eps, calibrated_acc = tie_calibration(diffs)
        results[dim] = {
            "judgments": len(items),
            "unscored": unscored,
            "used": len(rows),
            "models": {m: {"human_win_ratio": human[m], "metric_win_ratio": metric[m]} for m in human},
            **correlations,
            "accuracy_2afc": accuracy_2afc([(j.winner, outcome) for j, _, outcome in rows]),
            "tie_aware_accuracy": {"eps": eps, "value": tie_aware_accuracy(diffs, eps)},
            "tie_calibrated_accuracy": {"eps": calibrated_eps, "value": calibrated_acc},
        }
    return results


def scatter_png(dim: str, result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = result["models"]
    x = [v["metric_win_ratio"] for v in models.values()]
    y = [v["human_win_ratio"] for v in models.values()]
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.scatter(x, y)
    for name, xi, yi in zip(models, x, y):
        ax.annotate(name, (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=8)
    ax.plot([0, 1], [0, 1], color="#bbb", linewidth=0.8)
    r = result["pearson"]["value"]
    label = DIMENSIONS[dim].label if dim in DIMENSIONS else dim
    ax.set(
        xlim=(0, 1),
        ylim=(0, 1),
        xlabel="metric win ratio",
        ylabel="human win ratio",
        title=f"{label}: Pearson r = {printed(r, 2, 'n/a')}",
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def align_bench(
    bench: Path, judgments: Path, out: Path | None = None, eps: float = 0.0, bootstrap: int = 1000, seed: int = 0
) -> dict:
    """`align` of a `bench run` folder's per-sample scores with the human judgments of a CSV: ``align.json`` and a
    scatter plot per dimension in ``out`` (default: the bench folder). Returns the results by dimension."""
    _, records = load_results(bench)
    scores = {(r["model"], r["prompt_id"]): r.get("scores") or {} for r in records}
    asked = load_judgments(judgments)
    results = align(asked, scores, eps, bootstrap, seed)
    if not any(result.get("used") for result in results.values()):
        raise BenchError(
            f"{judgments}: none of its {len(asked)} judgments pairs two scored clips of {bench}: they name models "
            f"{sorted({m for j in asked for m in (j.model_a, j.model_b)})}, dimensions "
            f"{sorted({j.dimension for j in asked})}; the run scored models {sorted({m for m, _ in scores})}, "
            f"dimensions {sorted({d for s in scores.values() for d in s})}"
        )
    out = Path(out or bench)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "align.json", results)
    for dim, result in results.items():
        if "models" in result:
            scatter_png(dim, result, out / f"align_{dim}.png")
    return results
