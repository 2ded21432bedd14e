"""`avjudge bench align`: how well a benchmark's scores agree with people's pairwise (2AFC) judgments.

Definitions (one judgment: a prompt, models A and B, a dimension, the human's winner A | B | tie):

- The metric's outcome on a judgment compares the two clips' per-sample scores of that dimension on
  that prompt: A when s_A - s_B > eps, B when s_B - s_A > eps, else a tie (eps: the dimension's own tie band unless
  given, 0.1 for the MOS metrics; lower-is-better dimensions are compared the other way). Judgments where either
  clip has no score are left out of every statistic and counted in ``unscored``.
- WinRatio of a model = (W + 0.5 T) / (W + T + L) over the judgments it appears in, once with the human's
  outcomes and once with the metric's, on the same judgments.
- Pearson, Spearman and Kendall (tau-b) correlations between the human and metric WinRatios across
  models.
- 2AFC accuracy: over judgments where the human chose a winner (human ties left out), the share where the
  metric picks the same one; a metric tie counts one half.
- Tie-aware pairwise accuracy (acc_eq, Deutsch et al. 2023): over all judgments, the share where the
  outcomes agree, a tie agreeing only with a tie; reported at eps and at the eps that maximises it
  (tie calibration).
- Intervals: the correlations, 2AFC and the tie-aware accuracy at eps each get a 95 % percentile bootstrap interval.
  Votes on one pair, and the pairs of one prompt, are not independent: where a prompt holds several judgments of a
  dimension the bootstrap resamples prompts, each with all its judgments (``resample="prompt"``, what ``auto``
  chooses there), else judgments; the result names the unit and how many clusters it resampled.

Judgments come one a row (``winner``), or as published vote counts: one row per prompt and pair of models with
``votes_a``, ``votes_b`` and, if given, ``ties`` (each vote a judgment).
"""

from __future__ import annotations

import csv
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import signal, stats

from ..jsonl import write_json
from ..media import MediaError, decode
from ..scoring.dimensions import DIMENSIONS
from ..stats import finite_number, interval95, printed
from .errors import BenchError
from .report import load_results

WINNERS = {"a": "A", "b": "B", "tie": "tie"}
PAIR_COLUMNS = ("prompt_id", "model_a", "model_b", "dimension")
CSV_COLUMNS = (*PAIR_COLUMNS, "winner")  # one judgment a row
VOTE_COLUMNS = (*PAIR_COLUMNS, "votes_a", "votes_b")  # published vote counts, a row a pair (``ties`` optional)
VOTES = {"votes_a": "A", "votes_b": "B", "ties": "tie"}
RESAMPLING = ("auto", "prompt", "judgment")


@dataclass(frozen=True)
class Judgment:
    prompt_id: str
    model_a: str
    model_b: str
    dimension: str
    winner: str  # A | B | tie
    annotator: str = ""


def load_judgments(path: str | Path) -> list[Judgment]:
    """The judgments of a CSV: one a row (``winner``: A, B or tie; ``annotator`` optional), or published vote counts
    (``votes_a``, ``votes_b``, ``ties`` optional: a row per prompt and pair, each vote one judgment)."""
    path = Path(path)
    if not path.is_file():
        raise BenchError(f"{path}: no such judgments file")
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        counts = all(c in header for c in VOTE_COLUMNS)
        columns = VOTE_COLUMNS if counts else CSV_COLUMNS
        missing = [c for c in columns if c not in header]
        if missing:
            raise BenchError(
                f"{path}: columns {missing} are missing; a judgments CSV has {', '.join(CSV_COLUMNS)} (and annotator) "
                f"a judgment a row, or {', '.join(VOTE_COLUMNS)} (and ties) as vote counts"
            )
        out = []
        for line, row in enumerate(reader, start=2):
            empty = [c for c in columns if not (row.get(c) or "").strip()]
            if empty:
                raise BenchError(f"{path}:{line}: no {', '.join(empty)}; each row names {', '.join(columns)}")
            pair = [row[c].strip() for c in PAIR_COLUMNS]
            if pair[1] == pair[2]:
                raise BenchError(f"{path}:{line}: a model compared with itself ({pair[1]!r})")
            if counts:
                out += [Judgment(*pair, winner) for winner, n in _votes(path, line, row).items() for _ in range(n)]
                continue
            winner = WINNERS.get(row["winner"].strip().lower())
            if winner is None:
                raise BenchError(f"{path}:{line}: winner must be A, B or tie, got {row['winner']!r}")
            out.append(Judgment(*pair, winner, (row.get("annotator") or "").strip()))
    if not out:
        raise BenchError(f"{path}: no judgments")
    return out


def _votes(path: Path, line: int, row: dict) -> dict[str, int]:
    """A vote-count row's votes by winner: whole numbers, 0 or more, at least one vote in all."""
    votes = {}
    for column, winner in VOTES.items():
        text = (row.get(column) or "0").strip() or "0"
        if not text.isdigit():
            raise BenchError(f"{path}:{line}: {column} must be a whole number of votes, 0 or more, not {text!r}")
        votes[winner] = int(text)
    if not sum(votes.values()):
        raise BenchError(f"{path}:{line}: no votes ({', '.join(VOTES)} are all 0)")
    return votes


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


