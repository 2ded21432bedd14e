"""Perceivability: can a judge's input represent each negative's mismatch at all?

A judge reads the picture in token groups of ``temporal_patch`` sampled frames (`avjudge.sampling`): its grid step.
A sound moved by less than that step lands in the same groups as before wherever the clip's events are spread out,
so a judge trained on such negatives is asked to see what its input does not hold: at best it learns nothing from
them, at worst it learns to punish whatever happens to go with them. This module says, per negative type of a pair
dataset, at a given sampling:

- **the bound**, for any clip: the share of the type's pairs whose shift is at least the grid step (shorter ones
  can still be seen where an event falls near a group's edge, but not reliably);
- **the events**, where the sources carry ground truth (the world's scenes): the share of pairs whose grid-level
  event pattern, the picture's against the negative's sound, differs more than the positive's does: per token
  group, does a sampled frame show an event, and does an event's sound overlap the group's span.

A type is **below the grid** where fewer than `SEEN_AT_LEAST` of its pairs can be represented (the events' share
where known, else the bound): `avjudge data build` and `avjudge train` warn of it, `avjudge data audit --sampling`
and the judge card report it. Types that change what the sound is rather than when (a filter, a pitch step) are
carried by the audio tokens at any frame rate: they are reported as content, not timing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..perturb import STRATEGIES
from ..sampling import Sampling
from .build import built_sources
from .pairs import load_pairs

SEEN_AT_LEAST = 0.5  # a timing type is below the grid when fewer than half its pairs' mismatch can be represented
TIMING_PARAM = "shift_s"  # the parameter of a negative that moves the sound in time
MISMATCH_TYPES = ("random_mismatch", "semantic_mismatch")  # another clip's sound: its events are that clip's


@dataclass(frozen=True)
class Event:
    """A sounding event of a source's ground truth: seen while it lasts, and heard then."""

    start: float
    end: float


def scene_events(source: dict) -> list[Event] | None:
    """The sounding events of a source record that carries a world scene (``scene.events``, each with its object's
    sound), else None."""
    scene = source.get("scene")
    if not isinstance(scene, dict) or "events" not in scene:
        return None
    objects = scene.get("objects") or []
    return [
        Event(float(e["time"]), float(e["time"]) + float(e["duration"]))
        for e in scene["events"]
        if e["object"] < len(objects) and objects[e["object"]].get("sound") is not None
    ]


def grid_patterns(
    sampling: Sampling, start: float, duration: float, seen: list[Event], heard: list[Event]
) -> tuple[np.ndarray, np.ndarray]:
    """(picture, sound) per visual token group of the window: whether one of the group's sampled frames falls
    inside a ``seen`` event, and whether a ``heard`` event overlaps the group's span of time."""
    times = np.array(sampling.frame_times(start, duration))
    groups = math.ceil(len(times) / sampling.temporal_patch)
    step = sampling.grid_at(duration)
    picture = np.zeros(groups, bool)
    sound = np.zeros(groups, bool)
    for g in range(groups):
        shown = times[g * sampling.temporal_patch : (g + 1) * sampling.temporal_patch]
        low, high = start + g * step, start + (g + 1) * step
        picture[g] = any(bool(np.any((shown >= e.start) & (shown < e.end))) for e in seen)
        sound[g] = any(e.start < high and e.end > low for e in heard)
    return picture, sound


def seen_in_events(
    sampling: Sampling, start: float, duration: float, events: list[Event], negative_sound: list[Event]
) -> bool:
    """Whether a negative whose sound holds ``negative_sound`` (in the picture's time) differs from the picture,
    at the grid, in more groups than the source's own sound does."""
    picture, own = grid_patterns(sampling, start, duration, events, events)
    _, moved = grid_patterns(sampling, start, duration, events, negative_sound)
    return int(np.sum(picture != moved)) > int(np.sum(picture != own))


def _window(record: dict, source: dict) -> tuple[float, float] | None:
    window = record.get("window")
    if window:
        return float(window["start_s"]), float(window["duration_s"])
    duration = source.get("duration")
    return (0.0, float(duration)) if duration else None


def _negative_sound(record: dict, events: list[Event], sources: dict[str, dict]) -> list[Event] | None:
    """The negative's sounding events in the picture's time, where the record says how they moved."""
    params = record.get("params") or {}
    if TIMING_PARAM in params:  # a positive shift: the sound comes later than its event
        shift = float(params[TIMING_PARAM])
        return [Event(e.start + shift, e.end + shift) for e in events]
    if record.get("negative_type") in MISMATCH_TYPES and params.get("source") in sources:
        return scene_events(sources[params["source"]])
    return None


