"""Commands shared by every benchmark suite of omni models: list them, convert a release, answer, score."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from .grammar import (
    add_input,
    add_judge,
    add_out,
    add_runtime_arguments,
    model_options,
    register,
    required_input,
)


def _suite_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", required=True, help="a registered suite (avjudge bench suites lists them)")


def _print_notes(suite) -> None:
    for note in suite.notes:
        print(f"note: {note}")


def _suites(args: argparse.Namespace) -> int:
    from ..bench.suites import SUITES

    for name, cls in sorted(SUITES.items()):
        print(f"{name:<16} {cls.description}  [answered by --judge {cls.judge_task}=DIR or --endpoint]")
    return 0


register(
    "bench suites",
    "the registered benchmark suites of omni models",
    lambda p: None,
    _suites,
    "List the suites `bench convert`, `bench answer` and `bench score` take with --suite.",
)


def _convert_args(p: argparse.ArgumentParser) -> None:
    _suite_argument(p)
    add_input(p, "the suite's release question file or folder")
    p.add_argument("--media-root", type=Path, help="where the release's clips lie (found by file name under it)")
    add_out(p, "the questions as avjudge question JSONL")


def _convert(args: argparse.Namespace) -> int:
    from ..bench.suites import get_suite
    from ..jsonl import write_json
    from ..judges.choice import write_questions

    suite = get_suite(args.suite)
    questions = suite.convert(required_input(args), args.media_root)
    _print_notes(suite)
    write_questions(questions, args.out)
    summary = args.out.with_suffix(".summary.json")
    write_json(summary, {"notes": suite.notes, **suite.describe(questions)})
    print(f"wrote {len(questions)} questions to {args.out}, what they hold to {summary}")
    return 0


register(
    "bench convert",
    "a suite's release questions in avjudge's question format",
    _convert_args,
    _convert,
    "Read the suite's own question files and write avjudge question JSONL (id, media, question,\n"
    "options, answer, prompt, groups) for `bench answer` and `bench choice`, and beside it\n"
    "OUT's .summary.json: the release's quirks handled, and the questions per group.\n\n"
    "example:\n  avjudge bench convert --suite sonicbench --input SonicBench/json --media-root SonicBench "
    "--out sonic.jsonl",
)


def _answer_args(p: argparse.ArgumentParser) -> None:
    _suite_argument(p)
    p.add_argument("--questions", required=True, type=Path, help="avjudge question JSONL (from bench convert or make)")
    add_judge(p, "a judge's backbone answers by letter probabilities: choice_a=DIR or choice_av=DIR", repeatable=False)
    p.add_argument("--endpoint", help="an OpenAI-compatible chat endpoint instead, e.g. http://localhost:8000/v1")
    p.add_argument("--model", help="the model name: the endpoint's model; the answers' model name for a judge")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the endpoint's key")
    p.add_argument("--max-tokens", type=int, default=1024, help="longest answer the endpoint may write")
    p.add_argument("--concurrency", type=int, default=4, help="endpoint requests in flight")
    p.add_argument(
        "--generate",
        type=int,
        default=0,
        metavar="TOKENS",
        help="a judge's backbone writes its own answer (greedy, up to TOKENS) for the suite's rule to read, "
        "instead of answering by letter probabilities",
    )
    p.add_argument(
        "--modalities",
        default="av",
        help="what of each clip an endpoint is sent: av, v, a, v+subtitles, v+caption, a+caption",
    )
    p.add_argument(
        "--frames",
        help="the picture as sampled JPEG frames instead of the video file: a count (8, 16, 32, 64) or fps=F",
    )
    p.add_argument("--timeout", type=float, default=300.0, help="seconds one endpoint request may take")
    p.add_argument(
        "--cache",
        type=Path,
        help="folder of answers by request content: the same request in any later run costs nothing",
    )
    add_out(p, "answers JSONL (one model's; rerun to resume)")
    add_runtime_arguments(p)


def _answer(args: argparse.Namespace) -> int:
    from ..bench import parse_judge_dirs
    from ..bench.suites import get_suite
    from ..bench.suites.answer import Endpoint, RequestCache, answer_with_endpoint, answer_with_judge
    from ..bench.suites.request_media import MediaPlan
    from ..config import ConfigError
    from ..judges import Judge
    from ..judges.choice import load_questions

    suite = get_suite(args.suite)
    questions = load_questions(args.questions)
    if bool(args.judge) == bool(args.endpoint):
        raise ConfigError("give one model: --judge TASK=DIR (a judge's backbone) or --endpoint URL --model NAME")
    if args.endpoint:
        if not args.model:
            raise ConfigError("--endpoint needs --model: the model name the endpoint serves")
        if args.generate:
            raise ConfigError("--generate is for a judge's backbone: an endpoint always answers in text")
        try:
            plan = MediaPlan(args.modalities, args.frames)
        except ValueError as err:
            raise ConfigError(str(err)) from err
        endpoint = Endpoint(
            args.endpoint,
            args.model,
            os.environ.get(args.api_key_env),
            args.max_tokens,
            timeout=args.timeout,
            media=plan,
            cache=RequestCache(args.cache) if args.cache else None,
        )
        rows = answer_with_endpoint(endpoint, questions, args.out, args.concurrency, progress=not args.no_progress)
    else:
        if args.modalities != "av" or args.frames:
            raise ConfigError("--modalities and --frames shape endpoint requests; a judge sees what its task reads")
        (task, folder), *_ = parse_judge_dirs(args.judge, defaults=False).items()
        if not task.startswith("choice_") or (suite.judge_task == "choice_a" and task != "choice_a"):
            raise ConfigError(
                f"--judge {task}=... cannot answer {suite.name}: give --judge {suite.judge_task}=DIR "
                "(choice_a: a Qwen2-Audio or an Omni thinker, hearing the audio alone)"
            )
        judge = Judge.load(task, folder, **model_options(args))
        name = args.model or Path(folder).name
        rows = answer_with_judge(judge, questions, args.out, name, not args.no_progress, args.generate)
    failed = sum(bool(r.get("error")) for r in rows)
    print(
        f"{len(rows) - failed} of {len(questions)} questions answered"
        + (f"; {failed} failed (recorded with why; a rerun asks the transient ones again)" if failed else "")
        + f". Next: avjudge bench score --suite {suite.name} --input {args.out} --questions {args.questions} --out DIR"
    )
    return 0


register(
    "bench answer",
    "a model answers a suite's questions: a judge's backbone or an OpenAI-compatible endpoint",
    _answer_args,
    _answer,
    "Ask every question and write one JSON line per answer ({id, model, response}) as it comes.\n"
    "A judge's backbone (--judge choice_a=DIR or choice_av=DIR) answers with the letter its\n"
    "next-token probabilities favour; an endpoint (--endpoint URL --model NAME: vLLM, SGLang, a\n"
    "hosted API) gets the clip inline and the suite's own prompt, and answers in text. A clip that\n"
    "cannot be read or a request that fails is recorded with why, never counted as a wrong answer;\n"
    "rerun to resume (failed requests are asked again).\n\n"
    "examples:\n"
    "  avjudge bench answer --suite sonicbench --questions items/questions.jsonl \\\n"
    "      --judge choice_a=$HOME/.cache/avjudge/tiny/qwen2_audio --out answers_tiny.jsonl\n"
    "  avjudge bench answer --suite sonicbench --questions items/questions.jsonl \\\n"
    "      --endpoint http://localhost:8000/v1 --model Qwen/Qwen2.5-Omni-7B --out answers_omni.jsonl",
)


def _score_args(p: argparse.ArgumentParser) -> None:
    _suite_argument(p)
    add_input(p, "answers JSONL (bench answer), or the suite's released prediction files (file or folder)")
    p.add_argument(
        "--compare",
        help="instead of --input, comma-separated answers files of one model under different configurations "
        "(the first is the base): the ablation table",
    )
    p.add_argument("--by", help="with --compare, the question group to break the ablation down by (e.g. duration)")
    p.add_argument("--questions", type=Path, help="the question JSONL the answers answer (gold and groups)")
    p.add_argument("--parser", default="paper", help="answer rule: paper (the authors') or strict")
    p.add_argument(
        "--baseline",
        type=Path,
        help="another model's answers to the same questions (e.g. the base model a judge was fine-tuned from): "
        "each model's accuracy beside it on the items both answered, and how many answers changed",
    )
    add_out(p, "folder for report.json and report.md")


def _score(args: argparse.Namespace) -> int:
    from ..bench.suites import get_suite, write_score
    from ..judges.choice import load_questions

    suite = get_suite(args.suite)
    questions = load_questions(args.questions) if args.questions else None
    if args.compare:
        return _ablation(args, suite, questions)
    baseline = suite.read_answers(args.baseline) if args.baseline else None
    report = suite.score(suite.read_answers(required_input(args)), questions, args.parser, baseline)
    _print_notes(suite)
    for line in suite.summary(report):
        print(line)
    written = write_score(suite, report, args.out)
    print("wrote " + ", ".join(map(str, written)))
    return 0


def _ablation(args: argparse.Namespace, suite, questions) -> int:
    from ..bench.suites.score import ablation, ablation_markdown
    from ..jsonl import write_json

    paths = [Path(p.strip()) for p in args.compare.split(",") if p.strip()]
    runs = {p.stem: suite.read_answers(p) for p in paths}
    result = ablation(suite, runs, questions, args.parser, args.by)
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "ablation.json", result)
    table = ablation_markdown(result)
    (args.out / "ablation.md").write_text(table, encoding="utf-8")
    print(table)
    print(f"wrote {args.out / 'ablation.json'}, {args.out / 'ablation.md'}")
    return 0


register(
    "bench score",
    "score answers the way a suite's paper does: report.json and its tables",
    _score_args,
    _score,
    "Parse every answer with the suite's rule (--parser paper: the authors' own; strict: a letter\n"
    "only where the answer gives one), count per model and group, and write OUT/report.json and\n"
    "OUT/report.md with tables shaped like the paper's. A malformed line or an unreadable clip is\n"
    "counted as an error apart and named, never as a wrong answer.\n\n"
    "examples:\n"
    "  avjudge bench score --suite sonicbench --input Results.tar.gz --out sonic_paper\n"
    "  avjudge bench score --suite sonicbench --input answers_tiny.jsonl --questions items/questions.jsonl "
    "--out sonic_tiny\n"
    "  avjudge bench score --suite worldsense --compare v.jsonl,av.jsonl,v_subtitles.jsonl --questions ws.jsonl "
    "--by duration --out ablation",
)


def _bridge_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--questions", required=True, type=Path, help="avjudge question JSONL (from bench convert)")
    add_judge(p, "a Yes / No judge that reads a text: vt=DIR (video) or at=DIR (audio)", repeatable=False)
    add_out(p, "folder for bridge.jsonl (every option's P(Yes)) and report.json; rerun to resume")
    add_runtime_arguments(p)


def _bridge(args: argparse.Namespace) -> int:
    from ..bench import parse_judge_dirs
    from ..bench.suites.bridge import bridge_questions, bridge_summary, judge_believer
    from ..config import ConfigError
    from ..jsonl import write_json
    from ..judges import Judge
    from ..judges.choice import load_questions
    from ..prompts import TASKS

    task, folder = next(iter(parse_judge_dirs(args.judge or [], defaults=False).items()), (None, None))
    if task not in TASKS or not TASKS[task].needs_text:
        raise ConfigError("give a Yes / No judge that reads a text: --judge vt=DIR or --judge at=DIR")
    judge = Judge.load(task, folder, **model_options(args))
    questions = load_questions(args.questions)
    rows = bridge_questions(judge_believer(judge), questions, args.out / "bridge.jsonl", progress=not args.no_progress)
    summary = bridge_summary(rows)
    write_json(args.out / "report.json", summary)
    print(json.dumps(summary, indent=2))
    return 0


register(
    "bench bridge",
    "a Yes / No judge answers multiple-choice questions by judging each option as a statement",
    _bridge_args,
    _bridge,
    "Each option becomes the statement 'The answer to the question \"...\" is: OPTION', the judge's\n"
    "P(Yes) of it is its belief, and the option believed most is the answer: accuracy beside chance,\n"
    "AUROC of right against wrong options, and the calibration of P(Yes). Sets avjudge's VT and AT\n"
    "judges beside the omni models on the same questions.\n\n"
    "example:\n  avjudge bench bridge --questions ws.jsonl --judge vt=runs/vt/final --out ws_bridge",
)
