"""Resumable batch jobs: per-sample JSONL written as it goes, a summary JSON at the end.

A job is a list of items with unique ``id``s and a function that turns a chunk of items
into one record per item. Killed and rerun with the same output, it skips the ids already
written and never writes one twice.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Sequence

from tqdm import tqdm

from .jsonl import JsonlWriter, read_jsonl, write_json


def summary_path(out: str | Path) -> Path:
    out = Path(out)
    return out.with_name(out.stem + ".summary.json")


def run_job(
    items: Sequence[dict],
    out: str | Path,
    process: Callable[[list[dict]], list[dict]],
    chunk_size: int = 32,
    progress: bool = True,
    desc: str = "samples",
    summarize: Callable[[list[dict]], dict] | None = None,
) -> dict:
    """Process ``items`` in chunks, appending ``process``'s records to ``out``; returns the summary."""
    ids = [item["id"] for item in items]
    if len(set(ids)) != len(ids):
        dupes = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise ValueError(f"ids must be unique; repeated: {dupes}")
    done = {r["id"] for r in read_jsonl(out)}
    todo = [item for item in items if item["id"] not in done]
    start = time.perf_counter()
    with (
        JsonlWriter(out) as writer,
        tqdm(total=len(items), initial=len(items) - len(todo), desc=desc, disable=not progress, unit="sample") as bar,
    ):
        for i in range(0, len(todo), chunk_size):
            chunk = todo[i : i + chunk_size]
            records = process(chunk)
            if [r["id"] for r in records] != [item["id"] for item in chunk]:
                raise RuntimeError("a job's process function must return one record per item, in order")
            writer.write_all(records)
            bar.update(len(chunk))
    wanted = set(ids)
    records = [r for r in read_jsonl(out) if r["id"] in wanted]
    summary = {
        "total": len(items),
        "done": len(records),
        "errors": sum(1 for r in records if r.get("error")),
        "resumed_from": len(items) - len(todo),
        "seconds_this_run": round(time.perf_counter() - start, 3),
        "output": str(out),
    }
    if summarize:
        summary.update(summarize(records))
    write_json(summary_path(out), summary)
    return summary
