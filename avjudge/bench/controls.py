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
from ..media import MediaClip, MediaError
from .dimensions import BenchError

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
    """Every item (``{id, video, captions}``) judged as it is and under each control the judge's task admits;
    ``OUT/controls.jsonl`` holds every score, ``OUT/summary.json`` the report."""
    task = judge.task
    clips, rows = {}, []
    for item in items:
        try:
            clips[item["id"]] = judge.decode(item["video"])
        except MediaError as err:
            rows.append({"id": item["id"], "control": "original", "score": None, "error": str(err)})
    kept = [item for item in items if item["id"] in clips]
    texts = [(item.get("captions") or {}).get(task.caption_field) if task.caption_field else None for item in kept]
    if task.needs_text and any(t is None for t in texts):
        missing = next(item["id"] for item, t in zip(kept, texts) if t is None)
        raise BenchError(f"{missing}: no {task.caption_field} caption for the {task.name} judge (give a manifest)")
    controls = [c for c in CONTROLS if c.applies(task)]
    jobs = []  # (id, control, clip, text)
    for i, item in enumerate(kept):
        clip, other = clips[item["id"]], clips[kept[(i + 1) % len(kept)]["id"]]
        jobs.append((item["id"], "original", clip, texts[i]))
        jobs += [(item["id"], c.name, c.change(clip, other), texts[i]) for c in controls]
        if task.needs_text:
            jobs.append((item["id"], OTHER_TEXT, clip, texts[(i + 1) % len(kept)]))
    results = judge.score_samples([_sample(judge, clip, text) for _, _, clip, text in jobs])
    rows += [
        {"id": item_id, "control": name, "score": r.score, "error": r.error}
        for (item_id, name, _, _), r in zip(jobs, results)
    ]
    out.mkdir(parents=True, exist_ok=True)
    (out / "controls.jsonl").unlink(missing_ok=True)
    with JsonlWriter(out / "controls.jsonl") as writer:
        writer.write_all(rows)
    summary = control_summary(rows)
    write_json(out / "summary.json", {"judge": task.name, **summary})
    return summary


def _sample(judge, clip: MediaClip, text: str | None):
    try:
        return judge.sample(clip, text)
    except (MediaError, ValueError) as err:
        return judge.head.failed(str(err))


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
