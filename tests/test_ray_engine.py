"""The Ray engine of batch jobs (`avjudge.ray_engine`) on a local 2-CPU Ray cluster: the same records as the local
engine, one per id, errors per row, an actor killed mid-run changing nothing, a killed CLI run resuming."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from avjudge.config import ConfigError
from avjudge.jsonl import read_jsonl
from avjudge.runtime import LocalEngine, make_engine, read_records, run_job

ray = pytest.importorskip("ray")
cloudpickle = pytest.importorskip("cloudpickle")
# the process functions below live in this test module, which Ray's workers cannot import: send them by value
cloudpickle.register_pickle_by_value(sys.modules[__name__])

CORRUPT = ("world0_00002", "world0_00007")


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """12 one-second world clips, two of them corrupt (one truncated, one not media at all)."""
    from avjudge.world import MANIFEST, WorldConfig, make_world

    out = tmp_path_factory.mktemp("ray_world")
    make_world(WorldConfig(n=12, seed=0, duration=1.0, max_duration=1.0, width=64, height=64), out, progress=False)
    records = list(read_jsonl(out / MANIFEST))
    by_id = {r["id"]: out / r["video"] for r in records}
    by_id[CORRUPT[0]].write_bytes(by_id[CORRUPT[0]].read_bytes()[:900])
    by_id[CORRUPT[1]].write_bytes(b"not a video")
    return out / MANIFEST


def _by_id(path: Path) -> dict[str, dict]:
    records = list(read_records(path))
    ids = [r["id"] for r in records]
    assert len(ids) == len(set(ids)), "an id was written twice"
    return {r["id"]: r for r in records}


def _assert_same(local: dict[str, dict], other: dict[str, dict], fields: tuple[str, ...]) -> None:
    assert set(other) == set(local)
    for key, record in local.items():
        assert bool(record.get("error")) == bool(other[key].get("error")), key
        for field in fields:
            a, b = record.get(field), other[key].get(field)
            assert (a is None) == (b is None), (key, field)
            if a is not None:
                assert abs(a - b) <= 1e-6, (key, field, a, b)


@pytest.fixture(scope="module")
def local_scores(world, tiny_judges, tmp_path_factory):
    """The tiny AV judge's scores of the world, from the local engine."""
    from avjudge.data import input_items
    from avjudge.judges import Judge
    from avjudge.scoring.jobs import score_items

    out = tmp_path_factory.mktemp("local_scores") / "scores.jsonl"
    judge = Judge.load("av", tiny_judges["qwen2_5_omni"], batch_size=4)
    score_items(judge, input_items(world), out, chunk_size=4, progress=False)
    return out


@contextmanager
def ray_data_plans():
    """The messages Ray Data's executor logs meanwhile (the plan of each dataset it runs), read from its module's
    logger: Ray Data's handlers write to the ``sys.stderr`` of the moment they were made, which under pytest may be
    an earlier test's capture (data-juicer's tests import ``ray.data``), and it replaces the handlers of its
    ``ray.data`` logger when it configures its logging, on its first run."""
    from ray.data._internal.execution import streaming_executor

    messages: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())
    streaming_executor.logger.addHandler(handler)
    try:
        yield messages
    finally:
        streaming_executor.logger.removeHandler(handler)


# Two actors of one CPU decode in the actor (Ray Data fuses the stages); actors of half a CPU leave decoding to tasks.
POOLS = {
    "fused": ({"actors": 2}, "ActorPoolMapOperator[MapBatches(_decode_batch)->MapBatches(_ChunkActor)]"),
    "decode-tasks": (
        {"actors": 1, "cpus_per_actor": 0.5},
        "TaskPoolMapOperator[MapBatches(_decode_batch)] -> ActorPoolMapOperator[MapBatches(_ChunkActor)]",
    ),
}


