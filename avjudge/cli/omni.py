"""`avjudge omni`: the benchmarks of omni models, one grammar for every suite: list, convert a release, answer, score,
bridge. The old `avjudge bench ...` spellings warn for one release."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from ..commands import (
    add_input,
    add_out,
    alias,
    count,
    positive_float,
    positive_int,
    register,
    required_input,
    warn_deprecated,
)
from .grammar import add_judge, add_runtime_arguments, judge_dirs, model_options


def _suite_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", required=True, help="a registered suite (avjudge omni suites lists them)")


def _print_notes(suite) -> None:
    for note in suite.notes:
        print(f"note: {note}")


def _one_judge(args: argparse.Namespace) -> tuple[str, Path]:
    from ..config import ConfigError

    dirs = judge_dirs(args.judge, defaults=False)
    if len(dirs) != 1:
        raise ConfigError("give one model as --judge TASK=DIR")
    return next(iter(dirs.items()))


def _suites(args: argparse.Namespace) -> int:
    from ..omni import SUITES

    for name, cls in sorted(SUITES.items()):
        print(f"{name:<16} {cls.description}  [answered by --judge {cls.judge_task}=DIR or --endpoint]")
    return 0


register(
    "omni suites",
    "the registered benchmark suites of omni models",
    lambda p: None,
    _suites,
    "List the suites `omni convert`, `omni answer` and `omni score` take with --suite.",
    old="bench suites",
)


def _convert_args(p: argparse.ArgumentParser) -> None:
    _suite_argument(p)
    add_input(p, "the suite's release question file or folder (questions: a question JSONL or a world folder)")
    p.add_argument("--media-root", type=Path, help="where the release's clips lie (found by file name under it)")
    add_out(p, "the questions as avjudge question JSONL")


def _convert(args: argparse.Namespace) -> int:
    from ..config import ConfigError
    from ..data.questions import write_questions
    from ..jsonl import write_json
    from ..omni import get_suite

    suite = get_suite(args.suite)
    if not required_input(args).exists():
        raise ConfigError(f"{required_input(args)}: no such file or folder (the {suite.name} release's questions)")
    questions = suite.convert(required_input(args), args.media_root)
    _print_notes(suite)
    write_questions(questions, args.out)
    summary = args.out.with_suffix(".summary.json")
    write_json(summary, {"notes": suite.notes, **suite.describe(questions)})
    print(f"wrote {len(questions)} questions to {args.out}, what they hold to {summary}")
    return 0


register(
    "omni convert",
    "a suite's release questions in avjudge's question format",
    _convert_args,
    _convert,
    "Read the suite's own question files and write avjudge question JSONL (id, media, question,\n"
    "options, answer, prompt, groups) for `omni answer`, and beside it OUT's .summary.json: the\n"
    "release's quirks handled, and the questions per group. The questions suite writes a synthetic\n"
    "world's questions, whose answers are exact.\n\n"
    "examples:\n  avjudge omni convert --suite sonicbench --input SonicBench/json --media-root SonicBench "
    "--out sonic.jsonl\n  avjudge omni convert --suite questions --input world --out world_questions.jsonl",
    old="bench convert",
)


def _answer_args(p: argparse.ArgumentParser) -> None:
    _suite_argument(p)
    p.add_argument("--questions", required=True, type=Path, help="avjudge question JSONL (from omni convert or make)")
    add_judge(p, "a judge's backbone answers by letter probabilities: choice_a=DIR or choice_av=DIR", repeatable=False)
    p.add_argument("--endpoint", help="an OpenAI-compatible chat endpoint instead, e.g. http://localhost:8000/v1")
    p.add_argument("--model", help="the model name: the endpoint's model; the answers' model name for a judge")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the endpoint's key")
    p.add_argument("--max-tokens", type=positive_int, default=1024, help="longest answer the endpoint may write")
    p.add_argument("--concurrency", type=positive_int, default=4, help="endpoint requests in flight")
    p.add_argument(
        "--generate",
        type=count,
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
    p.add_argument("--timeout", type=positive_float, default=300.0, help="seconds one endpoint request may take")
    p.add_argument(
        "--cache",
        type=Path,
        help="folder of answers by request content: the same request in any later run costs nothing",
    )
    add_out(p, "answers JSONL (one model's; rerun to resume)")
    add_runtime_arguments(p)


def _answer(args: argparse.Namespace) -> int:
    from ..config import ConfigError
    from ..data.questions import load_questions
    from ..httpjson import RequestCache
    from ..judges import Judge
    from ..omni import get_suite
    from ..omni.answer import Endpoint, answer_with_endpoint, answer_with_judge
    from ..omni.request_media import MediaPlan

    suite = get_suite(args.suite)
    if bool(args.judge) == bool(args.endpoint):
        raise ConfigError("give one model: --judge TASK=DIR (a judge's backbone) or --endpoint URL --model NAME")
    if args.endpoint:
        if not args.model:
            raise ConfigError("--endpoint needs --model: the model name the endpoint serves")
        if args.generate:
            raise ConfigError("--generate is for a judge's backbone: an endpoint always answers in text")
        questions = load_questions(args.questions)
        endpoint = Endpoint(
            args.endpoint,
            args.model,
            os.environ.get(args.api_key_env),
            args.max_tokens,
            timeout=args.timeout,
            media=MediaPlan(args.modalities, args.frames),
            cache=RequestCache(args.cache) if args.cache else None,
        )
        rows = answer_with_endpoint(endpoint, questions, args.out, args.concurrency, progress=not args.no_progress)
    else:
        if args.modalities != "av" or args.frames:
            raise ConfigError("--modalities and --frames shape endpoint requests; a judge sees what its task reads")
        task, folder = _one_judge(args)
        suite.check_judge(task)
        questions = load_questions(args.questions)
        judge = Judge.load(task, folder, **model_options(args))
        name = args.model or Path(folder).name
        rows = answer_with_judge(judge, questions, args.out, name, not args.no_progress, args.generate)
    failed = sum(bool(r.get("error")) for r in rows)
    print(
        f"{len(rows) - failed} of {len(questions)} questions answered"
        + (f"; {failed} could not be (recorded with why)" if failed else "")
        + f". Next: avjudge omni score --suite {suite.name} --input {args.out} --questions {args.questions} --out DIR"
    )
    return 0


register(
    "omni answer",
    "a model answers a suite's questions: a judge's backbone or an OpenAI-compatible endpoint",
    _answer_args,
    _answer,
    "Ask every question and write one JSON line per answer ({id, model, response}) as it comes.\n"
    "A judge's backbone (--judge choice_a=DIR or choice_av=DIR) answers with the letter its\n"
    "next-token probabilities favour; an endpoint (--endpoint URL --model NAME: vLLM, SGLang, a\n"
    "hosted API) gets the clip inline and the suite's own prompt, and answers in text. A clip that\n"
    "cannot be read or a request the endpoint refuses is recorded with why, never counted as a wrong\n"
    "answer; an endpoint that does not answer at all stops the run. Rerun to resume.\n\n"
    "examples:\n"
    "  avjudge omni answer --suite sonicbench --questions items/questions.jsonl \\\n"
    "      --judge choice_a=$HOME/.cache/avjudge/tiny/qwen2_audio --out answers_tiny.jsonl\n"
    "  avjudge omni answer --suite sonicbench --questions items/questions.jsonl \\\n"
    "      --endpoint http://localhost:8000/v1 --model Qwen/Qwen2.5-Omni-7B --out answers_omni.jsonl\n"
    "  avjudge omni answer --suite questions --questions world_questions.jsonl \\\n"
    "      --judge choice_av=runs/av/final --out after_sft.jsonl",
    old="bench answer",
)


def _score_args(p: argparse.ArgumentParser) -> None:
    _suite_argument(p)
    add_input(p, "answers JSONL (omni answer), or the suite's released prediction files (file or folder)")
    p.add_argument(
        "--compare",
        help="instead of --input, comma-separated answers files of one model under different configurations "
        "(the first is the base): the ablation table",
    )
    p.add_argument("--by", help="with --compare, the question group to break the ablation down by (e.g. duration)")
    p.add_argument("--questions", type=Path, help="the question JSONL the answers answer (gold and groups)")
    p.add_argument(
        "--parser", help="answer rule: paper (the authors'; the default), strict, or another the suite names"
    )
    p.add_argument(
        "--baseline",
        type=Path,
        help="another model's answers to the same questions (e.g. the base model a judge was fine-tuned from): "
        "each model's accuracy beside it on the items both answered, and how many answers changed",
    )
    add_out(p, "folder for report.json and report.md")


def _score(args: argparse.Namespace) -> int:
    from ..data.questions import load_questions
    from ..omni import get_suite, write_score
    from ..omni.base import usable_answers
    from ..omni.score import ablation, write_ablation

    suite = get_suite(args.suite)
    questions = load_questions(args.questions) if args.questions else None
    parser = args.parser or suite.default_parser
    if args.compare:
        runs = {Path(p.strip()).stem: suite.read_answers(Path(p.strip())) for p in args.compare.split(",") if p.strip()}
        print(write_ablation(ablation(suite, runs, questions, parser, args.by), args.out))
        print(f"wrote {args.out / 'ablation.json'}, {args.out / 'ablation.md'}")
        return 0
    baseline = suite.read_answers(args.baseline) if args.baseline else None
    answers = usable_answers(suite.read_answers(required_input(args)), required_input(args))
    report = suite.score(answers, questions, parser, baseline)
    _print_notes(suite)
    for line in suite.summary(report):
        print(line)
    written = write_score(suite, report, args.out)
    print("wrote " + ", ".join(map(str, written)))
    return 0


register(
    "omni score",
    "score answers the way a suite's paper does: report.json and its tables",
    _score_args,
    _score,
    "Parse every answer with the suite's rule (--parser paper: the authors' own; strict: a letter\n"
    "only where the answer gives one; a suite may name more, e.g. omnivideobench's gemini), count\n"
    "per model and group, and write OUT/report.json and OUT/report.md with tables shaped like the\n"
    "paper's. A malformed line or an unreadable clip is counted as an error apart and named, never\n"
    "as a wrong answer. Needs no model code: it runs with the base install.\n\n"
    "examples:\n"
    "  avjudge omni score --suite sonicbench --input Results.tar.gz --out sonic_paper\n"
    "  avjudge omni score --suite sonicbench --input answers_tiny.jsonl --questions items/questions.jsonl "
    "--out sonic_tiny\n"
    "  avjudge omni score --suite questions --input after_sft.jsonl --questions world_questions.jsonl "
    "--baseline base.jsonl --out check\n"
    "  avjudge omni score --suite worldsense --compare v.jsonl,av.jsonl,v_subtitles.jsonl --questions ws.jsonl "
    "--by duration --out ablation",
    old="bench score",
)


def _bridge_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--questions", required=True, type=Path, help="avjudge question JSONL (from omni convert)")
    add_judge(p, "a Yes / No judge that reads a text: vt=DIR (video) or at=DIR (audio)", repeatable=False)
    add_out(p, "folder for bridge.jsonl (every option's P(Yes)) and report.json; rerun to resume")
    add_runtime_arguments(p)


def _bridge(args: argparse.Namespace) -> int:
    from ..config import ConfigError
    from ..data.questions import load_questions
    from ..jsonl import write_json
    from ..judges import Judge
    from ..omni.bridge import bridge_questions, bridge_summary, judge_believer
    from ..prompts import TASKS

    task, folder = next(iter(judge_dirs(args.judge, defaults=False).items()), (None, None))
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
    "omni bridge",
    "a Yes / No judge answers multiple-choice questions by judging each option as a statement",
    _bridge_args,
    _bridge,
    "Each option becomes the statement 'The answer to the question \"...\" is: OPTION', the judge's\n"
    "P(Yes) of it is its belief, and the option believed most is the answer: accuracy beside chance,\n"
    "AUROC of right against wrong options, and the calibration of P(Yes). Sets avjudge's VT and AT\n"
    "judges beside the omni models on the same questions.\n\n"
    "example:\n  avjudge omni bridge --questions ws.jsonl --judge vt=runs/vt/final --out ws_bridge",
    old="bench bridge",
)


# ---- the old `bench choice`: the questions suite answered and scored in one go --------------------------------------


def _choice_args(p: argparse.ArgumentParser) -> None:
    add_input(
        p, "a question file (JSONL), or a world folder (`avjudge world make`) to ask questions with exact answers"
    )
    alias(p, "--questions", "--input", dest="input", type=Path)
    alias(p, "--world", "--input", dest="input", type=Path)
    add_judge(p, "the model that answers: choice_av=DIR or choice_a=DIR", repeatable=False)
    alias(p, "--model", "--judge TASK=DIR", dest="model", type=Path)
    alias(p, "--task", "--judge TASK=DIR", dest="task", choices=["choice_av", "choice_a"])
    add_out(p, "folder for questions.jsonl, answers.jsonl, report.json and report.md; rerun to resume")
    p.add_argument("--baseline", type=Path, help="the --out folder of another run on the same questions")
    add_runtime_arguments(p)


def _choice(args: argparse.Namespace) -> int:
    from ..judges import Judge
    from ..omni.benchmarks.questions import Questions
    from ..omni.benchmarks.questions.run import answer_and_score

    warn_deprecated(
        "avjudge bench choice", "avjudge omni answer --suite questions, then avjudge omni score --suite questions"
    )
    if args.model is not None:  # the oldest spelling: --task TASK --model DIR
        args.judge = [*(args.judge or []), f"{args.task or 'choice_av'}={args.model}"]
    task, folder = _one_judge(args)
    Questions().check_judge(task)
    judge = Judge.load(task, folder, **model_options(args))
    source = required_input(args)
    report = answer_and_score(judge, source, args.out, Path(folder).name, args.baseline, not args.no_progress)
    for line in Questions().summary(report):
        print(line)
    print(f"wrote {args.out / 'answers.jsonl'}, {args.out / 'report.json'}, {args.out / 'report.md'}")
    return 0


register(
    "bench choice",
    "(deprecated: avjudge omni answer / omni score --suite questions) multiple-choice questions on clips",
    _choice_args,
    _choice,
    "The questions suite in one go, as this command ran before the omni group: questions (a world's,\n"
    "or a file's) answered into OUT/answers.jsonl, scored into OUT/report.json and OUT/report.md,\n"
    "beside another run's OUT with --baseline. Use `avjudge omni answer` and `avjudge omni score`\n"
    "with --suite questions instead; this spelling goes in avjudge 0.3.",
)
