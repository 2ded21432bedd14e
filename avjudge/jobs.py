"""Resumable batch jobs: per-sample JSONL written as it goes, a summary JSON at the end.

A job is a list of items with unique ``id``s and a function that turns a chunk of items
into one record per item. Killed and rerun with the same output, it skips the ids already
written and never writes one twice. An output ending in ``.parquet`` is written once the job is
complete, from the JSONL log of its records beside it (``OUT.partial.jsonl``), which is then removed.

An engine runs the function over the chunks: here in this process (``local``), or in a pool of
Ray actors across a cluster (``ray``, `avjudge.ray_engine`). Either way this process writes the
records as they come back, so the output, its resume and its summary are the same. A `ClipJob`
says what its work is in two stages, decoding (no model) and scoring, which Ray runs apart: the
clips decode in CPU tasks anywhere in the cluster while the actors score.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Callable, ClassVar, Iterator, Protocol, Sequence

from tqdm import tqdm

from .config import ConfigError
from .httpjson import HTTPFailure
from .jsonl import JsonlWriter, read_jsonl, write_json
from .media import decode_or_reason
from .tables import is_parquet, read_table, write_table

Process = Callable[[list[dict]], list[dict]]


# Errors of the code or the machine, not of a clip: recorded per row, they would mark every clip done with them.
RUN_FAULTS = (MemoryError, AttributeError, TypeError, NameError, ImportError)


def _run_fault(err: Exception) -> bool:
    transient = isinstance(err, HTTPFailure) and not err.final  # a server that may answer on the next run
    return isinstance(err, RUN_FAULTS) or transient or type(err).__name__ == "OutOfMemoryError"  # torch's CUDA OOM


def process_rows(process: Process, chunk: list[dict]) -> list[dict]:
    """``process``'s records for ``chunk``. Where it raises, the items are redone one at a time and an item that
    raises alone gets a record with its ``error``: one bad clip never takes its chunk down (nor, on Ray, its block).
    `RUN_FAULTS` (a bug, running out of memory) and a server that did not answer stop the run instead: a rerun
    scores those clips."""
    try:
        records = process(chunk)
    except Exception as err:
        if _run_fault(err):
            raise
        if len(chunk) == 1:
            return [{"id": chunk[0]["id"], "error": f"{type(err).__name__}: {err}"}]
        return [record for item in chunk for record in process_rows(process, [item])]
    if [r["id"] for r in records] != [item["id"] for item in chunk]:
        raise RuntimeError("a job's process function must return one record per item, in order")
    return records


def _decoded(options: dict, item: dict) -> dict:
    """``item`` with its ``clip`` (`avjudge.media.decode` with ``options``), or why it cannot be decoded (a string:
    the `MediaError`, or ``"<Type>: message"`` of anything else a clip raises, as `process_rows` records it)."""
    try:
        return {**item, "clip": decode_or_reason(item["video"], **options)}
    except Exception as err:
        if _run_fault(err):
            raise
        return {**item, "clip": f"{type(err).__name__}: {err}"}


def decode_rows(options: dict, chunk: list[dict], workers: int = 1) -> list[dict]:
    """Each item of ``chunk`` with its ``clip`` (see `_decoded`), decoded in ``workers`` threads."""
    if workers <= 1 or len(chunk) <= 1:
        return [_decoded(options, item) for item in chunk]
    with ThreadPoolExecutor(workers) as pool:  # PyAV releases the GIL
        return list(pool.map(lambda item: _decoded(options, item), chunk))


@dataclass(frozen=True)
class ClipJob:
    """A job's process in two stages: decode each item's ``video`` once (no model), then ``score`` the chunk.

    Called on a chunk, it runs both here. The Ray engine runs them apart: decoding in CPU tasks (only
    ``decode_options`` travel to them), scoring in the actors that hold the models.

    Attributes:
        decode_options: `avjudge.media.decode`'s keyword arguments: what every model of the job needs from a clip.
        score: items with their ``clip`` (a `MediaClip`, or why it could not be decoded) -> one record each.
        workers: threads that decode a chunk here.
    """

    decode_options: dict
    score: Process
    workers: int = 2

    def __call__(self, chunk: list[dict]) -> list[dict]:
        return self.score(decode_rows(self.decode_options, chunk, self.workers))


class Engine(Protocol):
    name: ClassVar[str]
    # whether the process functions run in this process: where not, models need not load here (`Judge.load`'s
    # defer_weights), they load where they score
    scores_here: ClassVar[bool]

    def run(self, todo: list[dict], process: Process, chunk_size: int) -> Iterator[list[dict]]:
        """Records of every item of ``todo``, a batch at a time, in any order."""
        ...


@dataclass(frozen=True)
class LocalEngine:
    """Chunks one after another in this process."""

    name: ClassVar[str] = "local"
    scores_here: ClassVar[bool] = True

    def run(self, todo: list[dict], process: Process, chunk_size: int) -> Iterator[list[dict]]:
        for i in range(0, len(todo), chunk_size):
            yield process_rows(process, todo[i : i + chunk_size])


def _ray_engine() -> type:
    from .ray_engine import RayEngine  # Ray is an optional extra: imported only when asked for

    return RayEngine


ENGINES: dict[str, Callable[[], type]] = {"local": lambda: LocalEngine, "ray": _ray_engine}


def make_engine(name: str = "local", **options) -> Engine:
    """The engine called ``name`` (local, ray) with its options (`avjudge.ray_engine.RayEngine`'s fields; None: not
    given)."""
    if name not in ENGINES:
        raise ConfigError(f"unknown engine {name!r}; known: {', '.join(ENGINES)}")
    cls = ENGINES[name]()
    given = {k: v for k, v in options.items() if v is not None}
    foreign = [k for k in given if k not in {f.name for f in fields(cls)}]
    if foreign:
        raise ConfigError(f"{', '.join(foreign)}: not an option of --engine {name} (--engine ray takes them)")
    return cls(**given)


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
    it holds rebuilt there from their checkpoints.
    """
    ids = [item["id"] for item in items]
    if len(set(ids)) != len(ids):
        dupes = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise ValueError(f"ids must be unique; repeated: {dupes}")
    done = {r["id"] for r in read_records(out)}
    todo = [item for item in items if item["id"] not in done]
    wanted, pending = set(ids), {item["id"] for item in todo}
    start = time.perf_counter()
    with (
        JsonlWriter(records_log(out)) as writer,
        tqdm(total=len(items), initial=len(items) - len(todo), desc=desc, disable=not progress, unit="sample") as bar,
    ):
        for records in (engine or LocalEngine()).run(todo, process, chunk_size):
            strays = [r["id"] for r in records if r["id"] not in wanted]
            if strays:
                raise RuntimeError(f"the engine returned records of ids not asked for: {strays[:5]}")
            fresh = [r for r in records if r["id"] in pending]  # a batch redone after a crash: written once
            pending.difference_update(r["id"] for r in fresh)
            writer.write_all(fresh)
            bar.update(len(fresh))
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
    if summarize:
        summary.update(summarize(records))
    write_json(summary_path(out), summary)
    return summary
