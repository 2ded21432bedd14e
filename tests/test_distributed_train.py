"""Training with two processes (torchrun, gloo on CPU): plain DDP, DeepSpeed ZeRO-2 and ZeRO-3 train the tiny AT
judge as one run (the same weights on both processes, each held-out evaluation scored in shards and written once,
the saved judge scoring as the last evaluation did), a SIGKILLed run resumes, and a DDP checkpoint resumes in one
process. The launch lines are the docs' (training page)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from avjudge.config import ConfigError, load_config
from avjudge.data import PairDataset, load_manifest, load_pairs
from avjudge.judges import Judge
from avjudge.perturb import SourcePool
from avjudge.resources import resolve
from avjudge.train import TrainConfig, build_training, run_training
from avjudge.train import trainer as training
from avjudge.train.trainer import HeldOutEvaluation, prepared_pairs, shard

HELD_OUT = 7  # odd, so the two shards differ in size and the shorter one is padded


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _overrides(tiny_judges, pairs, out: Path, **extra) -> list[str]:
    values = {
        "model": tiny_judges["qwen2_audio"],
        "dataset": pairs,
        "output_dir": out,
        "max_steps": 6,
        "eval_steps": 3,
        "save_steps": 3,
        "logging_steps": 1,
        "max_eval_pairs": HELD_OUT,
        "per_device_train_batch_size": 2,
        "num_train_epochs": 100,
        **extra,
    }
    return [f"{k}={v}" for k, v in values.items()]


def _torchrun(overrides: list[str]) -> subprocess.Popen:
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port"]
    command += [str(_free_port()), "-m", "avjudge.cli", "train", "--config", "tiny_world_at"]
    for item in overrides:
        command += ["--set", item]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline"}
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True
    )


def _held_out_scores(pairs: Path, folder: Path) -> list[float]:
    judge = Judge.load("at", folder)
    pool = SourcePool(load_manifest(json.loads((pairs / "stats.json").read_text())["manifest"]))
    dataset = PairDataset(
        load_pairs(pairs, "at", "test", HELD_OUT), pool, judge.settings.sample_rate, judge.settings.fps, pairs
    )
    return [r.score for r in judge.score_prepared(prepared_pairs(judge, dataset))]


# ZeRO-2 runs with the slow set (71 s; CI runs it): ZeRO-3 already shards through DeepSpeed in the default set; the
# pairwise objective (bt) under ZeRO-3 with the slow set too
@pytest.mark.parametrize(
    "deepspeed, objective",
    [
        (None, "sft"),
        pytest.param("zero2", "sft", marks=pytest.mark.slow),
        ("zero3", "sft"),
        pytest.param("zero3", "bt", marks=pytest.mark.slow),
    ],
)
def test_two_processes_train_one_judge(tiny_judges, pairs, tmp_path, deepspeed, objective):
    out = tmp_path / "run"
    extra = {"deepspeed": deepspeed} if deepspeed else {}
    extra["objective"] = objective
    run = _torchrun(_overrides(tiny_judges, pairs, out, **extra))
    log, _ = run.communicate(timeout=600)
    assert run.returncode == 0, log[-3000:]
    record = json.loads((out / "final" / "avjudge_train.json").read_text())
    assert record["processes"] == 2 and record["replicas_agree"] and record["steps"] == 6
    assert record["deepspeed_zero_stage"] == (int(deepspeed[-1]) if deepspeed else None)
    assert log.count("trained 6 steps") == 1  # one process speaks for the run
    evaluations = sorted((out / "eval").glob("step_*.json"))
    assert [p.name for p in evaluations] == ["step_000000.json", "step_000003.json", "step_000006.json"]
    last = json.loads(evaluations[-1].read_text())
    assert last["processes"] == 2 and len(last["scores"]) == HELD_OUT  # both shards gathered
    np.testing.assert_allclose(_held_out_scores(pairs, out / "final"), list(last["scores"].values()), atol=1e-5)
    if deepspeed:  # ZeRO's optimiser partitions resume on two processes only: one process is told how to go on
        config = load_config(
            TrainConfig, resolve("tiny_world_at", "train_config"), _overrides(tiny_judges, pairs, out, **extra)
        )
        with pytest.raises(ConfigError, match="saved under ZeRO by 2 processes and this run has 1"):
            run_training(replace(config, trainer={**config.trainer, "max_steps": 9}))


def test_a_killed_two_process_run_resumes_and_its_checkpoint_loads_in_one_process(tiny_judges, pairs, tmp_path):
    out = tmp_path / "run"
    run = _torchrun(_overrides(tiny_judges, pairs, out, max_steps=9))
    deadline = time.monotonic() + 300
    while not (out / "checkpoint-3" / "avjudge_train.json").is_file():
        assert run.poll() is None and time.monotonic() < deadline, "no checkpoint before the run ended"
        time.sleep(0.2)
    os.killpg(run.pid, signal.SIGKILL)  # the launcher and both workers, mid-run
    run.wait()
    assert not (out / "final").exists()
    rerun = _torchrun(_overrides(tiny_judges, pairs, out, max_steps=9))
    log, _ = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, log[-3000:]
    record = json.loads((out / "final" / "avjudge_train.json").read_text())
    assert record["steps"] == 9 and record["eval_before"] is None  # resumed from a checkpoint, not begun anew
    # the two-process checkpoint goes on in one process
    config = load_config(
        TrainConfig,
        resolve("tiny_world_at", "train_config"),
        _overrides(tiny_judges, pairs, out, max_steps=12, report_to="[]"),
    )
    assert run_training(config)["steps"] == 12


def test_each_process_scores_and_writes_only_its_share(tiny_judges, pairs, tmp_path, monkeypatch):
    """As rank 1 of 2 sees it: the odd pairs (the shorter shard padded to the longer), and nothing written."""
    monkeypatch.setattr(training, "process_rank", lambda: (1, 2))
    assert shard(7) == [1, 3, 5, 5] and shard(1) == [0]
    elsewhere = 0.123456789  # what the other process scored, as this one receives it
    monkeypatch.setattr(training, "gathered", lambda values: {i: elsewhere for i in range(HELD_OUT)} | values)
    judge = Judge.load("at", tiny_judges["qwen2_audio"])
    pool = SourcePool(load_manifest(json.loads((pairs / "stats.json").read_text())["manifest"]))
    dataset = PairDataset(
        load_pairs(pairs, "at", "test", HELD_OUT), pool, judge.settings.sample_rate, judge.settings.fps, pairs
    )
    evaluation = HeldOutEvaluation(judge, dataset, tmp_path)
    assert len(evaluation.prepared) == 4
    metrics = evaluation(0)
    assert [s != elsewhere for s in metrics["scores"].values()] == [i in (1, 3, 5) for i in range(HELD_OUT)]
    assert not (tmp_path / "eval").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="what CPU training says about FSDP")
def test_fsdp_without_gpus_is_refused_rather_than_silently_ddp(tiny_judges, pairs, tmp_path):
    config = load_config(
        TrainConfig,
        resolve("tiny_world_at", "train_config"),
        _overrides(tiny_judges, pairs, tmp_path, fsdp="full_shard"),
    )
    with pytest.raises(ConfigError, match="fsdp needs GPUs"):
        build_training(config)


def test_each_process_trains_on_its_own_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert training.process_device() == "cuda:3"  # not every process on cuda:0
    assert training.process_device(use_cpu=True) == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert training.process_device() == "cpu"


def test_a_worker_ends_with_its_output_flushed_and_no_teardown():
    code = (
        "import atexit, logging, sys\n"
        "from avjudge.train.trainer import end_worker\n"
        "atexit.register(lambda: print('teardown ran'))\n"
        "print('written', end='')\n"
        "logging.getLogger('avjudge').warning('logged')\n"
        "end_worker()\n"
        "print('after')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "written" and "logged" in done.stderr  # buffered output reaches the pipe; nothing after
