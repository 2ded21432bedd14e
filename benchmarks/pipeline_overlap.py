"""A scoring job at the pace of its slower stage: `avjudge score`'s job over world clips with a stand-in for a judge on
a GPU (`avjudge.scoring.standin`), each stage alone and the whole job, in one run.

On an H200 the AV judge's stages alone ran at decode 9.82 and forward 10.54 clips/s, and end to end at 5.93: the
sum of the two, not the slower (issue #74). What made them add up is on the CPU: the forward's thread holds Python's
lock for 96 % of its time (launching kernels), so decoding in threads of its process waits for it. The stand-in
does the same per clip, at this machine's decode rate times the GPU's forward / decode ratio, and reads the AV
judge's real inputs (clips decoded by the tiny AV judge's plan: its sampling's frame rate, its frame size).

Rows, each the same clips:
  decode alone      the job's decoding stage with a scorer that takes no time (the default decoding processes)
  stand-in alone    the stand-in scoring the clips already decoded
  pipeline          `avjudge score`'s job (`score_with`, the default local engine): decoding processes, shared
                    memory, a bounded queue of chunks
  threads           the same job decoding in a thread of the model's process (--decode-processes 0): the old path
and the hand-back of one decoded clip from a decoding process beside the stand-in's held lock: through the pool's
pipe (pickled) and through shared memory (`avjudge.media.shared`); a clip's decode in this process, alone, with
FFmpeg's frame scaler on one thread (`avjudge.media.threads`) and on its default of a thread per core; and the real
tiny AV judge on the CPU through `avjudge score`'s job (`score_items`), as it runs now and with the scaler as it
was (a thread per core), with the largest score difference.

    python benchmarks/pipeline_overlap.py [--clips 160] [--out benchmarks/results/pipeline_overlap_cpu2.json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from avjudge.jsonl import read_jsonl
from avjudge.judges import Judge
from avjudge.judges.tiny import make_tiny_judges
from avjudge.media import threads as ffmpeg_threads
from avjudge.media.processes import collect, decoding_pool, decoding_processes, submit_decoding
from avjudge.runtime import ClipJob, LocalEngine, run_job
from avjudge.scoring.core import Decoder, Scoring, clip_of
from avjudge.scoring.jobs import score_items, score_with
from avjudge.scoring.standin import StandInScorer, hold_interpreter
from avjudge.world import MANIFEST, WorldConfig, make_world

GPU_DECODE, GPU_FORWARD = 9.82, 10.54  # clips/s alone on the H200, batch 8 (issue #74)


def items_of(world: Path, clips: int) -> list[dict]:
    records = list(read_jsonl(world / MANIFEST))[:clips]
    return [{"id": r["id"], "video": str(world / r["video"])} for r in records]


def decode_alone(items: list[dict], needs, out: Path) -> tuple[float, list]:
    """Clips/s of the job's decoding stage (default processes for a model that holds the lock), and the clips."""
    kept = []

    def keep(chunk: list[dict]) -> list[dict]:
        kept.extend(item["clip"] for item in chunk)
        return [{"id": item["id"]} for item in chunk]

    job = ClipJob(Decoder(needs), keep, decode_apart=True)
    start = time.perf_counter()
    run_job(items, out, job, chunk_size=8, progress=False)
    return len(items) / (time.perf_counter() - start), kept


def job_rate(scorer: StandInScorer, items: list[dict], out: Path, engine: LocalEngine | None) -> tuple[float, dict]:
    summary = score_with(Scoring([scorer]), "stand-in", "stand-in", items, out, 8, False, engine)
    return len(items) / summary["seconds_this_run"], summary


def hand_back(clip_paths: list[str], needs, through_shared_memory: bool) -> float:
    """Seconds per clip to decode one clip in a decoding process and have it here, beside a thread that holds the
    lock as the stand-in does (a clip at a time: the hand-back is not hidden behind other clips' decoding)."""
    pool = decoding_pool(1)
    stop = threading.Event()

    def model() -> None:
        while not stop.is_set():
            hold_interpreter(0.05)

    thread = threading.Thread(target=model)
    thread.start()
    try:
        start = time.perf_counter()
        for path in clip_paths:
            item = {"video": path}
            if through_shared_memory:
                collect(submit_decoding(1, clip_of, item, needs))
            else:
                pool.submit(clip_of, item, needs).result()
        return (time.perf_counter() - start) / len(clip_paths)
    finally:
        stop.set()
        thread.join()


