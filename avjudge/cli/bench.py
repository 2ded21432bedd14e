"""Commands for the AVBench benchmark (suites, runner, reports, human alignment) and dataset filtering."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..stats import format_statistic
from .grammar import (
    add_engine_arguments,
    add_input,
    add_judge,
    add_out,
    add_runtime_arguments,
    add_served_arguments,
    alias,
    engine_of,
    model_options,
    register,
    required_input,
    served_endpoints,
)

DIMS_HELP = (
    "comma-separated: av, vt, at (judges), syncnet, speech_content (sc), dfarena, nisqa, dnsmos, audiobox, "
    "dover, laion_aesthetic (aesthetic) (metrics); those that cannot run here are skipped with the reason"
)


def _scorer_args(p: argparse.ArgumentParser) -> None:
    add_judge(p, "a judge checkpoint, e.g. av=runs/av/final (default: $AVJUDGE_CHECKPOINTS/judges/TASK)")
    add_served_arguments(p)
    add_runtime_arguments(p)


def _scorer(args: argparse.Namespace, dims, engine):
    from ..bench import ClipScorer, parse_judge_dirs

    options = model_options(args, engine)
    dirs = parse_judge_dirs(args.judge)
    scorer = ClipScorer(dims, dirs, options, options.pop("workers"), served_endpoints(args, dirs))
    for name, reason in scorer.skipped.items():
        print(f"skipping {name}: {reason}")
    return scorer


# ---- suites ----------------------------------------------------------------------------


def _synth_args(p: argparse.ArgumentParser) -> None:
    add_input(p, "a world folder (from `avjudge world make`) or its world.jsonl")
    alias(p, "--world", "--input", dest="input", type=Path)
    add_out(p, "writes OUT/suite.json and OUT/videos/<model>/<id>.mp4")
    p.add_argument("--seed", type=int, default=0)


def _synth(args: argparse.Namespace) -> int:
    from ..bench.prompt_suite import write_suite
    from ..bench.synthetic import make_model_folders, world_manifest, world_suite

    manifest = world_manifest(required_input(args))
    suite = write_suite(world_suite(manifest), args.out / "suite.json")
    written = make_model_folders(manifest, args.out / "videos", seed=args.seed)
    print(json.dumps({"suite": str(suite), "videos": str(args.out / "videos"), "clips": written}, indent=2))
    return 0


def _curate_args(p: argparse.ArgumentParser) -> None:
    add_input(p, "a suite file or folder of candidate prompts")
    alias(p, "--candidates", "--input", dest="input", type=Path)
    p.add_argument("--n", required=True, type=int, help="prompts to choose")
    p.add_argument(
        "--attributes",
        required=True,
        help="comma-separated entry attributes to balance, e.g. language,speakers,emotion,shot",
    )
    p.add_argument("--cap", type=float, default=0.5, help="largest share any one attribute value may take")
    p.add_argument(
        "--exclude-manifest",
        type=Path,
        action="append",
        help="a training source manifest whose captions the suite must not repeat (repeatable)",
    )
    p.add_argument("--seed", type=int, default=0)
    add_out(p, "the curated suite (JSON); OUT's .report.json beside it")


def _curate(args: argparse.Namespace) -> int:
    from ..bench.curate import curate, training_hashes
    from ..bench.prompt_suite import load_suite, write_suite
    from ..jsonl import write_json

    exclude = set().union(*(training_hashes(m) for m in args.exclude_manifest or []))
    chosen, report = curate(
        load_suite(required_input(args)),
        args.n,
        [a.strip() for a in args.attributes.split(",")],
        args.cap,
        args.seed,
        exclude,
    )
    write_suite(chosen, args.out)
    write_json(args.out.with_suffix(".report.json"), report)
    print(json.dumps(report, indent=2))
    if report["shortfall"]:
        print(f"only {report['chosen']} of {args.n} prompts fit the {args.cap:.0%} cap; add candidates or relax it")
    return 0


register(
    "bench synth",
    "make a benchmark with a known answer from a world: suite + defective model folders",
    _synth_args,
    _synth,
    "Write a prompt suite from the world's captions and one folder of clips per synthetic\n"
    "model: reference (the world's clips), shifted (sound moved in time), noisy (white noise at\n"
    "0-5 dB SNR) and mismatched (another clip's sound). Working judges and metrics rank the\n"
    "reference first on the dimension each defect hurts.\n\n"
    "example:\n  avjudge world make --out world --n 24 --duration 4\n"
    "  avjudge bench synth --input world --out bench_in",
)
register(
    "bench curate",
    "choose a balanced prompt suite (hard quota per attribute value, training dedupe)",
    _curate_args,
    _curate,
    "Greedy hard-quota sampling: candidates in a seeded random order are taken while no value\n"
    "of any listed attribute exceeds CAP of the target size; prompts whose text appears in a\n"
    "training manifest (normalised-text hash) are dropped first. Prints the distribution.\n\n"
    "example:\n  avjudge bench curate --input pool.json --n 200 --attributes language,speakers "
    "--exclude-manifest train/world.jsonl --out suite.json",
)


# ---- runner and reports ----------------------------------------------------------------------


def _run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", required=True, type=Path, help="suite JSON file or folder (normal.json, hard.json)")
    add_input(p, "the generated clips: a folder ROOT with ROOT/<model>/<prompt id>*.mp4")
    alias(p, "--videos", "--input", dest="input", type=Path)
    p.add_argument("--models", help="comma-separated model folders (default: every folder in ROOT)")
    p.add_argument("--dims", default="all", help=DIMS_HELP)
    add_out(p, "folder for samples.jsonl and summary.json; rerun to resume")
    _scorer_args(p)
    add_engine_arguments(p)


def _run(args: argparse.Namespace) -> int:
    from ..bench import load_suite, parse_dimensions
    from ..bench.runner import run_bench

    entries = load_suite(args.suite)
    engine = engine_of(args)
    scorer = _scorer(args, parse_dimensions(args.dims), engine)
    models = [m.strip() for m in args.models.split(",")] if args.models else None
    summary = run_bench(
        entries, required_input(args), args.out, scorer, models, progress=not args.no_progress, engine=engine
    )
    for model, ids in summary["missing"].items():
        print(f"{model}: {len(ids)} prompt(s) have no clip: {', '.join(ids[:10])}{' ...' if len(ids) > 10 else ''}")
    print(
        f"{summary['clips']} clips scored on {', '.join(summary['dimensions'])}; "
        f"{summary['decode_errors']} could not be read. Next: avjudge bench report --input {args.out}"
    )
    return 0


def _report_args(p: argparse.ArgumentParser) -> None:
    add_input(p, "the --out folder of `avjudge bench run`")
    alias(p, "--bench", "--input", dest="input", type=Path)
    add_out(p, "where to write the report (default: the bench folder)", required=False)


def _report(args: argparse.Namespace) -> int:
    from ..bench.report import write_report

    written = write_report(required_input(args), args.out)
    for split, files in written.items():
        if split != "html":
            print(Path(files[0]).read_text())  # the leaderboard's Markdown
    print("wrote " + ", ".join(f for files in written.values() for f in files))
    return 0


register(
    "bench run",
    "score every model's clips of a prompt suite on the benchmark dimensions",
    _run_args,
    _run,
    "Find ROOT/<model>/<id>.mp4 (or <id>_anything.mp4) for every prompt, decode each clip once,\n"
    "score it with the judges and metrics asked for, and append one JSON line per clip to\n"
    "OUT/samples.jsonl. OUT/summary.json holds mean, std, n and errors per model x split x\n"
    "dimension, the prompts with no clip, and the dimensions skipped (with why). A clip that\n"
    "cannot be scored is an error, never a 0. Rerun to resume after a kill.\n\n"
    "example:\n  avjudge bench run --suite bench_in/suite.json --input bench_in/videos --dims av,dnsmos \\\n"
    "      --judge av=runs/av/final --out bench_out",
)
register(
    "bench report",
    "leaderboards (Markdown, CSV), radar charts and one HTML report from a bench run",
    _report_args,
    _report,
    "Per split: leaderboard_<split>.md / .csv shaped like AVBench's Table 2 (best value in bold)\n"
    "and radar_<split>.png (each dimension min-max normalised over models); report.html holds\n"
    "both and every sample with its video player, and opens from disk.",
)


# ---- multiple-choice questions ---------------------------------------------------------------


def _choice_args(p: argparse.ArgumentParser) -> None:
    add_input(
        p,
        "a question file (JSONL: id, media, question, options, answer[, category]), or a world folder "
        "(`avjudge world make`) to ask questions with exact answers of, written to OUT/questions.jsonl",
    )
    alias(p, "--questions", "--input", dest="input", type=Path)
    alias(p, "--world", "--input", dest="input", type=Path)
    add_judge(
        p,
        "the model that answers: choice_av=DIR (a Qwen2.5-Omni or Qwen3-Omni thinker, shown the video "
        "with its audio) or choice_a=DIR (a Qwen2-Audio, the audio alone); a base model or a judge trained "
        "by `avjudge train`",
        repeatable=False,
    )
    alias(p, "--model", "--judge TASK=DIR", dest="model", type=Path)
    alias(p, "--task", "--judge TASK=DIR", dest="task", choices=["choice_av", "choice_a"])
    add_out(p, "folder for answers.jsonl and summary.json; rerun to resume")
    p.add_argument(
        "--baseline",
        type=Path,
        help="the --out folder of another run on the same questions (e.g. the base model): prints both "
        "accuracies on the questions both answered and how many answers changed",
    )
    add_runtime_arguments(p)


def _choice_judge(args: argparse.Namespace) -> tuple[str, Path]:
    """The (task, folder) of --judge, or of the old --task / --model."""
    from ..bench import parse_judge_dirs
    from ..config import ConfigError

    specs = list(args.judge or [])
    if args.model is not None:
        specs.append(f"{args.task or 'choice_av'}={args.model}")
    dirs = parse_judge_dirs(specs, defaults=False)
    if len(dirs) != 1 or not next(iter(dirs)).startswith("choice_"):
        raise ConfigError("give the model as --judge choice_av=DIR or --judge choice_a=DIR")
    return next(iter(dirs.items()))


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _choice(args: argparse.Namespace) -> int:
    from ..bench.synthetic import MANIFEST, world_manifest, world_questions
    from ..jsonl import read_jsonl, write_json
    from ..judges import Judge
    from ..judges.choice import (
        QuestionError,
        answer_questions,
        compare_answers,
        load_questions,
        summarize,
        write_questions,
    )

    baseline_answers = None if args.baseline is None else args.baseline / "answers.jsonl"
    if baseline_answers is not None and not baseline_answers.is_file():
        raise QuestionError(
            f"{baseline_answers}: no answers; --baseline takes the --out folder of another `avjudge bench choice` run"
        )
    task, folder = _choice_judge(args)
    source = required_input(args)
    if source.suffix == ".jsonl" and source.name != MANIFEST:
        questions = load_questions(source)
    else:
        questions = world_questions(world_manifest(source), audio_only=task == "choice_a")
        write_questions(questions, args.out / "questions.jsonl")
    judge = Judge.load(task, folder, **model_options(args))
    results = answer_questions(judge, questions, args.out / "answers.jsonl", progress=not args.no_progress)
    summary = summarize(results, questions)
    if baseline_answers is not None:
        summary["baseline"] = {
            "answers": str(baseline_answers),
            **compare_answers(results, list(read_jsonl(baseline_answers))),
        }
    write_json(args.out / "summary.json", summary)
    for name, block in {"all": summary, **summary["per_category"]}.items():
        print(
            f"{name:<20} accuracy {_figure(block['accuracy'])} (chance {_figure(block['chance'])}) on "
            f"{block['answered']} questions" + (f"; {block['errors']} could not be read" if block["errors"] else "")
        )
    if baseline_answers is not None:
        print(f"against {args.baseline}, on the questions both answered:")
        for name, block in {"all": summary["baseline"], **summary["baseline"]["per_category"]}.items():
            print(
                f"{name:<20} accuracy {_figure(block['accuracy'])} against {_figure(block['baseline_accuracy'])} "
                f"on {block['questions']} questions; {block['changed']} answers changed"
            )
    print(f"wrote {args.out / 'answers.jsonl'}, {args.out / 'summary.json'}")
    return 0


register(
    "bench choice",
    "multiple-choice questions on clips (the omni benchmarks' format): a backbone's accuracy",
    _choice_args,
    _choice,
    "Ask a model multiple-choice questions on clips, as AVI-Bench, OmniVideoBench, WorldSense\n"
    "(video with its audio: --judge choice_av=DIR) and SonicBench (audio: choice_a=DIR) do, and read\n"
    "its answer from the option letters' next-token probabilities. Run it on a base model and on\n"
    "the judge trained from it to see what fine-tuning cost its general perception. Writes one\n"
    "JSON line per question to OUT/answers.jsonl as it goes (rerun to resume) and accuracy per\n"
    "category beside chance to OUT/summary.json; a clip that cannot be read is counted apart,\n"
    "never as a wrong answer. --baseline sets it beside another run on the same questions.\n\n"
    "examples (the first on a tiny random model: python scripts/make_tiny_judges.py builds it):\n"
    "  avjudge world make --out world --n 24 --duration 4\n"
    "  avjudge bench choice --input world --judge choice_av=$HOME/.cache/avjudge/tiny/qwen2_5_omni_thinker "
    "--out choice_out\n"
    "  avjudge bench choice --input worldsense.jsonl --judge choice_av=models/Qwen2.5-Omni-7B --out ws_base\n"
    "  avjudge bench choice --input worldsense.jsonl --judge choice_av=runs/av/final --out ws_av "
    "--baseline ws_base",
)


# ---- human alignment -------------------------------------------------------------------------


def _align_args(p: argparse.ArgumentParser) -> None:
    add_input(p, "the --out folder of `avjudge bench run`")
    alias(p, "--bench", "--input", dest="input", type=Path)
    p.add_argument(
        "--judgments",
        required=True,
        type=Path,
        help="CSV with prompt_id, model_a, model_b, dimension, winner (A|B|tie), annotator",
    )
    add_out(p, "folder for align.json and scatter plots (default: the bench folder)", required=False)
    p.add_argument("--eps", type=float, default=0.0, help="score differences up to eps count as a metric tie")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for confidence intervals")
    p.add_argument("--seed", type=int, default=0)


def _align(args: argparse.Namespace) -> int:
    from ..bench.align import align, load_judgments, scatter_png
    from ..bench.report import load_results
    from ..jsonl import write_json

    bench = required_input(args)
    _, records = load_results(bench)
    scores = {(r["model"], r["prompt_id"]): r.get("scores") or {} for r in records}
    results = align(load_judgments(args.judgments), scores, args.eps, args.bootstrap, args.seed)
    out = args.out or bench
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "align.json", results)
    for dim, result in results.items():
        if "models" in result:
            scatter_png(dim, result, out / f"align_{dim}.png")
        r = result.get("pearson", {}).get("value")
        acc = result.get("accuracy_2afc")
        print(
            f"{dim}: {result.get('used', 0)} judgments used ({result['unscored']} unscored); "
            f"Pearson {format_statistic(r)}; 2AFC accuracy {format_statistic(acc)}"
        )
    print(f"wrote {out / 'align.json'}")
    return 0


register(
    "bench align",
    "agreement with human pairwise judgments: win ratios, correlations, 2AFC accuracy",
    _align_args,
    _align,
    "Per dimension: WinRatio = (W + 0.5 T) / (W + T + L) per model from the human judgments and\n"
    "from the metric's per-sample scores on the same pairs; Pearson, Spearman and Kendall between\n"
    "them with bootstrap 95% intervals; 2AFC accuracy (human ties left out, metric ties count\n"
    "one half); tie-aware accuracy at --eps and tie-calibrated. Scatter plots like AVBench Fig. 6.",
)


# ---- filtering -------------------------------------------------------------------------------


def _filter_args(p: argparse.ArgumentParser) -> None:
    add_input(p, "a source manifest JSONL ({id, video, captions}) or a folder of clips")
    alias(p, "--manifest", "--input", dest="input", type=Path)
    p.add_argument("--rules", required=True, help="e.g. 'av>=0.7,nisqa>=3.0' (every rule must hold to keep a clip)")
    add_out(p, "folder for kept/dropped/failed.jsonl; rerun to resume")
    p.add_argument("--shard", help="i/n: score every n-th clip from i; the last shard to finish writes the result")
    _scorer_args(p)
    add_engine_arguments(p)


def _filter(args: argparse.Namespace) -> int:
    from ..bench.filter import parse_rules, parse_shard, rule_dimensions, run_filter

    rules = parse_rules(args.rules)
    shard = parse_shard(args.shard)
    engine = engine_of(args)
    summary = run_filter(
        required_input(args),
        rules,
        args.out,
        _scorer(args, rule_dimensions(rules), engine),
        shard,
        progress=not args.no_progress,
        engine=engine,
    )
    print(json.dumps(summary, indent=2))
    return 0


register(
    "filter",
    "keep the clips of a manifest whose judge and metric scores pass rules",
    _filter_args,
    _filter,
    "Score every clip on the dimensions the rules name and write OUT/kept.jsonl, OUT/dropped.jsonl\n"
    "(with the rules each clip broke) and OUT/failed.jsonl (clips that could not be scored, with\n"
    "why), each in manifest order with the scores. Shards run anywhere and combine into exactly\n"
    "the result of one run.\n\n"
    "examples:\n  avjudge filter --input world/world.jsonl --rules 'av>=0.7,dnsmos>=3' --judge av=ckpt/av --out kept\n"
    "  avjudge filter ... --shard 0/4   (and 1/4, 2/4, 3/4 on other machines, same --out)\n"
    "  avjudge filter ... --engine ray --address auto   (actors across the Ray cluster, one per GPU)",
)


# ---- judge sanity controls -------------------------------------------------------------------------


def _controls_args(p: argparse.ArgumentParser) -> None:
    add_input(p, "clips: a media file, a folder of them, or a manifest (.jsonl; its captions for vt / at judges)")
    add_judge(p, "the judge to check, e.g. av=runs/av/final", repeatable=False)
    add_out(p, "folder for controls.jsonl and summary.json")
    add_runtime_arguments(p)


def _controls(args: argparse.Namespace) -> int:
    from ..bench import parse_judge_dirs
    from ..bench.controls import run_controls
    from ..config import ConfigError
    from ..data.manifest import input_items
    from ..judges import Judge

    judges = parse_judge_dirs(args.judge or [], defaults=False)
    if len(judges) != 1:
        raise ConfigError("give the judge to check as --judge TASK=DIR")
    (task, folder), *_ = judges.items()
    judge = Judge.load(task, folder, **model_options(args))
    summary = run_controls(judge, input_items(required_input(args)), args.out)
    for name, block in summary.items():
        yes = "-" if block["yes_rate"] is None else f"{block['yes_rate']:.2f}"
        drop = "" if name == "original" or block["mean_drop"] is None else f", mean drop {block['mean_drop']:+.3f}"
        print(f"{name:<14} Yes on {yes} of {block['clips']} clips{drop}")
    print(f"wrote {args.out / 'controls.jsonl'}, {args.out / 'summary.json'}")
    return 0


register(
    "bench controls",
    "does a judge use each stream? its scores with silence, a blank picture, another clip's sound or text",
    _controls_args,
    _controls,
    "Judge every clip as it is and again under each control its task reads: silent (audio zeroed),\n"
    "blank_picture (frames mid-grey), other_audio (the next clip's sound), other_text (the next clip's\n"
    "caption). A judge still saying Yes to a control is not using that stream. Prints the share\n"
    "judged Yes and the mean drop from each clip's own score per control.\n\n"
    "example:\n  avjudge bench controls --input world/world.jsonl --judge av=runs/av/final --out controls",
)
