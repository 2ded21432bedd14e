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

import os
import time
from pathlib import Path
from typing import Callable, Iterator, Sequence

from tqdm import tqdm

from ..config import ConfigError
from ..jsonl import JsonlWriter, output_lock, read_jsonl, write_json
from ..tables import is_parquet, read_table, write_table
from .chunks import ClipJob
from .engines import Engine
from .local import LocalEngine
from .progress import listening
from .stages import StageClock

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


def file_identity(path) -> str:
    """What a record computed from the file at ``path`` was computed from: its size and modification time (a file
    rewritten in place is another file); ``-`` for what is not a file here (bytes, a clip in memory, a URL)."""
    if not isinstance(path, (str, Path)):
        return "-"
    try:
        stat = os.stat(path)
    except (OSError, ValueError):
        return "missing"
    return f"{stat.st_size}:{stat.st_mtime_ns}"


def checkpoint_identity(folder) -> str:
    """A checkpoint folder's path and the identity of its weight files: one retrained into the same folder is
    another scorer."""
    weights = sorted(p for pattern in ("*.safetensors", "*.bin", "*.pt") for p in Path(folder).glob(pattern))
    return f"{folder}[" + ",".join(file_identity(p) for p in weights) + "]"


def media_identity(scorers: str) -> Callable[[dict], str]:
    """An item's identity for a job of ``scorers`` (what scores it: names, checkpoints): the scorers and the files it
    names. A record of another identity is stale: a rerun scores its item again."""

    def identity(item: dict) -> str:
        return "|".join([scorers, *(file_identity(item.get(key)) for key in ("video", "audio") if key in item)])

    return identity


def _drop_stale(out: str | Path, keep: Callable[[dict], bool]) -> int:
    """Rewrite ``out``'s records without those ``keep`` refuses (into its log; a Parquet table is written anew when
    the job completes); returns how many went."""
    records = list(read_records(out))
    kept = [r for r in records if keep(r)]
    if len(kept) == len(records):
        return 0
    log = records_log(out)
    scratch = log.with_name(f".{log.name}.rewrite")
    with JsonlWriter(scratch) as writer:
        writer.write_all(kept)
    os.replace(scratch, log)
    if is_parquet(out) and Path(out).exists():
        Path(out).unlink()
    return len(records) - len(kept)


def run_job(
    items: Sequence[dict],
    out: str | Path,
    process: Callable[[list[dict]], list[dict]],
    chunk_size: int = 32,
    progress: bool = True,
    desc: str = "samples",
    summarize: Callable[[list[dict]], dict] | None = None,
    engine: Engine | None = None,
    identity: Callable[[dict], str] | None = None,
) -> dict:
    """Process ``items`` in chunks, appending ``process``'s records to ``out`` (JSONL, or Parquet when complete);
    returns the summary. One run writes ``out`` at a time (`avjudge.jsonl.output_lock`).

    ``engine`` (default: this process) runs ``process``; on Ray it travels to each actor by value, with the models
    it holds rebuilt there from their checkpoints. A `ClipJob` run here has its stages timed: the summary's
    ``stages`` gives each one's busy seconds and the one that bounds the run, as the progress bar does.
    ``identity`` (`media_identity`): what each item's record is computed from, kept in the record as
    ``computed_from``; a rerun scores again every item whose record was computed from something else.
    """
    check_output(out)
    with output_lock(out):
        return _run_job(items, out, process, chunk_size, progress, desc, summarize, engine, identity)


def _run_job(items, out, process, chunk_size, progress, desc, summarize, engine, identity) -> dict:
    ids = [item["id"] for item in items]
    if len(set(ids)) != len(ids):
        dupes = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise ValueError(f"ids must be unique; repeated: {dupes}")
    stale = 0
    if identity is not None:
        now = {item["id"]: identity(item) for item in items}
        stale = _drop_stale(out, lambda r: r["id"] not in now or r.get("computed_from") == now[r["id"]])
    done = {r["id"] for r in read_records(out)}
    todo = [item for item in items if item["id"] not in done]
    wanted, pending = set(ids), {item["id"] for item in todo}
    engine = engine or LocalEngine()
    # a job scored here in two stages has them timed (`avjudge.runtime.stages`)
    clock = StageClock() if getattr(engine, "scores_here", False) and isinstance(process, ClipJob) else None
    start = time.perf_counter()
    with (
        JsonlWriter(records_log(out)) as writer,
        tqdm(total=len(items), initial=len(items) - len(todo), desc=desc, disable=not progress, unit="sample") as bar,
    ):
        partial = [0.0]  # of the chunk being scored here, done so far (`avjudge.runtime.progress`)

        def moved(items: float) -> None:
            partial[0] += items
            bar.update(items)

        # an engine that scores elsewhere times nothing here, and is called as before the clock was
        timed = () if clock is None else (clock,)
        chunks = engine.run(todo, process, chunk_size, *timed)
        with listening(moved):
            for records in chunks:
                strays = [r["id"] for r in records if r["id"] not in wanted]
                if strays:
                    raise RuntimeError(f"the engine returned records of ids not asked for: {strays[:5]}")
                fresh = [r for r in records if r["id"] in pending]  # a batch redone after a crash: written once
                if identity is not None:  # as its item was when the run began: a file changed since is stale next run
                    fresh = [{**r, "computed_from": now[r["id"]]} for r in fresh]
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
        "rescored_as_changed": stale,
        "seconds_this_run": round(time.perf_counter() - start, 3),
        "output": str(out),
    }
    if clock is not None:  # which stage bounds the run (`avjudge.runtime.stages`)
        summary["stages"] = clock.report()
    if summarize:
        summary.update(summarize(records))
    write_json(summary_path(out), summary)
    return summary
