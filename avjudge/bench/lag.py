"""A lag profile of a sync scorer on clips a user believes in sync: how its score moves as each clip's sound is cut
against its picture, where no label exists.

Each clip's picture is read over one window, ``max_offset`` seconds in from each end, and its sound over the same
window moved by each offset of a grid over ±``max_offset`` (crop, never pad: the same cut as the recipe's time-shift
negatives, `avjudge.perturb.audio`; a positive offset is sound late, as their ``shift_s``). A scorer that hears
synchronisation scores the offset 0 highest; one blind to time gives the same score to every offset of a clip's
picture.

The report, overall: per offset size, the AUROC of the in-sync cuts against the cuts at that size (both signs), the
share of clips whose profile peaks within one step of 0, and the mean profile, each with a 95 % bootstrap interval
that resamples clips (a clip's cuts are not independent of each other); per clip: its profile and the offset it
peaks at (none where its profile is flat). A clip that cannot be read, or is too short for the grid, is that clip's
error; an offset its scorer fails on is that offset's error; neither is ever a score.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from ..config import ConfigError
from ..jsonl import JsonlWriter, read_jsonl, write_json
from ..media import MediaClip, MediaError
from ..scoring import Scoring
from ..stats import auroc, interval95, printed

PROFILES, SUMMARY, PLOT = "profiles.jsonl", "lag_profile.json", "lag_profile.png"
# A score function: the cut clips of one source -> one (value, error) each, the value oriented so higher is more in
# sync (a metric whose lower value is better is negated before it gets here).
ScoreCuts = Callable[[list[MediaClip]], list[tuple[float | None, str | None]]]


@dataclass(frozen=True)
class LagGrid:
    """The offsets a profile cuts: every ``step`` seconds over ±``max_offset``; ``window``: seconds of picture read
    (None: as long as the clip allows, its duration less twice ``max_offset``), at least ``min_window``."""

    max_offset: float = 2.0
    step: float = 0.25
    window: float | None = None
    min_window: float = 1.0

    def __post_init__(self):
        if not (self.step > 0 and self.max_offset >= self.step and math.isfinite(self.max_offset)):
            raise ConfigError(f"a lag grid needs 0 < step <= max_offset, got step {self.step}, max {self.max_offset}")
        ratio = self.max_offset / self.step
        if abs(ratio - round(ratio)) > 1e-6:
            raise ConfigError(f"max_offset {self.max_offset} is not a whole number of steps of {self.step}")
        if self.window is not None and not self.window > 0:
            raise ConfigError(f"window must be positive, not {self.window}")

    @property
    def offsets(self) -> np.ndarray:
        n = round(self.max_offset / self.step)
        return np.round(np.arange(-n, n + 1) * self.step, 6)

    def window_of(self, clip: MediaClip) -> float:
        """Seconds of picture this grid reads of ``clip``.

        Raises:
            MediaError: the clip is too short for every offset to cut inside it.
        """
        room = clip.duration - 2 * self.max_offset
        window = room if self.window is None else self.window
        if window > room + 1e-6 or window < self.min_window - 1e-6:
            needed = 2 * self.max_offset + (self.window or self.min_window)
            raise MediaError(
                clip.source,
                f"{clip.duration:.2f} s is too short for offsets of ±{self.max_offset:g} s around a "
                f"{self.window or self.min_window:g} s window (it needs {needed:.2f} s); lower --max-offset",
            )
        return window

    def cuts(self, clip: MediaClip) -> list[MediaClip]:
        """``clip`` cut at every offset: one picture window, the sound moved by the offset (positive: sound late)."""
        if clip.frames is None or clip.audio is None:
            raise MediaError(clip.source, "a lag profile needs both a picture and a sound")
        window = self.window_of(clip)
        return [clip.window(self.max_offset, window, audio_offset=self.max_offset - d) for d in self.offsets]


def scoring_cuts(scoring: Scoring, name: str, output: str, higher_is_better: bool = True) -> ScoreCuts:
    """The cuts scored through the scoring core by its scorer ``name``, its value ``output``; negated where lower is
    better (DeSync's offset), so a profile always peaks where the scorer finds the clip most in sync."""
    sign = 1.0 if higher_is_better else -1.0

    def score(cuts: list[MediaClip]) -> list[tuple[float | None, str | None]]:
        results = []
        for record in scoring.score([{"media": cut} for cut in cuts]):
            outcome = record.outcome(name)
            results.append((sign * outcome.values[output], None) if outcome.ok else (None, outcome.error))
        return results

    return score


def peak_offset(profile: Sequence[float | None], offsets: np.ndarray) -> float | None:
    """The offset a profile peaks at (the one nearest 0 among equal highest); None where it is flat or has a gap."""
    values = np.array([np.nan if v is None else v for v in profile], float)
    if not np.isfinite(values).all() or np.ptp(values) <= 1e-12 * max(1.0, np.abs(values).max()):
        return None
    top = np.flatnonzero(values >= values.max() - 1e-12)
    return float(offsets[top[np.argmin(np.abs(offsets[top]))]])


def summarise(rows: list[dict], grid: LagGrid, draws: int = 1000, seed: int = 0) -> dict:
    """The overall figures of the clips' ``rows`` (as `profile_clips` writes them), intervals by resampling clips."""
    offsets = grid.offsets
    scored = [r for r in rows if r.get("profile") is not None]
    table = np.array([[np.nan if v is None else v for v in r["profile"]] for r in scored], float).reshape(
        len(scored), len(offsets)
    )
    rng = np.random.default_rng(seed)
    resamples = rng.integers(0, len(scored), (draws, len(scored))) if len(scored) and draws else None
    zero = int(np.flatnonzero(offsets == 0)[0])

    def auroc_of(clips: np.ndarray, columns: np.ndarray) -> float | None:
        pos, neg = table[clips, zero], table[clips][:, columns].ravel()
        pos, neg = pos[np.isfinite(pos)], neg[np.isfinite(neg)]
        if not len(pos) or not len(neg):
            return None
        return auroc(np.r_[pos, neg], np.r_[np.ones(len(pos)), np.zeros(len(neg))])

    by_size = {}
    everyone = np.arange(len(scored))
    for size in sorted({abs(d) for d in offsets if d != 0}):
        columns = np.flatnonzero(np.abs(np.abs(offsets) - size) < 1e-9)
        value = auroc_of(everyone, columns)
        spread = None
        if value is not None and resamples is not None:
            spread = interval95(np.array([np.nan if (a := auroc_of(s, columns)) is None else a for s in resamples]))
        by_size[f"{size:g}"] = {"auroc": None if value is None else round(value, 4), "ci95": spread}
    peaks = np.array([np.nan if r["peak_s"] is None else r["peak_s"] for r in scored], float)
    near = np.where(np.isfinite(peaks), np.abs(peaks) <= grid.step + 1e-9, False).astype(float)
    mean = np.nanmean(table, axis=0) if len(scored) else np.full(len(offsets), np.nan)
    mean_spread = (
        [interval95(np.nanmean(table[resamples][:, :, k], axis=1)) for k in range(len(offsets))]
        if resamples is not None
        else [None] * len(offsets)
    )
    return {
        "grid": asdict(grid),
        "offsets_s": offsets.tolist(),
        "clips": len(rows),
        "profiled": len(scored),
        "errors": len(rows) - len(scored),
        "auroc_in_sync_vs_offset": by_size,
        "peak_within_one_step": {
            "share": round(float(near.mean()), 4) if len(scored) else None,
            "ci95": interval95(near[resamples].mean(axis=1)) if resamples is not None else None,
            "flat": int(np.isnan(peaks).sum()),
        },
        "mean_profile": [
            {"offset_s": float(d), "mean": None if not np.isfinite(m) else round(float(m), 4), "ci95": c}
            for d, m, c in zip(offsets, mean, mean_spread)
        ],
        "resampling": f"{draws} bootstrap draws of the {len(scored)} profiled clips (each with all its cuts)",
    }


def profile_clips(
    items: list[dict],
    decode: Callable[[dict], MediaClip | str],
    score_cuts: ScoreCuts,
    grid: LagGrid,
    out: Path,
    scorer: str,
    draws: int = 1000,
    seed: int = 0,
    progress: bool = True,
) -> dict:
    """Profile each of ``items`` (``{id, video}``): decoded by ``decode`` (a clip, or why it cannot be read), cut by
    ``grid``, scored by ``score_cuts``. One row per clip goes into ``OUT/profiles.jsonl`` as it is done (a rerun
    skips the clips it holds, so a killed run resumes), then ``OUT/lag_profile.json`` (and ``.png`` where matplotlib
    is installed). Returns the summary."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / PROFILES
    done = {row["id"]: row for row in read_jsonl(path)} if path.exists() else {}
    offsets = grid.offsets
    with JsonlWriter(path) as writer:
        for item in tqdm(items, desc="lag profiles", unit="clip", disable=not progress):
            if item["id"] in done:
                continue
            row = {"id": item["id"], "video": str(item.get("video")), "profile": None, "peak_s": None}
            try:
                clip = decode(item)
                if isinstance(clip, str):  # why it could not be read
                    raise MediaError(None, clip)
                results = score_cuts(grid.cuts(clip))
            except MediaError as err:
                row["error"] = str(err)
            else:
                row["profile"] = [value for value, _ in results]
                row["errors"] = {f"{d:g}": why for d, (_, why) in zip(offsets, results) if why}
                row["peak_s"] = peak_offset(row["profile"], offsets)
            writer.write(row)
            done[item["id"]] = row
    rows = [done[item["id"]] for item in items if item["id"] in done]
    summary = {"scorer": scorer, **summarise(rows, grid, draws, seed)}
    summary["plot"] = _write_plot(summary, out / PLOT)
    write_json(out / SUMMARY, summary)
    return summary


def _write_plot(summary: dict, path: Path) -> str | None:
    """The mean profile with its interval beside the clips' peaks; the path written, None without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = [p for p in summary["mean_profile"] if p["mean"] is not None]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.5))
    x = [p["offset_s"] for p in points]
    left.plot(x, [p["mean"] for p in points], marker="o", color="#48a")
    bands = [(p["offset_s"], *p["ci95"]) for p in points if p["ci95"]]
    if bands:
        bx, low, high = zip(*bands)
        left.fill_between(bx, low, high, color="#48a", alpha=0.25, linewidth=0)
    left.axvline(0, color="#888", linestyle="--", linewidth=1)
    left.set(xlabel="offset of the sound (s, positive: late)", ylabel="mean score", title=summary["scorer"])
    peaks = summary["peak_within_one_step"]
    right.set_title(
        f"in sync against each offset size\npeaks within a step of 0: {printed(peaks['share'])}", fontsize=10
    )
    sizes = list(summary["auroc_in_sync_vs_offset"])
    values = [summary["auroc_in_sync_vs_offset"][s]["auroc"] or 0.5 for s in sizes]
    right.plot([float(s) for s in sizes], values, marker="o", color="#c63")
    right.axhline(0.5, color="#888", linestyle="--", linewidth=1)
    right.set(xlabel="offset size (s)", ylabel="AUROC", ylim=(0, 1))
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)
    return str(path)
