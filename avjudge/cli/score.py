"""`avjudge score`: clips scored by one Yes/No judge."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..commands import add_input, add_out, alias, positive_float, positive_int, register, required_input
from ..sampling import SAMPLINGS
from .grammar import (
    add_decode_processes,
    add_engine_arguments,
    add_judge,
    add_runtime_arguments,
    add_served_arguments,
    engine_of,
    job_exit,
    model_options,
    one_judge,
    served_endpoints,
)


def _score_args(p: argparse.ArgumentParser) -> None:
    add_judge(
        p,
        "the judge: av, vt or at, and its checkpoint folder (a Qwen2.5-Omni or Qwen3-Omni thinker or "
        "full model, or Qwen2-Audio), e.g. av=runs/av/final",
        repeatable=False,
    )
    alias(p, "--checkpoint", "--judge TASK=DIR", dest="checkpoint", type=Path)
    add_input(
        p,
        "a media file, a folder of them, or a manifest: JSONL of {id, video, captions: {video, audio, "
        "utterance}} (world.jsonl works)",
        repeatable=True,
    )
    alias(p, "--video", "--input", dest="input", append=True, type=Path)
    alias(p, "--manifest", "--input", dest="input", append=True, type=Path)
    p.add_argument("--text", help="the description the vt / at judge checks, for inputs that carry no captions")
    add_out(p, "results: .jsonl, written as it goes, or .parquet, written when complete; rerun to resume")
    p.add_argument(
        "--sampling",
        choices=sorted(SAMPLINGS),
        help="a named sampling of the clip's frames (default: the judge's own, else the task's: AV sync, 8 fps at "
        "480x640/16 pixels; VT and AT AVBench's 1 fps); avbench reproduces the paper's judges",
    )
    p.add_argument("--fps", type=positive_float, help="frames per second shown to the judge (default: the sampling's)")
    p.add_argument("--max-pixels", type=positive_int, help="pixels per frame (default: the sampling's)")
    p.add_argument(
        "--long-audio",
        choices=["error", "head"],
        default="error",
        help="audio longer than the model's window: report an error, or score its beginning",
    )
    add_served_arguments(p)
    add_runtime_arguments(p)
    add_decode_processes(p)
    add_engine_arguments(p)


def _score(args: argparse.Namespace) -> int:
    from ..data import input_items
    from ..judges.served import load_judge
    from ..runtime.jobs import check_output
    from ..scoring.jobs import score_items

    judges = list(args.judge or [])
    if args.checkpoint is not None:  # the old spelling: --judge TASK --checkpoint DIR
        judges = [f"{task}={args.checkpoint}" for task in judges]
    task, folder = one_judge(judges)
    check_output(args.out)
    items = input_items(required_input(args), text=args.text)  # bad inputs fail before a model loads
    engine = engine_of(args)
    settings = dict(sampling=args.sampling, fps=args.fps, max_pixels=args.max_pixels, long_audio=args.long_audio)
    endpoint = served_endpoints(args, {task: folder}).get(task)
    judge = load_judge(task, folder, endpoint, **settings, **model_options(args, engine))
    summary = score_items(judge, items, args.out, progress=not args.no_progress, engine=engine)
    print(json.dumps(summary, indent=2))
    return job_exit(summary)


register(
    "score",
    "score clips with a Yes/No judge: S = P(Yes) / (P(Yes) + P(No))",
    _score_args,
    _score,
    "Score each clip with one judge and append one JSON line per clip to OUT, with\n"
    "score, delta (log P(Yes) - log P(No)), mass (P(Yes) + P(No)) and yes/no probabilities.\n"
    "A clip that cannot be read gets an `error` and no score (never 0). Rerunning with the\n"
    "same OUT resumes; OUT's .summary.json counts errors.\n\n"
    "examples:\n"
    "  avjudge score --judge av=runs/av/final --input world/world.jsonl --out av.jsonl\n"
    '  avjudge score --judge vt=runs/vt/final --input a.mp4 --text "a red circle moves left" --out r.jsonl\n'
    "  avjudge score --judge av=merged/av --served-url http://127.0.0.1:8000/v1 --input world.jsonl --out s.jsonl",
)


def _compare_args(p: argparse.ArgumentParser) -> None:
    add_judge(p, "the judge: av, vt or at and its checkpoint folder, e.g. av=runs/av/final", repeatable=False)
    add_input(p, 'a pairs file: JSONL of {"id", "a": PATH, "b": PATH, "text"?} (relative paths from its folder)')
    add_out(p, "one JSON line per pair with p_a, p_tie, p_b (or error), written as it goes; rerun to resume")
    add_served_arguments(p)
    add_runtime_arguments(p)
    add_decode_processes(p)


def _compare(args: argparse.Namespace) -> int:
    from ..judges.served import load_judge
    from ..runtime import make_engine
    from ..runtime.jobs import check_output
    from ..scoring.compare import compare_pairs, read_pairs

    task, folder = one_judge(args.judge)
    check_output(args.out)
    pairs = read_pairs(required_input(args))  # a bad pairs file fails before a model loads
    judge = load_judge(task, folder, served_endpoints(args, {task: folder}).get(task), **model_options(args))
    engine = make_engine("local", decode_processes=args.decode_processes)
    summary = compare_pairs(judge, pairs, args.out, progress=not args.no_progress, engine=engine)
    print(json.dumps(summary, indent=2))
    return job_exit(summary, "pairs")


register(
    "compare",
    "which of two clips a judge prefers: P(A better), P(tie), P(B better) per pair",
    _compare_args,
    _compare,
    "For each pair of clips (the same prompt for both), score each clip once with the judge and\n"
    "turn the two log-odds into P(A better), P(tie) and P(B better) through the judge's preference\n"
    "model: Bradley-Terry with ties (Rao-Kupper), its temperature and tie width fitted by\n"
    "`avjudge judges calibrate` (else plain Bradley-Terry, no ties). The three sum to 1, and\n"
    "swapping a and b swaps them exactly. Rerunning with the same OUT resumes.\n\n"
    "example:\n"
    "  avjudge compare --judge av=runs/av/final --input pairs.jsonl --out prefs.jsonl",
)
