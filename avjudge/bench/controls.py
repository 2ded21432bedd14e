"""Sanity controls for a judge (after AVI-Bench's double confirmation): each clip judged as it is and again with one
stream taken away or swapped. A judge that still says Yes to silence, to a blank picture, or to another clip's
sound or caption is not using that stream.

Controls (each where the judge's task reads the stream): ``silent`` (the audio zeroed), ``blank_picture`` (every
frame mid-grey), ``other_audio`` (the next clip's audio, looped or cut to length), ``other_text`` (the next clip's
caption). The report gives, per control, how many clips it was applied to, the mean score, the share judged Yes
(S > 0.5) beside the original clips', and the mean drop from each clip's own score.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..jsonl import JsonlWriter, write_json
from ..media import MediaClip
from ..scoring import JudgeScorer, Scoring
from .errors import BenchError

YES = 0.5


@dataclass(frozen=True)
class Control:
    name: str
    applies: Callable[[object], bool]  # the judge's task -> whether it reads what this control changes
    change: Callable[[MediaClip, MediaClip], MediaClip]  # (clip, the next clip) -> the control clip


def _fit(audio: np.ndarray, length: int) -> np.ndarray:
    reps = -(-length // audio.shape[1])
    return np.tile(audio, (1, reps))[:, :length]


CONTROLS = (
    Control("silent", lambda t: t.needs_audio, lambda c, o: dataclasses.replace(c, audio=np.zeros_like(c.audio))),
    Control(
        "blank_picture",
        lambda t: t.needs_video,
        lambda c, o: dataclasses.replace(c, frames=np.full_like(c.frames, 128)),
    ),
    Control(
        "other_audio",
        lambda t: t.needs_audio,
        lambda c, o: dataclasses.replace(c, audio=_fit(o.audio, c.audio.shape[1]).astype(np.float32)),
    ),
)
OTHER_TEXT = "other_text"  # the text is not in the clip: it is swapped where the texts are chosen


def run_controls(judge, items: list[dict], out: Path) -> dict:
    """Every item (``{id, video, captions}``) judged as it is and under each control the judge's task admits, through
    the scoring core; ``OUT/controls.jsonl`` holds every score, ``OUT/summary.json`` the report."""
    task = judge.task
    scoring = Scoring([JudgeScorer(judge)], judge.settings.workers, judge.settings.decode_processes)
    rows, kept = [], []
    for item in scoring.decode(items):
        if isinstance(item["clip"], str):  # why it could not be read
            rows.append({"id": item["id"], "control": "original", "score": None, "error": item["clip"]})
        else:
            kept.append(item)
    captions = [item.get("captions") or {} for item in kept]
    missing = next(
        (item["id"] for item, c in zip(kept, captions) if task.needs_text and not c.get(task.caption_field)), None
    )
    if missing is not None:
        raise BenchError(f"{missing[0]}: no {task.caption_field} caption for the {task.name} judge (give a manifest)")
    controls = [c for c in CONTROLS if c.applies(task)]
    jobs = []  # (id, control, clip, captions)
    for i, item in enumerate(kept):
        clip, other = item["clip"], kept[(i + 1) % len(kept)]["clip"]
        jobs.append((item["id"], "original", clip, captions[i]))
        jobs += [(item["id"], c.name, c.change(clip, other), captions[i]) for c in controls]
        if task.needs_text:
            jobs.append((item["id"], OTHER_TEXT, clip, captions[(i + 1) % len(kept)]))
    records = scoring.score([{"media": clip, "captions": c} for _, _, clip, c in jobs]) if jobs else []
    for (item_id, name, _, _), record in zip(jobs, records):
        outcome = record.outcome(task.name)
        rows.append({"id": item_id, "control": name, "score": outcome.values["score"] if outcome.ok else None,
                     "error": outcome.error})  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    (out / "controls.jsonl").unlink(missing_ok=True)
    with JsonlWriter(out / "controls.jsonl") as writer:
        writer.write_all(rows)
    summary = control_summary(rows)
    write_json(out / "summary.json", {"judge": task.name, **summary})
    return summary


def control_summary(rows: list[dict]) -> dict:
    own = {r["id"]: r["score"] for r in rows if r["control"] == "original" and r["score"] is not None}
    report = {}
    for name in dict.fromkeys(r["control"] for r in rows):
        scored = [r for r in rows if r["control"] == name and r["score"] is not None and r["id"] in own]
        scores = np.array([r["score"] for r in scored])
        report[name] = {
            "clips": len(scored),
            "errors": sum(r["control"] == name and r["score"] is None for r in rows),
            "mean_score": float(scores.mean()) if len(scores) else None,
            "yes_rate": float((scores > YES).mean()) if len(scores) else None,
            "mean_drop": float(np.mean([own[r["id"]] - r["score"] for r in scored])) if scored else None,
        }
    return report