@contextmanager
def scaler_threads(threads: int):
    """FFmpeg's frame scaler on ``threads`` threads (0: its default, a thread per core) in this process."""
    kept = ffmpeg_threads.SCALER
    ffmpeg_threads.SCALER = threads
    try:
        yield
    finally:
        ffmpeg_threads.SCALER = kept


def scaler_seconds(clip_paths: list[str], needs, threads: int) -> float:
    """Seconds per clip decoded in this process with the frame scaler on ``threads`` threads."""
    with scaler_threads(threads):
        start = time.perf_counter()
        for path in clip_paths:
            clip_of({"video": path}, needs)
        return (time.perf_counter() - start) / len(clip_paths)


def tiny_judge_job(judge: Judge, items: list[dict], out: Path, threads: int) -> tuple[float, list[float]]:
    """Seconds of `avjudge score`'s job with the tiny judge on the CPU (its defaults), the scaler on ``threads``."""
    with scaler_threads(threads):
        summary = score_items(judge, items, out, progress=False)
    return summary["seconds_this_run"], [r["score"] for r in sorted(read_jsonl(out), key=lambda r: r["id"])]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clips", type=int, default=160)
    p.add_argument("--world", type=Path, help="a world folder to read (default: one made here, 4 s clips)")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/pipeline_overlap_cpu2.json"))
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        world = args.world
        if world is None:
            world = tmp / "world"
            make_world(WorldConfig(n=args.clips, duration=4.0, seed=74), world, progress=False)
        items = items_of(world, args.clips)
        judge = Judge.load("av", make_tiny_judges(tmp / "tiny")["qwen2_5_omni"], device="cpu")
        needs = judge.needs
        processes = decoding_processes(None)
        collect(submit_decoding(processes, clip_of, items[0], needs))  # the pool started, its imports done

        decode_rate, clips = decode_alone(items, needs, tmp / "decode.jsonl")
        scorer = StandInScorer(needs, seconds_per_clip=1 / (decode_rate * GPU_FORWARD / GPU_DECODE))
        start = time.perf_counter()
        scorer.score(clips, [{}] * len(clips))
        standin_rate = len(clips) / (time.perf_counter() - start)
        pipeline_rate, pipeline = job_rate(scorer, items, tmp / "pipeline.jsonl", None)
        threads_rate, threads = job_rate(scorer, items, tmp / "threads.jsonl", LocalEngine(decode_processes=0))
        scores = [r["score"] for r in read_jsonl(tmp / "pipeline.jsonl")]
        assert scores == [r["score"] for r in read_jsonl(tmp / "threads.jsonl")], "the two paths scored differently"
        sample = [item["video"] for item in items[:24]]
        pipe_s = hand_back(sample, needs, through_shared_memory=False)
        shared_s = hand_back(sample, needs, through_shared_memory=True)
        scaler = {f"{n}_threads" if n else "a_thread_per_core": scaler_seconds(sample, needs, n) for n in (1, 0)}
        tiny_now, now_scores = tiny_judge_job(judge, items, tmp / "tiny_now.jsonl", ffmpeg_threads.SCALER)
        tiny_before, before_scores = tiny_judge_job(judge, items, tmp / "tiny_before.jsonl", 0)

    slower = min(decode_rate, standin_rate)
    frame = clips[0].frames
    result = {
        "machine": {"cores": os.cpu_count(), "decoding_processes": processes},
        "clips": len(items),
        "clip": {"seconds": clips[0].duration, "frames": list(frame.shape), "audio": list(clips[0].audio.shape)},
        "needs": {"fps": needs.fps, "max_pixels": needs.max_pixels, "sample_rate": needs.sample_rate},
        "stand_in": {"seconds_per_clip": scorer.seconds_per_clip, "held": scorer.held, "batch_size": 8},
        "clips_per_s": {
            "decode_alone": decode_rate,
            "stand_in_alone": standin_rate,
            "pipeline": pipeline_rate,
            "threads": threads_rate,
        },
        "pipeline_vs_slower_stage": pipeline_rate / slower,
        "threads_vs_slower_stage": threads_rate / slower,
        "sum_of_stages_rate": 1 / (1 / decode_rate + 1 / standin_rate),
        "stages": {"pipeline": pipeline["stages"], "threads": threads["stages"]},
        "hand_back_s_per_clip": {"pipe": pipe_s, "shared_memory": shared_s},
        "decode_here_s_per_clip_by_scaler_threads": scaler,
        "tiny_judge_job_s": {"now": tiny_now, "scaler_a_thread_per_core": tiny_before},
        "tiny_judge_max_score_difference": max(abs(a - b) for a, b in zip(now_scores, before_scores)),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