def pair_scores(j: Judgment, scores: dict[tuple[str, str], dict[str, float]]) -> tuple[float, float] | None:
    """The two clips' scores of ``j``'s dimension, None where either has none (an error, a dimension not run)."""
    sa = scores.get((j.model_a, j.prompt_id), {}).get(j.dimension)
    sb = scores.get((j.model_b, j.prompt_id), {}).get(j.dimension)
    return (sa, sb) if finite_number(sa) and finite_number(sb) else None


def tie_band(dim: str, eps: float | None) -> float:
    """The score difference up to which the metric's outcome is a tie: ``eps`` where given, else the dimension's own
    noticeable size (`avjudge.scoring.dimensions.Dimension.tie_band`)."""
    return eps if eps is not None else DIMENSIONS[dim].tie_band if dim in DIMENSIONS else 0.0


def align(
    judgments: list[Judgment],
    scores: dict[tuple[str, str], dict[str, float]],
    eps: float | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
    resample: str = "auto",
) -> dict:
    """Per dimension: win ratios, correlations, 2AFC and tie-aware accuracy, each with a bootstrap interval that
    resamples ``resample`` units (``auto``: prompts where a prompt holds several judgments, else judgments); metric
    ties within ``eps`` (None: each dimension's own tie band).

    ``scores``: (model, prompt id) -> dimension -> score (the bench run's per-sample scores).
    """
    if resample not in RESAMPLING:
        raise BenchError(f"resample must be one of {', '.join(RESAMPLING)}, not {resample!r}")
    by_dim: dict[str, list[Judgment]] = defaultdict(list)
    for j in judgments:
        by_dim[j.dimension].append(j)
    rng = np.random.default_rng(seed)
    results = {}
    for dim, items in sorted(by_dim.items()):
        higher = DIMENSIONS[dim].higher_is_better if dim in DIMENSIONS else True
        band = tie_band(dim, eps)
        rows, unscored = [], 0
        for j in items:
            pair = pair_scores(j, scores)
            if pair is None:
                unscored += 1
                continue
            diff = (pair[0] - pair[1]) if higher else (pair[1] - pair[0])
            rows.append((j, diff, outcome(diff, band)))
        if not rows:
            results[dim] = {"judgments": len(items), "unscored": unscored}
            continue

        def ratios(sample):
            human = win_ratios([(j.model_a, j.model_b, j.winner) for j, _, _ in sample])
            metric = win_ratios([(j.model_a, j.model_b, outcome) for j, _, outcome in sample])
            return human, metric

        human, metric = ratios(rows)
        point = _correlations(human, metric)
        by_prompt: dict[str, list[int]] = defaultdict(list)
        for i, (j, _, _) in enumerate(rows):
            by_prompt[j.prompt_id].append(i)
        unit = resample if resample != "auto" else "prompt" if len(by_prompt) < len(rows) else "judgment"
        clusters = list(by_prompt.values()) if unit == "prompt" else [[i] for i in range(len(rows))]
        draws = defaultdict(list)
        for _ in range(bootstrap):
            sample = [rows[i] for k in rng.integers(0, len(clusters), len(clusters)) for i in clusters[k]]
            h, m = ratios(sample)
            if len(h) == len(human):  # a resample that lost a model has no comparable ranking
                for name, value in _correlations(h, m).items():
                    if value is not None and np.isfinite(value):
                        draws[name].append(value)
            two_afc = accuracy_2afc([(j.winner, outcome) for j, _, outcome in sample])
            if two_afc is not None:
                draws["accuracy_2afc"].append(two_afc)
            draws["tie_aware"].append(tie_aware_accuracy([(j.winner, d) for j, d, _ in sample], band))
        correlations = {name: {"value": value, "ci95": interval95(draws[name])} for name, value in point.items()}
        diffs = [(j.winner, d) for j, d, _ in rows]
        calibrated_eps, calibrated_acc = tie_calibration(diffs)
        results[dim] = {
            "judgments": len(items),
            "unscored": unscored,
            "used": len(rows),
            "models": {m: {"human_win_ratio": human[m], "metric_win_ratio": metric[m]} for m in human},
            **correlations,
            "accuracy_2afc": accuracy_2afc([(j.winner, outcome) for j, _, outcome in rows]),
            "accuracy_2afc_ci95": interval95(draws["accuracy_2afc"]),
            "tie_aware_accuracy": {
                "eps": band,
                "value": tie_aware_accuracy(diffs, band),
                "ci95": interval95(draws["tie_aware"]),
            },
            "tie_calibrated_accuracy": {"eps": calibrated_eps, "value": calibrated_acc},
            "resampling": {"unit": unit, "clusters": len(clusters), "draws": bootstrap},
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


# Two clips carry the same stream when their sound correlates at 0.98 or more at some lag within 0.1 s, their lengths
# within 0.1 s (8 kHz mono), or their pictures differ by at most 4 grey levels on average (2 fps, 32 x 32): what two
# encodes of one soundtrack or one picture leave alike, and different recordings do not.
SAME_SOUND_CORRELATION, SAME_SOUND_SECONDS, SAME_PICTURE_LEVELS = 0.98, 0.1, 4.0
SAME_STREAM_TOLERANCE = (
    f"sound: correlation >= {SAME_SOUND_CORRELATION} within {SAME_SOUND_SECONDS} s, lengths within "
    f"{SAME_SOUND_SECONDS} s; picture: within {SAME_PICTURE_LEVELS:g} grey levels on average at 2 fps"
)


def _stream(path: str, kind: str) -> np.ndarray | None:
    """What of a clip's ``kind`` stream the comparison reads; None where it cannot be read."""
    try:
        if kind == "audio":
            return decode(path, video=False, sample_rate=8000, channels=1).audio[0]
        frames = decode(path, audio=False, fps=2.0, size=(32, 32)).frames
        return frames.mean(axis=-1)
    except MediaError:
        return None


def same_stream(a: np.ndarray | None, b: np.ndarray | None, kind: str) -> bool:
    """Whether two clips' streams (as `_stream` reads them) are one stream, within the stated tolerance."""
    if a is None or b is None:
        return False
    if kind == "video":
        return len(a) == len(b) and float(np.abs(a - b).mean()) <= SAME_PICTURE_LEVELS
    lag = int(SAME_SOUND_SECONDS * 8000)
    if abs(len(a) - len(b)) > lag or not (a.any() and b.any()):
        return False
    n = min(len(a), len(b))
    a, b = a[:n] - a[:n].mean(), b[:n] - b[:n].mean()
    correlation = signal.correlate(a, b, mode="full", method="fft")[n - 1 - lag : n + lag]
    return float(correlation.max() / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-12)) >= SAME_SOUND_CORRELATION


