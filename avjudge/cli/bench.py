"""`avjudge bench`: the AVBench benchmark of generators: prompt files, the runner, reports, human alignment, a judge's
sanity controls."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from ..commands import (
    add_input,
    add_out,
    alias,
    count,
    non_negative_float,
    positive_float,
    positive_int,
    positive_share,
    register,
    required_input,
)
from ..stats import printed
from .grammar import (
    add_engine_arguments,
    add_judge,
    add_runtime_arguments,
    add_scorer_arguments,
    add_served_arguments,
    clip_scorer,
    engine_of,
    judge_dirs,
    model_options,
)

DIMS_HELP = (
    "comma-separated: av, vt, at (judges), syncnet, speech_content (sc), dfarena, nisqa, dnsmos, audiobox, "
    "dover, laion_aesthetic (aesthetic) (metrics; 'all', the default, is these), desync (av-benchmark's "
    "DeSync, lower is better), clap and clap_ms (LAION-CLAP and MS-CLAP text-audio similarity) and "
    "speech_share, music_share, noise_share, silence_share (PANNs tags); those that cannot run here are skipped "
    "with the reason"
)


# ---- prompts ----------------------------------------------------------------------------


def _synth_args(p: argparse.ArgumentParser) -> None:
    add_input(p, "a world folder (from `avjudge world make`) or its world.jsonl")
    alias(p, "--world", "--input", dest="input", type=Path)
    add_out(p, "writes OUT/prompts.json and OUT/videos/<model>/<id>.mp4")
    p.add_argument("--seed", type=count, default=0)


def _synth(args: argparse.Namespace) -> int:
    from ..bench.prompt_files import write_prompts
    from ..bench.synthetic import make_model_folders, world_prompts

    world = required_input(args)
    prompts = write_prompts(world_prompts(world), args.out / "prompts.json")
    written = make_model_folders(world, args.out / "videos", seed=args.seed)
    print(json.dumps({"prompts": str(prompts), "videos": str(args.out / "videos"), "clips": written}, indent=2))
    return 0


def _curate_args(p: argparse.ArgumentParser) -> None:
    add_input(p, "a prompt file or folder of candidate prompts")
    alias(p, "--candidates", "--input", dest="input", type=Path)
    p.add_argument("--n", required=True, type=positive_int, help="prompts to choose")
    p.add_argument(
        "--attributes",
        required=True,
        help="comma-separated entry attributes to balance, e.g. language,speakers,emotion,shot",
    )
    p.add_argument("--cap", type=positive_share, default=0.5, help="largest share any one attribute value may take")
    p.add_argument(
        "--exclude-manifest",
        type=Path,
        action="append",
        help="a training source manifest whose captions the prompts must not repeat (repeatable)",
    )
    p.add_argument("--seed", type=count, default=0)
    add_out(p, "the curated prompts (JSON); OUT's .report.json beside it")


def _curate(args: argparse.Namespace) -> int:
    from ..bench.curate import curate, training_hashes
    from ..bench.prompt_files import load_prompts, write_prompts
    from ..jsonl import write_json

    exclude = set().union(*(training_hashes(m) for m in args.exclude_manifest or []))
    chosen, report = curate(
        load_prompts(required_input(args)),
        args.n,
        [a.strip() for a in args.attributes.split(",")],
        args.cap,
        args.seed,
        exclude,
    )
    write_prompts(chosen, args.out)
    write_json(args.out.with_suffix(".report.json"), report)
    print(json.dumps(report, indent=2))
    if report["shortfall"]:
        print(f"only {report['chosen']} of {args.n} prompts fit the {args.cap:.0%} cap; add candidates or relax it")
    return 0


register(
    "bench synth",
    "make a benchmark with a known answer from a world: prompts + defective model folders",
    _synth_args,
    _synth,
    "Write a prompt file from the world's captions and one folder of clips per synthetic\n"
    "model: reference (the world's clips), shifted (sound moved in time), noisy (white noise at\n"
    "0-5 dB SNR) and mismatched (another clip's sound). Working judges and metrics rank the\n"
    "reference first on the dimension each defect hurts.\n\n"
    "example:\n  avjudge world make --out world --n 24 --duration 4\n"
    "  avjudge bench synth --input world --out bench_in",
)
register(
    "bench curate",
    "choose balanced prompts (hard quota per attribute value, training dedupe)",
    _curate_args,
    _curate,
    "Greedy hard-quota sampling: candidates in a seeded random order are taken while no value\n"
    "of any listed attribute exceeds CAP of the target size; prompts whose text appears in a\n"
    "training manifest (normalised-text hash) are dropped first. Prints the distribution.\n\n"
    "example:\n  avjudge bench curate --input pool.json --n 200 --attributes language,speakers "
    "--exclude-manifest train/world.jsonl --out prompts.json",
)


# ---- runner and reports ----------------------------------------------------------------------


def _run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prompts", type=Path, help="the prompt file (AVBench's JSON) or a folder (normal.json, hard.json)")
    alias(p, "--suite", "--prompts", dest="prompts", type=Path)
    add_input(p, "the generated clips: a folder ROOT with ROOT/<model>/<prompt id>*.mp4")
    alias(p, "--videos", "--input", dest="input", type=Path)
    p.add_argument("--models", help="comma-separated model folders (default: every folder in ROOT)")
    p.add_argument("--dims", default="all", help=DIMS_HELP)
    add_out(p, "folder for samples.jsonl and summary.json; rerun to resume")
    add_scorer_arguments(p)
    add_engine_arguments(p)


def _run(args: argparse.Namespace) -> int:
    from ..bench import load_prompts
    from ..bench.runner import run_bench
    from ..config import ConfigError
    from ..scoring.dimensions import parse_dimensions

    if args.prompts is None:
        raise ConfigError("--prompts is required: the prompt file the clips were generated from (see --help)")
    entries = load_prompts(args.prompts)
    engine = engine_of(args)
    scorer = clip_scorer(args, parse_dimensions(args.dims), engine)
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
    "score every model's clips of a benchmark's prompts on the benchmark dimensions",
    _run_args,
    _run,
    "Find ROOT/<model>/<id>.mp4 (or <id>_anything.mp4) for every prompt, decode each clip once,\n"
    "score it with the judges and metrics asked for, and append one JSON line per clip to\n"
    "OUT/samples.jsonl. OUT/summary.json holds mean, std, n and errors per model x split x\n"
    "dimension, the prompts with no clip, and the dimensions skipped (with why). A clip that\n"
    "cannot be scored is an error, never a 0. Rerun to resume after a kill.\n\n"
    "example:\n  avjudge bench run --prompts bench_in/prompts.json --input bench_in/videos --dims av,dnsmos \\\n"
    "      --judge av=runs/av/final --out bench_out",
)
register(
    "bench report",
    "leaderboards (Markdown, CSV), charts and one HTML report from a bench run",
    _report_args,
    _report,
    "Per split: leaderboard_<split>.md / .csv shaped like AVBench's Table 2 (each cell mean ± std\n"
    "over its n clips; the best in bold, unless the split has fewer than 5 prompts), and\n"
    "radar_<split>.png (each dimension min-max normalised over models; bars_<split>.png with each\n"
    "mean and its spread for fewer than three dimensions); report.html holds both and every\n"
    "sample with its video player, and opens from disk.",
)


# ---- human alignment -------------------------------------------------------------------------


def _align_args(p: argparse.ArgumentParser) -> None:
    add_input(p, "the --out folder of `avjudge bench run`")
    alias(p, "--bench", "--input", dest="input", type=Path)
    p.add_argument(
        "--judgments",
        required=True,
        type=Path,
        help="CSV with prompt_id, model_a, model_b, dimension, winner (A|B|tie), annotator: a judgment a row; or "
        "published vote counts, a row a pair: prompt_id, model_a, model_b, dimension, votes_a, votes_b, ties",
    )
    p.add_argument(
        "--resample",
        choices=["auto", "prompt", "judgment"],
        default="auto",
        help="what the bootstrap resamples: prompts, each with all its judgments (auto, where a prompt holds "
        "several: votes on one pair are not independent), or single judgments",
    )
    add_out(p, "folder for align.json and scatter plots (default: the bench folder)", required=False)
    p.add_argument(
        "--eps",
        type=non_negative_float,
        help="score differences up to eps count as a metric tie (default: each dimension's own tie band: 0.1 for "
        "the MOS metrics NISQA and DNSMOS, 0 for the others)",
    )
    p.add_argument("--bootstrap", type=count, default=1000, help="bootstrap resamples for confidence intervals")
    p.add_argument("--seed", type=count, default=0)


def _align(args: argparse.Namespace) -> int:
    from ..bench.align import align_bench

    out = args.out or required_input(args)
    results = align_bench(required_input(args), args.judgments, out, args.eps, args.bootstrap, args.seed, args.resample)
    for dim, result in results.items():
        pearson = result.get("pearson", {})
        spread = {"pearson": pearson.get("ci95"), "2afc": result.get("accuracy_2afc_ci95")}
        within = {k: f" [{printed(v[0], 2)}, {printed(v[1], 2)}]" if v else "" for k, v in spread.items()}
        resampled = result.get("resampling")
        print(
            f"{dim}: {result.get('used', 0)} judgments used ({result['unscored']} unscored); "
            f"Pearson {printed(pearson.get('value'), 3, 'n/a')}{within['pearson']}; "
            f"2AFC accuracy {printed(result.get('accuracy_2afc'), 3, 'n/a')}{within['2afc']}"
            + (f" (95% intervals resampling {resampled['clusters']} {resampled['unit']}s)" if resampled else "")
        )
        for warning in result.get("warnings", []):
            print(f"  warning: {warning}")
    print(f"wrote {out / 'align.json'}")
    return 0


register(
    "bench align",
    "agreement with human pairwise judgments: win ratios, correlations, 2AFC accuracy",
    _align_args,
    _align,
    "Per dimension: WinRatio = (W + 0.5 T) / (W + T + L) per model from the human judgments and\n"
    "from the metric's per-sample scores on the same pairs; Pearson, Spearman and Kendall between\n"
    "them; 2AFC accuracy (human ties left out, metric ties count one half); tie-aware accuracy\n"
    "at --eps and tie-calibrated; bootstrap 95% intervals that resample prompts (each with all\n"
    "its judgments) where a prompt holds several. Judgments a row, or vote counts a pair.\n"
    "Scatter plots like AVBench Fig. 6.",
)


# ---- judge sanity controls -------------------------------------------------------------------------


def _controls_args(p: argparse.ArgumentParser) -> None:
    add_input(p, "clips: a media file, a folder of them, or a manifest (.jsonl; its captions for vt / at judges)")
    add_judge(p, "the judge to check, e.g. av=runs/av/final", repeatable=False)
    add_out(p, "folder for controls.jsonl and summary.json")
    add_runtime_arguments(p)


def _controls(args: argparse.Namespace) -> int:
    from ..bench.controls import run_controls
    from ..config import ConfigError
    from ..data.manifest import input_items
    from ..judges import Judge

    judges = judge_dirs(args.judge, defaults=False)
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


# ---- a sync scorer's lag profile ------------------------------------------------------------------------------


def _lag_args(p: argparse.ArgumentParser) -> None:
    add_input(p, "clips you believe in sync: a media file, a folder of them, or a manifest (.jsonl)")
    p.add_argument(
        "--dim",
        default="av",
        help="the sync scorer, a dimension: av (a judge, with --judge av=DIR), syncnet, desync (default: av)",
    )
    p.add_argument("--max-offset", type=positive_float, default=2.0, help="largest offset cut, seconds (default 2)")
    p.add_argument("--step", type=positive_float, default=0.25, help="offset step, seconds (default 0.25)")
    p.add_argument(
        "--window",
        type=positive_float,
        help="seconds of picture scored at every offset (default: the clip's duration less twice --max-offset)",
    )
    p.add_argument("--bootstrap", type=count, default=1000, help="resamples of clips for each 95%% interval")
    p.add_argument("--seed", type=count, default=0, help="the bootstrap's seed")
    add_out(p, "folder for profiles.jsonl (written as it goes; rerun to resume), lag_profile.json and .png")
    add_judge(p, "the AV judge to profile, e.g. av=runs/av/final (default: $AVJUDGE_CHECKPOINTS/judges/av)")
    add_served_arguments(p)
    add_runtime_arguments(p)  # each clip's cuts are decoded here, in memory: no decoding processes


def _lag(args: argparse.Namespace) -> int:
    from ..bench.lag import LagGrid, profile_clips, scoring_cuts
    from ..config import ConfigError
    from ..data.manifest import input_items
    from ..media import NATIVE_FPS
    from ..scoring import clip_of
    from ..scoring.dimensions import parse_dimensions

    grid = LagGrid(args.max_offset, args.step, args.window)  # a grid that cannot be cut fails before a model loads
    items = input_items(required_input(args))
    dims = parse_dimensions(args.dim)
    if len(dims) != 1:
        raise ConfigError(f"--dim takes one dimension, the sync scorer to profile, not {args.dim!r}")
    dim = dims[0]
    scorer = clip_scorer(args, [dim], None)
    needs = scorer.scoring.needs  # the cut needs both streams, whatever the scorer reads
    needs = dataclasses.replace(needs, video=True, audio=True, fps=needs.fps or NATIVE_FPS)
    summary = profile_clips(
        items,
        lambda item: clip_of(item, needs),
        scoring_cuts(scorer.scoring, dim.provider, dim.output, dim.higher_is_better),
        grid,
        args.out,
        dim.name,
        args.bootstrap,
        args.seed,
        progress=not args.no_progress,
    )
    peaks = summary["peak_within_one_step"]
    print(f"{summary['profiled']} of {summary['clips']} clips profiled with {dim.name}; {summary['errors']} failed")
    print(f"profile peaks within {grid.step:g} s of 0: {printed(peaks['share'])} {peaks['ci95'] or ''}")
    for size, figure in summary["auroc_in_sync_vs_offset"].items():
        print(f"in sync vs ±{size} s: AUROC {printed(figure['auroc'])} {figure['ci95'] or ''}")
    print(f"wrote {args.out / 'profiles.jsonl'}, {args.out / 'lag_profile.json'}" + (
        f", {summary['plot']}" if summary["plot"] else " (no plot: pip install matplotlib)"))  # fmt: skip
    return 0 if summary["profiled"] else 1


register(
    "bench lag",
    "a sync scorer's lag profile on your own clips: its score as each clip's sound is cut against its picture",
    _lag_args,
    _lag,
    "For clips you believe in sync (talking heads, foley, your generator's outputs), cut each\n"
    "clip's sound against its picture at every offset over ±MAX (crop, never pad: the cut of the\n"
    "recipe's time shifts; positive offsets put the sound late) and score every cut with the\n"
    "scorer. A scorer that hears synchronisation peaks at 0; one blind to time is flat. Reports\n"
    "per clip its profile and peak, and overall the AUROC of in-sync cuts against each offset\n"
    "size and the share of clips peaking within one step of 0, with 95%% intervals from\n"
    "resampling clips. This is how to check a sync judge on real footage where no labels exist.\n\n"
    "examples:\n"
    "  avjudge bench lag --input talking_heads/ --judge av=runs/av/final --out lag_av\n"
    "  avjudge bench lag --input talking_heads/ --dim syncnet --max-offset 1 --step 0.2 --out lag_syncnet",
)
