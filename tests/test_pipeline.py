"""A scoring job at the pace of its slower stage: clips decoded in processes and handed back through shared memory
while a model that holds Python's lock (a stand-in for one on a GPU) scores, never waiting for the sum of both."""

import os
import time
from multiprocessing import shared_memory

import numpy as np
import pytest

import avjudge.media.processes as processes_module
from avjudge.cli import main
from avjudge.errors import is_run_fault
from avjudge.jsonl import read_jsonl
from avjudge.judges import Judge, ScoreResult
from avjudge.media import DecodeNeeds, decode
from avjudge.media.processes import collect, decoding_processes, machine_cores, submit_decoding
from avjudge.media.shared import receive, share
from avjudge.runtime import ClipJob, LocalEngine, run_job
from avjudge.scoring import JudgeScorer, Scoring
from avjudge.scoring.core import Decoder, clip_of
from avjudge.scoring.jobs import score_with
from avjudge.scoring.standin import StandInScorer
from avjudge.serve.service import ScoreService

NEEDS = DecodeNeeds(video=True, audio=True, fps=8.0, max_pixels=96 * 96, sample_rate=16000, channels=1)


@pytest.fixture
def received(monkeypatch):
    """How many results of a decoding process this process has read back (a clip, or a job's item, each)."""
    count = [0]
    real = processes_module.received

    def counting(value):
        count[0] += 1
        return real(value)

    monkeypatch.setattr(processes_module, "received", counting)
    return count


def world_items(world) -> list[dict]:
    return [{"id": p.stem, "video": str(p)} for p in sorted(world.rglob("*.mp4"))]


def test_a_clip_through_shared_memory_is_the_same_clip_and_its_block_is_removed(small_world):
    clip = decode(world_items(small_world)[0]["video"], fps=8.0, sample_rate=16000, channels=1)
    shared = share(clip)
    back = receive(shared)
    np.testing.assert_array_equal(back.frames, clip.frames)
    np.testing.assert_array_equal(back.timestamps, clip.timestamps)
    np.testing.assert_array_equal(back.audio, clip.audio)
    assert (back.fps, back.sample_rate, back.duration, back.source) == (clip.fps, clip.sample_rate, clip.duration,
                                                                       clip.source)  # fmt: skip
    with pytest.raises(FileNotFoundError):  # read once, then gone: nothing is left in /dev/shm
        shared_memory.SharedMemory(name=shared.block)


def test_a_clip_decoded_in_a_decoding_process_equals_the_one_decoded_here(small_world, corrupt):
    item = world_items(small_world)[0]
    here = clip_of(item, NEEDS)
    there = collect(submit_decoding(1, clip_of, item, NEEDS))
    np.testing.assert_array_equal(there.frames, here.frames)
    np.testing.assert_array_equal(there.audio, here.audio)
    assert collect(submit_decoding(1, clip_of, {"video": corrupt}, NEEDS)) == clip_of({"video": corrupt}, NEEDS)


def test_the_default_decoding_processes_follow_what_the_model_holds():
    assert decoding_processes(None, model_holds_interpreter=True) == max(1, machine_cores() - 1)
    assert decoding_processes(None, model_holds_interpreter=False) == 0  # a model on the CPU: threads decode
    assert decoding_processes(1, model_holds_interpreter=False) == 1  # what is asked, up to the cores


def test_a_judge_holds_the_interpreter_on_a_gpu_only(tiny_judges):
    on_cpu = Judge.load("av", tiny_judges["qwen2_5_omni"], device="cpu")
    assert not on_cpu.holds_interpreter and not JudgeScorer(on_cpu).holds_interpreter
    on_gpu = Judge.load("av", tiny_judges["qwen2_5_omni"], device="cuda", defer_weights=True)
    assert on_gpu.holds_interpreter  # read from its settings: the weights are not loaded for it