@pytest.mark.parametrize("pool", ["fused", pytest.param("decode-tasks", marks=pytest.mark.slow)])
def test_ray_scores_every_clip_once_as_the_local_engine_does(cluster, world, tiny_judges, local_scores, tmp_path, pool):
    import pyarrow
    import pyarrow.parquet as pq

    from avjudge.data import input_items
    from avjudge.judges import Judge
    from avjudge.scoring.jobs import score_items

    rows = [{k: item[k] for k in ("id", "video", "captions")} for item in input_items(world)]  # absolute paths
    pq.write_table(pyarrow.Table.from_pylist(rows), tmp_path / "world.parquet")
    items = input_items(tmp_path / "world.parquet")  # a cluster's manifest: Parquet
    judge = Judge.load("av", tiny_judges["qwen2_5_omni"], batch_size=4)
    options, plan = POOLS[pool]
    engine = make_engine("ray", **options)
    with ray_data_plans() as logged:
        summary = score_items(judge, items, tmp_path / "ray.parquet", chunk_size=4, progress=False, engine=engine)
    assert any(plan in line for line in logged)  # Ray Data logs the plan it runs
    on_ray = _by_id(tmp_path / "ray.parquet")  # the same columns as the local JSONL
    local = _by_id(local_scores)
    assert all(set(on_ray[k]) == set(local[k]) for k in local)
    _assert_same(local, on_ray, ("score", "delta", "p_yes", "p_no"))
    assert {k for k, r in on_ray.items() if r["error"]} == set(CORRUPT)
    assert all(on_ray[k]["score"] is None for k in CORRUPT)  # a clip that cannot be read is never scored as 0
    assert summary["done"] == len(items) and summary["errors"] == len(CORRUPT)


class CrashOnce:
    """A process function whose actor dies (``os._exit``) the first time it meets ``victim``."""

    def __init__(self, marker: Path, victim: str):
        self.marker, self.victim = marker, victim

    def __call__(self, chunk: list[dict]) -> list[dict]:
        if any(item["id"] == self.victim for item in chunk) and not self.marker.exists():
            self.marker.touch()
            os._exit(1)
        return [{"id": item["id"], "twice": 2 * item["x"]} for item in chunk]


def test_an_actor_killed_mid_run_changes_nothing_in_the_output(cluster, tmp_path):
    items = [{"id": f"c{i:03d}", "x": i} for i in range(40)]
    process = CrashOnce(tmp_path / "crashed", victim="c017")
    run_job(items, tmp_path / "ray.jsonl", process, chunk_size=4, progress=False, engine=make_engine("ray", actors=2))
    assert (tmp_path / "crashed").exists()  # the actor did die
    written = _by_id(tmp_path / "ray.jsonl")
    assert written == {f"c{i:03d}": {"id": f"c{i:03d}", "twice": 2 * i} for i in range(40)}


def _fails_on_bad(chunk: list[dict]) -> list[dict]:
    if any(item["id"] == "bad" for item in chunk):
        raise ValueError("cannot read bad")
    return [{"id": item["id"], "ok": True} for item in chunk]


@pytest.mark.parametrize("engine", ["local", "ray"])
def test_an_exception_in_one_row_is_that_rows_error_and_the_chunk_is_kept(engine, tmp_path, request):
    if engine == "ray":
        request.getfixturevalue("cluster")
    items = [{"id": i} for i in ("a", "b", "bad", "c", "d")]
    summary = run_job(
        items, tmp_path / "out.jsonl", _fails_on_bad, chunk_size=5, progress=False, engine=make_engine(engine)
    )
    written = _by_id(tmp_path / "out.jsonl")
    assert written["bad"] == {"id": "bad", "error": "ValueError: cannot read bad"}
    assert all(written[i] == {"id": i, "ok": True} for i in "abcd")
    assert summary["errors"] == 1


@pytest.mark.parametrize("fault", [MemoryError, AttributeError])
def test_a_bug_or_running_out_of_memory_stops_the_run_rather_than_marking_clips_done(fault, tmp_path):
    def faulty(chunk):
        raise fault("not the clip's fault")

    with pytest.raises(fault):
        run_job([{"id": "a"}, {"id": "b"}], tmp_path / "out.jsonl", faulty, progress=False)
    assert not list(read_jsonl(tmp_path / "out.jsonl"))  # nothing written: a rerun scores both


class DroppingEngine:
    """An engine that loses the last item of a job (as Ray would drop a failed block)."""

    name = "dropping"

    def run(self, todo, process, chunk_size):
        yield process(todo[:-1])


def test_a_run_whose_engine_lost_rows_fails_and_writes_no_summary(tmp_path):
    items = [{"id": i} for i in "abc"]
    with pytest.raises(RuntimeError, match=r"without records of 1 item\(s\), e.g. \['c'\]"):
        run_job(items, tmp_path / "out.jsonl", lambda chunk: list(chunk), progress=False, engine=DroppingEngine())
    assert [r["id"] for r in read_jsonl(tmp_path / "out.jsonl")] == ["a", "b"]  # kept: the rerun does "c" alone
    assert not (tmp_path / "out.summary.json").exists()


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "avjudge.cli", *args, "--no-progress"]


