"""The Ray engine of batch jobs: a job's chunks scored by a pool of Ray actors across a cluster.

The job's process function travels to each actor by value (cloudpickle); the judges and metrics it
holds travel as what builds them (`Judge.__reduce__`, `Metric.__reduce__`), so each actor loads its
models once, on its own device. A `avjudge.runtime.chunks.ClipJob` has its clips decoded first, in CPU tasks
that hold no model, one CPU each, anywhere in the cluster, while GPU actors only score (actors that
ask for what the tasks ask for, one CPU and no GPU, decode in the actor: Ray Data fuses the two
stages, which spares sending frames between processes). Rows travel as
pickled items and come back as JSON records, the same lines the local engine writes; this process
writes them (`avjudge.runtime.jobs.run_job`), so a killed run resumes from its output like a local one and
every id is written once.

Fault tolerance, from Ray's defaults and ours:
- an exception in one clip is caught in the actor and becomes that row's ``error``
  (`avjudge.runtime.chunks.process_rows`): Ray would otherwise fail the whole block;
- an actor that dies (a crash, an out-of-memory kill, a lost node) is restarted and its batch
  redone (Ray Data gives actor pools ``max_restarts=-1`` and ``max_task_retries=-1``); rows of a
  batch redone are written once.
"""

from __future__ import annotations

import json
import logging
import pickle
from dataclasses import dataclass
from typing import ClassVar, Iterator

import numpy as np

from ..config import ConfigError
from .chunks import ClipJob, Process, process_rows


def _decode_batch(batch: dict[str, np.ndarray], decode: Process) -> dict[str, np.ndarray]:
    """A CPU task: the items of a batch with their clips decoded (a `ClipJob`'s ``decode``)."""
    decoded = decode([pickle.loads(blob) for blob in batch["item"]])
    return {"id": batch["id"], "item": np.array([pickle.dumps(item) for item in decoded], dtype=object)}


class _ChunkActor:
    """One actor of the pool: builds the process once (models load here), then scores batches of rows."""

    def __init__(self, process: Process):
        self.process = process

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        chunk = [pickle.loads(blob) for blob in batch["item"]]
        records = process_rows(self.process, chunk)
        return {
            "id": np.array([r["id"] for r in records], dtype=object),
            "record": np.array([json.dumps(r, ensure_ascii=False) for r in records], dtype=object),
        }


@dataclass(frozen=True)
class RayEngine:
    """Chunks scored by a pool of Ray actors.

    Attributes:
        address: ``local`` (a Ray cluster on this machine, started here), ``auto`` (the cluster this machine
            belongs to) or ``ray://HOST:10001``. A session already started in this process is used as it is.
        actors: actors in the pool, each holding its own models (default: one per GPU, or one without GPUs).
        gpus_per_actor: GPUs each actor takes (default: 1 where the cluster has GPUs, else 0).
        cpus_per_actor: CPUs each actor takes; its decoding threads run inside them.
    """

    name: ClassVar[str] = "ray"
    scores_here: ClassVar[bool] = False
    address: str = "local"
    actors: int | None = None
    gpus_per_actor: float | None = None
    cpus_per_actor: float = 1.0

    def __post_init__(self):
        if self.actors is not None and self.actors < 1:
            raise ConfigError(f"--actors must be at least 1, got {self.actors}")
        if self.gpus_per_actor is not None and self.gpus_per_actor < 0:
            raise ConfigError(f"--gpus-per-actor cannot be negative, got {self.gpus_per_actor}")

    def connect(self):
        """Ray, connected to the cluster ``address`` names (a session already started here is used as it is)."""
        try:
            import ray
        except ImportError as err:
            raise ConfigError("--engine ray needs Ray: pip install 'avjudge[ray]'") from err
        if not ray.is_initialized():  # "local" starts a cluster of its own even beside another one
            ray.init(address=self.address, include_dashboard=False, logging_level=logging.WARNING)
        return ray

    def pool(self, ray, decodes: bool = False) -> tuple[int, float]:
        """(actors, GPUs per actor) for this cluster; ``decodes``: a job that decodes clips, in tasks beside the actors
        unless Ray Data fuses them into the actors (both asking for one CPU and no GPU)."""
        resources = ray.cluster_resources()
        gpus, cpus = resources.get("GPU", 0), resources.get("CPU", 0)
        per_actor = self.gpus_per_actor if self.gpus_per_actor is not None else (1.0 if gpus else 0.0)
        if per_actor > gpus:
            raise ConfigError(f"--gpus-per-actor {per_actor:g}: the cluster has {gpus:g} GPU(s)")
        actors = self.actors or (max(1, int(gpus // per_actor)) if per_actor else 1)
        apart = per_actor > 0 or self.cpus_per_actor != 1
        if decodes and apart and actors * self.cpus_per_actor > cpus - 1:
            raise ConfigError(
                f"{actors} actor(s) of {self.cpus_per_actor:g} CPU would leave none of the cluster's {cpus:g} CPUs "
                "to decode clips: give fewer --actors"
            )
        return actors, per_actor

    def run(self, todo: list[dict], process: Process, chunk_size: int, clock=None) -> Iterator[list[dict]]:
        # ``clock``: stages run across the cluster are not timed here (`scores_here` is False)
        if not todo:
            return
        ray = self.connect()
        context = ray.data.DataContext.get_current()
        context.max_errored_blocks = 0  # a block that fails fails the run: rows are never dropped silently
        context.enable_progress_bars = False  # the job's own bar counts rows written
        actors, gpus = self.pool(ray, decodes=isinstance(process, ClipJob))
        rows = ray.data.from_items([{"id": item["id"], "item": pickle.dumps(item)} for item in todo])
        if isinstance(process, ClipJob):  # decoding in tasks, scoring in the actors
            rows = rows.map_batches(
                _decode_batch,
                fn_kwargs={"decode": process.decode},
                batch_size=chunk_size,
                num_cpus=1,
                batch_format="numpy",
            )
            process = process.score
        scored = rows.map_batches(
            _ChunkActor,
            fn_constructor_args=(process,),
            batch_size=chunk_size,
            compute=ray.data.ActorPoolStrategy(size=actors),
            num_cpus=self.cpus_per_actor,
            num_gpus=gpus,
            batch_format="numpy",
        )
        for batch in scored.iter_batches(batch_size=None, batch_format="numpy"):
            yield [json.loads(line) for line in batch["record"]]