def same_stream_shares(judgments: list[Judgment], scores: dict, videos: dict[tuple[str, str], str]) -> dict:
    """Per dimension that reads one stream of a clip (audio or video; a prompt's text is the same for both clips):
    the share of its scored judgments whose two clips carry the same stream. There the dimension can only tell the
    two encodes apart, and its agreement with people says nothing of what it measures."""
    read: dict[tuple[str, str], np.ndarray | None] = {}  # each clip's stream, read once
    compared: dict[tuple, bool] = {}  # each pair of clips compared once, however many votes it holds
    shares = {}
    for dim in sorted({j.dimension for j in judgments}):
        media = [m for m in (DIMENSIONS[dim].reads if dim in DIMENSIONS else ()) if m != "text"]
        used = [j for j in judgments if j.dimension == dim and pair_scores(j, scores) is not None]
        if len(media) != 1 or not used:
            continue
        kind, same = media[0], 0
        for j in used:
            clips = tuple(videos.get((model, j.prompt_id)) for model in (j.model_a, j.model_b))
            if None in clips:
                continue
            pair = (*clips, kind)
            if pair not in compared:
                for clip in clips:
                    if (clip, kind) not in read:
                        read[clip, kind] = _stream(clip, kind)
                compared[pair] = same_stream(read[clips[0], kind], read[clips[1], kind], kind)
            same += compared[pair]
        shares[dim] = {"stream": kind, "share": same / len(used), "judgments": len(used), "same": same,
                       "tolerance": SAME_STREAM_TOLERANCE}  # fmt: skip
    return shares


def align_bench(
    bench: Path,
    judgments: Path,
    out: Path | None = None,
    eps: float | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
    resample: str = "auto",
) -> dict:
    """`align` of a `bench run` folder's per-sample scores with the human judgments of a CSV: ``align.json`` and a
    scatter plot per dimension in ``out`` (default: the bench folder). A dimension that reads one stream, asked to
    decide pairs of clips carrying the same stream of it, gets a warning with their share (`same_stream_shares`).
    Returns the results by dimension."""
    _, records = load_results(bench)
    scores = {(r["model"], r["prompt_id"]): r.get("scores") or {} for r in records}
    videos = {(r["model"], r["prompt_id"]): r["video"] for r in records if r.get("video")}
    asked = load_judgments(judgments)
    results = align(asked, scores, eps, bootstrap, seed, resample)
    for dim, shared in same_stream_shares(asked, scores, videos).items():
        results[dim]["same_stream"] = shared
        if shared["same"]:
            results[dim]["warnings"] = [
                f"{dim} reads the {shared['stream']} alone, and {shared['share']:.0%} of its judgments pair two clips "
                f"carrying the same {shared['stream']} ({shared['same']} of {shared['judgments']}): there it can "
                "only tell their encodes apart, so its agreement with people on them measures nothing"
            ]
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
