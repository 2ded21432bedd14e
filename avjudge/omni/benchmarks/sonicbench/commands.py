"""SonicBench's own commands: the stimulus generator (the shared `omni convert / answer / score` serve its items)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ....commands import GROUP_HELP, add_input, add_out, count, positive_int, register, required_input

GROUP_HELP["omni sonicbench"] = "SonicBench: make exact-label stimuli of the 12 physical attributes"


def _make_args(p: argparse.ArgumentParser) -> None:
    add_out(p, "folder for audio/, questions.jsonl and summary.json")
    p.add_argument(
        "--per-cell", type=positive_int, default=100, help="items per attribute x paradigm (even: balanced A/B)"
    )
    p.add_argument("--seed", type=count, default=0)
    p.add_argument("--attributes", help="comma-separated subset (default: all 12)")
    p.add_argument("--workers", type=positive_int, default=2, help="processes that render")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def _make(args: argparse.Namespace) -> int:
    from ... import SuiteError
    from .generate import make_items
    from .stimuli import ATTRIBUTE_SPECS

    attributes = tuple(a.strip() for a in args.attributes.split(",")) if args.attributes else None
    unknown = sorted(set(attributes or ()) - set(ATTRIBUTE_SPECS))
    if unknown:
        raise SuiteError(f"unknown attribute(s) {unknown}; SonicBench's are {list(ATTRIBUTE_SPECS)}")
    if args.per_cell < 1:
        raise SuiteError("--per-cell must be at least 1")
    summary = make_items(args.out, args.per_cell, args.seed, attributes, args.workers, not args.no_progress)
    print(json.dumps({k: v for k, v in summary.items() if k != "cells"}, indent=2))
    print(
        f"wrote {args.out / 'questions.jsonl'}. Next: avjudge omni answer --suite sonicbench --questions "
        f"{args.out / 'questions.jsonl'} --judge choice_a=DIR --out answers.jsonl"
    )
    return 0


register(
    "omni sonicbench make",
    "render SonicBench-style items with exact labels, each re-measured on the written audio",
    _make_args,
    _make,
    "For each of the 12 attributes and both paradigms (recognition: one 4 s clip against the\n"
    "paper's threshold; comparison: two 4 s clips with exactly 0.5 s of silence between them),\n"
    "draw a value, render synthetic sound with it, write 16-bit WAV and measure the written file\n"
    "with meters independent of the renderer (YIN f0, BS.1770 loudness, ITD/ILD, DRR, RT60, ...).\n"
    "An item whose measurement disagrees with its label is drawn again, or rejected and counted.\n"
    "Answers are balanced A/B per cell, the option order counterbalanced; one seed, same files.\n\n"
    "example:\n  avjudge omni sonicbench make --out sonic_items --per-cell 100 --seed 0",
    old="bench sonicbench make",
)


def _probe_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--items", required=True, type=Path, help="a folder from `omni sonicbench make`")
    p.add_argument(
        "--encoder",
        default="logmel",
        help="features to probe: logmel (no weights needed), or the audio encoder of the --weights checkpoint: "
        "qwen2_audio, qwen2_5_omni, qwen3_omni",
    )
    p.add_argument(
        "--weights", type=Path, help="the checkpoint whose audio encoder is probed (a base model or a judge)"
    )
    p.add_argument("--device", default="auto", help="auto: CUDA when there is one, else CPU")
    p.add_argument("--seed", type=count, default=42)
    add_out(p, "folder for probe.json")


def _probe(args: argparse.Namespace) -> int:
    from ....data.questions import load_questions
    from ....jsonl import write_json
    from .probe import make_encoder, probe_items

    questions = load_questions(args.items / "questions.jsonl")
    result = probe_items(questions, make_encoder(args.encoder, args.weights, args.device), args.seed)
    source = {"encoder": args.encoder, "weights": str(args.weights) if args.weights else None}
    write_json(args.out / "probe.json", {**source, "accuracy": result})
    for attribute, cells in result.items():
        print(f"{attribute:<14} " + "  ".join(f"{p} {a:.2f}" for p, a in sorted(cells.items())))
    print(f"wrote {args.out / 'probe.json'}")
    return 0


register(
    "omni sonicbench probe",
    "the paper's linear probe on frozen features of generated items, per attribute x paradigm",
    _probe_args,
    _probe,
    "Train Linear(D, 256) -> mean over time -> Linear(256, 2) on half of each attribute x paradigm's\n"
    "items and report the other half's accuracy (AdamW, cosine schedule with warm-up, 20 epochs,\n"
    "early stopping, seed 42), as the paper's Appendix N does. Mean pooling cannot tell which of\n"
    "a comparison's clips holds what, for any encoder.\n\n"
    "examples:\n  avjudge omni sonicbench probe --items sonic_items --encoder logmel --out sonic_probe\n"
    "  avjudge omni sonicbench probe --items sonic_items --encoder qwen2_audio \\\n"
    "      --weights models/Qwen2-Audio-7B-Instruct --out probe_base",
    old="bench sonicbench probe",
)


def _sweep_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--attribute", required=True, help="pitch, loudness or duration")
    p.add_argument("--per-level", type=positive_int, default=20, help="items per difference (even: balanced)")
    p.add_argument("--seed", type=count, default=0)
    add_out(p, "folder for audio/ and questions.jsonl")


def _sweep(args: argparse.Namespace) -> int:
    from .psychometric import SWEEPS, sweep_items

    questions = sweep_items(args.out, args.attribute, args.per_level, args.seed)
    differences, unit, _ = SWEEPS[args.attribute]
    print(f"wrote {len(questions)} comparison items at differences {differences} ({unit}) to {args.out}")
    return 0


register(
    "omni sonicbench sweep",
    "comparison items at a ladder of differences, for a psychometric threshold",
    _sweep_args,
    _sweep,
    "Write comparison items whose clips differ by set amounts (pitch in semitones, loudness in\n"
    "LU, duration as a ratio); answer them with `omni answer`, then fit with `omni sonicbench\n"
    "threshold`.\n\n"
    "example:\n  avjudge omni sonicbench sweep --attribute pitch --out pitch_sweep",
    old="bench sonicbench sweep",
)


def _threshold_args(p: argparse.ArgumentParser) -> None:
    add_input(p, "answers JSONL from `omni answer` on a sweep's questions")
    p.add_argument("--questions", required=True, type=Path, help="the sweep's questions.jsonl")
    p.add_argument("--parser", default="paper", help="answer rule: paper or strict")
    add_out(p, "folder for threshold.json")


def _threshold(args: argparse.Namespace) -> int:
    from ....data.questions import load_questions
    from ....jsonl import write_json
    from ... import get_suite
    from ...base import usable_answers
    from ...score import latest_answers
    from .psychometric import threshold_report

    suite = get_suite("sonicbench")
    answers = latest_answers(usable_answers(suite.read_answers(required_input(args)), required_input(args)))
    models = {a.model for a in answers}
    parse = suite.parsers[args.parser]
    report = {
        model: threshold_report(
            load_questions(args.questions),
            {a.id: parse(a.response or "", suite.letters, ()) for a in answers if a.model == model and not a.error},
        )
        for model in sorted(models)
    }
    write_json(args.out / "threshold.json", report)
    for model, attributes in report.items():
        for attribute, fit in attributes.items():
            found = "none in the swept range" if fit["threshold"] is None else f"{fit['threshold']:.3g}"
            print(f"{model}: {attribute} 75% threshold {found} {fit['unit']} (human JND about {fit['human_jnd']})")
    print(f"wrote {args.out / 'threshold.json'}")
    return 0


register(
    "omni sonicbench threshold",
    "a model's 75 % discrimination threshold from its answers to a sweep, beside human JNDs",
    _threshold_args,
    _threshold,
    "Fit P(correct) = 0.5 + 0.5 / (1 + exp(-(ln d - mu) / s)) by maximum likelihood to each answer\n"
    "and report the difference d answered right 75 % of the time, per attribute and model.",
    old="bench sonicbench threshold",
)