def test_a_job_whose_model_holds_the_lock_runs_at_the_pace_of_its_slower_stage(small_world, tmp_path, received):
    items = world_items(small_world) * 8  # the same files under other ids: 48 clips
    items = [{**item, "id": f"{item['id']}_{k}"} for k, item in enumerate(items)]
    run_job(items[:2], tmp_path / "warm.jsonl", ClipJob(Decoder(NEEDS), _ids, decode_apart=True), progress=False)
    start = time.perf_counter()
    decoded = [clip_of(item, NEEDS) for item in items]
    decode_alone = time.perf_counter() - start
    scorer = StandInScorer(NEEDS, seconds_per_clip=decode_alone / len(items))
    start = time.perf_counter()
    scorer.score(decoded, [{}] * len(items))
    scorer_alone = time.perf_counter() - start
    received[0] = 0

    summary = score_with(Scoring([scorer]), "stand-in", "stand-in", items, tmp_path / "s.jsonl", 8, False)

    # both stages alone take about as long as each other: run one after the other they would take their sum
    assert summary["seconds_this_run"] < 0.8 * (decode_alone + scorer_alone), (summary, decode_alone, scorer_alone)
    assert received[0] == len(items)  # every clip decoded in a decoding process, handed back through shared memory
    stages = summary["stages"]
    assert max(stages["decode_busy_s"], stages["score_busy_s"]) <= summary["seconds_this_run"]
    records = {r["id"]: r for r in read_jsonl(tmp_path / "s.jsonl")}
    for item, clip in zip(items, decoded):  # the stand-in's outputs are a judge's, from the clip it was handed
        expected = StandInScorer.result(clip).to_dict()  # every number of a ScoreResult, as a judge's record holds them
        assert set(expected) == set(ScoreResult.__dataclass_fields__) and expected["error"] is None
        assert {k: records[item["id"]][k] for k in expected} == pytest.approx(expected)


def _ids(chunk: list[dict]) -> list[dict]:
    return [{"id": item["id"]} for item in chunk]


def _decode_refusing_one(chunk: list[dict]) -> list[dict]:
    """A decoding stage that raises for the item ``refused``, as a bug of one clip's decoding would."""
    if any(item["id"] == "refused" for item in chunk):
        raise ValueError("this clip breaks the decoder")
    return Decoder(NEEDS)(chunk)


def _score_decoded(chunk: list[dict]) -> list[dict]:
    return [{"id": item["id"], "frames": int(item["clip"].frames.shape[0])} for item in chunk]


def test_a_clip_whose_decoding_raises_in_a_process_fails_alone(small_world, tmp_path):
    items = world_items(small_world)[:3]
    items.insert(1, {"id": "refused", "video": items[0]["video"]})
    engine = LocalEngine(decode_processes=1)
    run_job(items, tmp_path / "out.jsonl", ClipJob(_decode_refusing_one, _score_decoded), 2, False, engine=engine)
    records = {r["id"]: r for r in read_jsonl(tmp_path / "out.jsonl")}
    assert records["refused"]["error"] == "ValueError: this clip breaks the decoder"
    assert all(records[item["id"]]["frames"] > 0 for item in items if item["id"] != "refused")


def test_a_decoding_process_that_dies_stops_the_run_and_the_next_call_gets_a_new_pool(small_world):
    with pytest.raises(Exception) as died:
        collect(submit_decoding(1, os._exit, 3))  # killed, as for memory
    assert is_run_fault(died.value)  # a rerun decodes those clips; none is recorded as failed
    item = world_items(small_world)[0]
    assert collect(submit_decoding(1, clip_of, item, NEEDS)).frames is not None


def test_filter_decodes_in_its_decoding_processes(tiny_judges, small_world, tmp_path, received):
    manifest = small_world / "world.jsonl"
    args = ["filter", "--input", str(manifest), "--out", str(tmp_path / "kept"), "--rules", "av>=0"]
    args += ["--judge", f"av={tiny_judges['qwen2_5_omni']}", "--decode-processes", "1", "--no-progress"]
    assert main(args) == 0
    assert received[0] == len(world_items(small_world))


def test_serve_decodes_in_its_decoding_processes(tiny_judges, small_world, received):
    judge = Judge.load("av", tiny_judges["qwen2_5_omni"], device="cpu")
    items = world_items(small_world)[:3]
    in_threads = ScoreService({"av": judge}, decode_processes=0).score_records(
        [{"id": i["id"], "judge": "av", "video": i["video"]} for i in items]
    )
    assert received[0] == 0
    service = ScoreService({"av": judge}, decode_processes=1)
    got = service.score_records([{"id": i["id"], "judge": "av", "video": i["video"]} for i in items])
    assert received[0] == len(items)
    assert [r["score"] for r in got] == pytest.approx([r["score"] for r in in_threads], abs=1e-6)


def test_the_scaler_on_one_thread_gives_the_frames_it_gave_on_a_thread_per_core(small_world, monkeypatch):
    from avjudge.media import threads as ffmpeg_threads

    video = world_items(small_world)[0]["video"]
    one = decode(video, fps=8.0, max_pixels=96 * 96)
    monkeypatch.setattr(ffmpeg_threads, "SCALER", 0)  # FFmpeg's default: a thread per core
    per_core = decode(video, fps=8.0, max_pixels=96 * 96)
    assert one.frames.shape[1] * one.frames.shape[2] <= 96 * 96 < 256 * 256  # scaled, not kept
    np.testing.assert_array_equal(one.frames, per_core.frames)