def test_filter_on_ray_keeps_and_drops_what_the_local_filter_does(cluster, world, tiny_judges, local_scores, tmp_path):
    from avjudge.filter import parse_rules, run_filter
    from avjudge.scoring.clip_scorer import ClipScorer
    from avjudge.scoring.dimensions import parse_dimensions

    scores = sorted(r["score"] for r in read_jsonl(local_scores) if r["score"] is not None)
    rules = f"av>={scores[len(scores) // 2]!r}"  # the median: some clips kept, some dropped
    scorer = ClipScorer(parse_dimensions("av"), {"av": tiny_judges["qwen2_5_omni"]})
    run_filter(world, parse_rules(rules), tmp_path / "local", scorer, progress=False)
    judge = f"av={tiny_judges['qwen2_5_omni']}"
    command = _cli("filter", "--input", str(world), "--rules", rules, "--judge", judge, "--out", str(tmp_path / "ray"))
    subprocess.run(command + ["--engine", "ray", "--address", cluster, "--actors", "2"], check=True)
    for name in ("kept", "dropped", "failed"):  # the same clips, in manifest order, with their scores
        local, on_ray = (
            list(read_jsonl(tmp_path / "local" / f"{name}.jsonl")),
            list(read_jsonl(tmp_path / "ray" / f"{name}.jsonl")),
        )
        assert [r["id"] for r in on_ray] == [r["id"] for r in local], name
        for a, b in zip(local, on_ray):
            assert a.get("dropped_by") == b.get("dropped_by") and a.get("failed_because") == b.get("failed_because")
            assert a["scores"].keys() == b["scores"].keys()
            assert all(abs(a["scores"][k] - b["scores"][k]) <= 1e-6 for k in a["scores"])
    assert [r["id"] for r in read_jsonl(tmp_path / "ray" / "failed.jsonl")] == list(CORRUPT)
    assert list(read_jsonl(tmp_path / "ray" / "kept.jsonl")) and list(read_jsonl(tmp_path / "ray" / "dropped.jsonl"))


@pytest.mark.slow  # DNSMOS on real weights, twice; CI runs it as `make test-slow`
def test_a_sigkilled_ray_run_resumes_to_the_local_result(cluster, world, tmp_path):
    from avjudge.scoring.jobs import run_metrics

    clips = [world.parent / "clips" / f"world0_{i:05d}.mp4" for i in range(5)]  # one corrupt (00002)
    run_metrics(["dnsmos"], clips, tmp_path / "local.jsonl", progress=False)
    inputs = [arg for clip in clips for arg in ("--input", str(clip))]
    out = tmp_path / "ray.jsonl"
    command = _cli("metrics", "run", "--metrics", "dnsmos", *inputs, "--out", str(out), "--batch-size", "1")
    command += ["--engine", "ray", "--address", cluster, "--actors", "1"]
    run = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and not (out.exists() and out.read_text().count("\n") >= 1):
        time.sleep(0.05)
    run.send_signal(signal.SIGKILL)
    run.wait()
    written_before = len(list(read_jsonl(out)))
    assert 1 <= written_before < len(clips)  # killed mid-run
    subprocess.run(command, check=True, capture_output=True)
    _assert_same(_by_id(tmp_path / "local.jsonl"), _by_id(out), ("dnsmos_ovrl", "dnsmos_sig", "dnsmos_bak"))
    summary = json.loads((tmp_path / "ray.summary.json").read_text())
    assert summary["resumed_from"] == written_before and summary["errors"] == 1


def test_engine_options_are_checked_before_anything_runs(cluster):
    assert make_engine("local") == LocalEngine()
    with pytest.raises(ConfigError, match="actors: not an option of --engine local"):
        make_engine("local", actors=2, address=None)
    with pytest.raises(ConfigError, match="known: local, ray"):
        make_engine("spark")
    with pytest.raises(ConfigError, match="at least 1"):
        make_engine("ray", actors=0)
    with pytest.raises(ConfigError, match="has 0 GPU"):
        make_engine("ray", gpus_per_actor=1).pool(ray)
    assert make_engine("ray").pool(ray) == (1, 0.0)
    assert make_engine("ray", actors=2).pool(ray, decodes=True) == (2, 0.0)  # they decode in the actors
    with pytest.raises(ConfigError, match="none of the cluster's 2 CPUs to decode clips: give fewer --actors"):
        make_engine("ray", actors=2, cpus_per_actor=0.75).pool(ray, decodes=True)