def is_timing(negative_type: str) -> bool:
    """Whether a negative type moves the sound in time (its mismatch is one a grid can hide)."""
    strategy = STRATEGIES.get(negative_type)
    return strategy is not None and TIMING_PARAM in strategy.defaults


def perceivability(records: list[dict], sources: list[dict], sampling: Sampling) -> dict:
    """Per negative type of the AV pair ``records`` (sources: the manifest records they were built from), at
    ``sampling``: ``pairs``; for a timing type, ``above_grid`` (the bound), ``seen_in_events`` (ground truth, or
    None) and ``below_grid`` (the verdict); for another clip's sound, ``seen_in_events`` (its timing differs);
    ``kind``: "timing" or "content". With ``sampling`` described, its ``grid_s`` and `SEEN_AT_LEAST`."""
    by_id = {s["id"]: s for s in sources}
    counts: dict[str, dict] = {}
    for record in records:
        if record.get("label") != 0:
            continue
        kind = record.get("negative_type") or record.get("strategy")
        entry = counts.setdefault(kind, {"pairs": 0, "timed": 0, "above": 0, "known": 0, "seen": 0})
        entry["pairs"] += 1
        source = by_id.get(record["source_id"], {})
        window = _window(record, source)
        params = record.get("params") or {}
        if TIMING_PARAM in params and window is not None:
            entry["timed"] += 1
            entry["above"] += abs(float(params[TIMING_PARAM])) >= sampling.grid_at(window[1]) - 1e-9
        events = scene_events(source)
        moved = _negative_sound(record, events, by_id) if events is not None else None
        if moved is not None and window is not None:
            entry["known"] += 1
            entry["seen"] += seen_in_events(sampling, window[0], window[1], events, moved)
    per_type = {}
    for kind, entry in sorted(counts.items()):
        timing = is_timing(kind)
        seen = entry["seen"] / entry["known"] if entry["known"] else None
        row = {"pairs": entry["pairs"], "kind": "timing" if timing else "content", "seen_in_events": seen}
        if timing:
            above = entry["above"] / entry["timed"] if entry["timed"] else None
            share = seen if seen is not None else above
            row.update(above_grid=above, below_grid=share is not None and share < SEEN_AT_LEAST)
        per_type[kind] = row
    return {
        "sampling": sampling.describe(),
        "grid_s": sampling.grid_s,
        "seen_at_least": SEEN_AT_LEAST,
        "per_type": per_type,
        "below_grid": sorted(k for k, row in per_type.items() if row.get("below_grid")),
    }


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def perceivability_lines(report: dict) -> list[str]:
    """The report as a table, then a line per type below the grid."""
    lines = [
        f"what the judge's input can represent, at {report['sampling']} (a timing type is below the grid when under "
        f"{report['seen_at_least']:.0%} of its pairs can be seen)",
        f"    {'negative type':<24}{'pairs':>6}  {'kind':<9}{'shift >= grid':>14}{'seen in events':>16}",
    ]
    for kind, row in report["per_type"].items():
        lines.append(
            f"    {kind:<24}{row['pairs']:>6}  {row['kind']:<9}{_share(row.get('above_grid')):>14}"
            f"{_share(row['seen_in_events']):>16}"
        )
    lines += [f"    BELOW THE GRID {kind}: {below_grid_reason(report, kind)}" for kind in report["below_grid"]]
    return lines


def below_grid_reason(report: dict, kind: str) -> str:
    row = report["per_type"][kind]
    seen = row["seen_in_events"]
    evidence = (
        f"{_share(seen)} of its pairs differ from the picture at the grid"
        if seen is not None
        else f"{_share(row['above_grid'])} of its shifts reach the grid step"
    )
    return f"{evidence}; a judge at {report['sampling']} cannot learn it (avjudge.sampling: more frames, fewer pixels)"


def below_grid_warnings(report: dict, where: str) -> list[str]:
    """One warning line per timing type mostly below the grid, naming ``where`` the sampling comes from."""
    return [f"warning: {kind} is below the grid of {where}: {below_grid_reason(report, kind)}" for kind in
            report["below_grid"]]  # fmt: skip


def dataset_perceivability(dataset, sampling: Sampling, splits: tuple[str, ...] | None = None) -> dict | None:
    """`perceivability` of the AV pairs of a folder made by `avjudge data build` (``splits``: those splits, default
    every split it holds), or None where it holds no AV pairs."""
    folder = Path(dataset) / "pairs" / "av"
    held = sorted(path.stem for path in folder.glob("*.jsonl")) if folder.is_dir() else []
    chosen = [split for split in (splits or held) if split in held]
    if not chosen:
        return None
    records = [record for split in chosen for record in load_pairs(dataset, "av", split)]
    return perceivability(records, built_sources(dataset), sampling)
