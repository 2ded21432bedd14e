"""`avjudge omni sonicbench make`: a balanced SonicBench-style item set on disk.

``OUT/audio/<attribute>/<id>.wav`` (16-bit PCM, 16 kHz; direction items are stereo), ``OUT/questions.jsonl`` in
avjudge's question format (with ``attribute``, ``paradigm`` and ``label``: what was rendered and what the meters
read back from the written file) and ``OUT/summary.json`` (items, redraws and rejections per cell, seconds taken).
"""

from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from scipy.io import wavfile
from tqdm import tqdm

from ....data.questions import ChoiceQuestion, write_questions
from ....jsonl import write_json
from .stimuli import ATTRIBUTE_SPECS, SAMPLE_RATE, make_item, pcm16
from .suite import PARADIGMS


def _make_and_write(task: tuple[str, str, int, int, str]) -> tuple[str, str, ChoiceQuestion | None, int]:
    attribute, paradigm, index, seed, out = task
    item, tries = make_item(attribute, paradigm, index, seed)
    if item is None:
        return attribute, paradigm, None, tries
    media = Path("audio") / attribute / f"{item.id}.wav"
    (Path(out) / media).parent.mkdir(parents=True, exist_ok=True)
    wavfile.write(Path(out) / media, SAMPLE_RATE, pcm16(item))
    question = ChoiceQuestion(
        id=item.id,
        media=str(media),
        question=item.question,
        options=item.options,
        answer=item.answer,
        category=f"{attribute}/{paradigm}",
        prompt=item.prompt,
        groups={"attribute": attribute, "paradigm": paradigm},
        extra={"attribute": attribute, "paradigm": paradigm, "label": item.label},
    )
    return attribute, paradigm, question, tries


def make_items(
    out: Path,
    per_cell: int,
    seed: int = 0,
    attributes: tuple[str, ...] | None = None,
    workers: int = 2,
    progress: bool = True,
) -> dict:
    """``per_cell`` items for every attribute x paradigm (an even number keeps the answers balanced), written under
    ``out``; returns the summary it writes."""
    attributes = attributes or tuple(ATTRIBUTE_SPECS)
    start = time.perf_counter()
    tasks = [(a, p, i, seed, str(out)) for a in attributes for p in PARADIGMS for i in range(per_cell)]
    questions, cells = (
        [],
        {f"{a}/{p}": {"items": 0, "redraws": 0, "rejected": 0} for a in attributes for p in PARADIGMS},
    )
    with (
        ProcessPoolExecutor(max_workers=max(1, workers)) as pool,
        tqdm(total=len(tasks), desc="items", unit="item", disable=not progress) as bar,
    ):
        for attribute, paradigm, question, tries in pool.map(_make_and_write, tasks, chunksize=8):
            cell = cells[f"{attribute}/{paradigm}"]
            if question is None:
                cell["rejected"] += 1
            else:
                cell["items"] += 1
                cell["redraws"] += tries - 1
                questions.append(question)
            bar.update()
    write_questions(questions, out / "questions.jsonl")  # in task order: attribute, paradigm, index
    summary = {
        "seed": seed,
        "per_cell": per_cell,
        "items": len(questions),
        "redraws": sum(c["redraws"] for c in cells.values()),
        "rejected": sum(c["rejected"] for c in cells.values()),
        "seconds": round(time.perf_counter() - start, 1),
        "cells": cells,
    }
    write_json(out / "summary.json", summary)
    return summary
