"""Making PriSe: items drawn, written, decoded and measured again; an item whose measure disagrees is drawn again or
rejected, and counted."""

from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from ....data.questions import ChoiceQuestion, write_questions
from ....jsonl import write_json
from ....media import decode, encode_video
from .measures import MEASURES, agrees
from .stimuli import FPS, RATE, RENDERERS, SECONDS, SEES, TASKS

MAX_TRIES = 5


def make_item(task: str, index: int, seed: int, out: Path) -> tuple[list[ChoiceQuestion], int]:
    """The formal item and its presence check, written under ``out`` and measured from the decoded file; no
    questions where no draw agreed. Returns them and the draws taken."""
    rng = np.random.default_rng([seed, TASKS.index(task), index])
    item_id = f"{task}_{index:04d}"
    media = Path("clips") / f"{item_id}.mp4"
    for tries in range(1, MAX_TRIES + 1):
        frames, audio, question, options, answer, truth = RENDERERS[task](rng)
        audio = np.zeros(int(SECONDS * RATE)) if audio is None else audio
        (out / media).parent.mkdir(parents=True, exist_ok=True)
        encode_video(out / media, frames, FPS, audio[None].astype(np.float32), RATE)
        clip = decode(out / media, video=True, audio=True, sample_rate=RATE, channels=1)
        measured = MEASURES[task](clip.frames, clip.audio[0])
        if not agrees(task, truth, measured):
            continue
        order = rng.permutation(len(options)) if task != "beat_count" else np.arange(len(options))
        shuffled = [options[k] for k in order]
        letter = "ABCDEFGH"[shuffled.index(answer)]
        formal = ChoiceQuestion(
            item_id,
            str(media),
            question,
            tuple(shuffled),
            letter,
            category=task,
            groups={"task": task},
            extra={"task": task, "truth": truth, "measured": measured},
        )
        sense = "see" if task in SEES else "hear"
        check = ChoiceQuestion(
            f"{item_id}_check",
            str(media),
            f"Can you {sense} anything in this clip?",
            ("Yes", "No"),
            "A",
            category=f"{task}/check",
            groups={"task": f"{task}/check"},
            extra={"task": f"{task}/check", "confirms": item_id, "truth": {"present": True}},
        )
        return [formal, check], tries
    (out / media).unlink(missing_ok=True)
    return [], MAX_TRIES


def _make(args: tuple[str, int, int, str]) -> tuple[str, list[ChoiceQuestion], int]:
    task, index, seed, out = args
    questions, tries = make_item(task, index, seed, Path(out))
    return task, questions, tries


def make_prise(out: Path, n: int, seed: int = 0, workers: int = 2) -> dict:
    """``n`` formal items spread over the tasks in turn (each with its presence check): OUT/clips, OUT/questions.jsonl
    and OUT/summary.json."""
    start = time.perf_counter()
    jobs = [(TASKS[i % len(TASKS)], i // len(TASKS), seed, str(out)) for i in range(n)]
    questions, cells = [], {t: {"items": 0, "redraws": 0, "rejected": 0} for t in TASKS}
    with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
        for task, made, tries in pool.map(_make, jobs, chunksize=4):
            cells[task]["items" if made else "rejected"] += 1
            cells[task]["redraws"] += tries - 1 if made else 0
            questions += made
    write_questions(questions, out / "questions.jsonl")
    summary = {
        "seed": seed,
        "items": sum(c["items"] for c in cells.values()),
        "rejected": sum(c["rejected"] for c in cells.values()),
        "redraws": sum(c["redraws"] for c in cells.values()),
        "seconds": round(time.perf_counter() - start, 1),
        "tasks": cells,
    }
    write_json(out / "summary.json", summary)
    return summary
