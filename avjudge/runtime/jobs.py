"""Resumable batch jobs: per-sample JSONL written as it goes, a summary JSON at the end.

A job is a list of items with unique ``id``s and a function that turns a chunk of items
into one record per item. Killed and rerun with the same output, it skips the ids already
written and never writes one twice. An output ending in ``.parquet`` is written once the job is
complete, from the JSONL log of its records beside it (``OUT.partial.jsonl``), which is then removed.

An engine runs the function over the chunks (`avjudge.runtime.engines`): here in this process
(``local``), or in a pool of Ray actors across a cluster (``ray``). Either way this process writes
the records as they come back, so the output, its resume and its summary are the same.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Iterator, Sequence

from tqdm import tqdm

from ..config import ConfigError
from ..jsonl import JsonlWriter, read_jsonl, write_json
from ..tables import is_parquet, read_table, write_table
from .engines import Engine
from .local import LocalEngine
from .progress import listening
from .stages import clocked

OUTPUTS = (".jsonl", ".parquet")


def check_output(out: str | Path) -> None:
    """A job writes JSON lines as it goes (``.jsonl``) or a Parquet table when complete (``.parquet``); any other
    name would hold one of them under a suffix that says otherwise."""
    if Path(out).suffix.lower() not in OUTPUTS:
        raise ConfigError(
            f"{out}: a job writes JSON lines (.jsonl, as it goes) or a Parquet table (.parquet, when complete); "
            "name the output with one of these suffixes"
        )


def summary_path(out: str | Path) -> Path:
    out = Path(out)
    return out.with_name(out.stem + ".summary.json")


def records_log(out: str | Path) -> Path:
    """Where a job appends its records as they come: ``out``, or beside a Parquet ``out`` (written when complete)."""
    out = Path(out)
    return out.with_name(out.name + ".partial.jsonl") if is_parquet(out) else out


def read_records(out: str | Path) -> Iterator[dict]:
    """The records a job has written to ``out`` so far (a Parquet output's table, then its log)."""
    if is_parquet(out) and Path(out).exists():
        yield from read_table(out)
    yield from read_jsonl(records_log(out))


def run_job(
    items: Sequence[dict],
    out: str | Path,
    process: Callable[[list[dict]], list[dict]],
    chunk_size: int = 32,
    progress: bool = True,
    desc: str = "samples",
    summarize: Callable[[list[dict]], dict] | None = None,
    engine: Engine | None = None,
) -> dict:
    """Process ``items`` in chunks, appending ``process``'s records to ``out`` (JSONL, or Parquet when complete);
    returns the summary.

    ``engine`` (default: this process) runs ``process``; on Ray it travels to each actor by value, with the models
    it holds rebuilt there from their checkpoints. A `ClipJob` run here has its stages timed: the summary's
    ``stages`` gives each one's busy seconds and the one that bounds the run, as the progress bar does.
    """
    check_output(out)
    ids = [item["id"] for item in items]
    if len(set(ids)) != len(ids):
        dupes = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise ValueError(f"ids must be unique; repeated: {dupes}")
    done = {r["id"] for r in read_records(out)}
    todo = [item for item in items if item["id"] not in done]
    wanted, pending = set(ids), {item["id"] for item in todo}
    engine = engine or LocalEngine()
    process, clock = clocked(process, getattr(engine, "scores_here", False))
    start = time.perf_counter()
    with (
        JsonlWriter(records_log(out)) as writer,
        tqdm(total=len(items), initial=len(items) - len(todo), desc=desc, disable=not progress, unit="sample") as bar,
    ):
        partial = [0.0]  # of the chunk being scored here, done so far (`avjudge.runtime.progress`)

        def moved(items: float) -> None:
            partial[0] += items
            bar.update(items)

        with listening(moved):
            for records in engine.run(todo, process, chunk_size):
                strays = [r["id"] for r in records if r["id"] not in wanted]
                if strays:
                    raise RuntimeError(f"the engine returned records of ids not asked for: {strays[:5]}")
                fresh = [r for r in records if r["id"] in pending]  # a batch redone after a crash: written once
                pending.difference_update(r["id"] for r in fresh)
                writer.write_all(fresh)
                bar.update(len(fresh) - partial[0])
                partial[0] = 0.0
                if clock is not None:
                    bar.set_postfix_str(clock.postfix(), refresh=False)
    if pending:  # an incomplete run must not look complete: its summary is not written, a rerun does the rest
        raise RuntimeError(f"the engine ended without records of {len(pending)} item(s), e.g. {sorted(pending)[:3]}")
    records = list(read_records(out))
    if is_parquet(out):  # complete: the table is written whole, its log goes
        write_table(out, records)
        records_log(out).unlink()
    records = [r for r in records if r["id"] in wanted]
    summary = {
        "total": len(items),
        "done": len(records),
        "errors": sum(1 for r in records if r.get("error")),
        "resumed_from": len(items) - len(todo),
        "seconds_this_run": round(time.perf_counter() - start, 3),
        "output": str(out),
    }
    if clock is not None:  # which stage bounds the run (`avjudge.runtime.stages`)
        summary["stages"] = clock.report()
    if summarize:
        summary.update(summarize(records))
    write_json(summary_path(out), summary)
    return summary
