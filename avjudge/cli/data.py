"""`avjudge data`: build, audit, export and annotate judge pair datasets."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from ..commands import add_input, add_out, add_set, alias, count, positive_int, register, required_input
from ..resources import shipped
from ..sampling import SAMPLINGS, Sampling


def _data_build_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--recipe", required=True, help="a YAML recipe file, or a shipped one by name: " + ", ".join(shipped("recipe"))
    )
    add_input(p, "the source manifest (JSONL of {id, video, captions}); default: the recipe's source", required=False)
    add_out(p, "dataset folder; rerun to resume")
    add_set(p, "override a recipe field, e.g. judges.av.pairs=1000")
    p.add_argument(
        "--materialize",
        action="store_true",
        help="also write each audio negative (float32 WAV) instead of only its recipe",
    )
    p.add_argument(
        "--audit-sample",
        type=count,
        default=AUDIT_SAMPLE,
        help=f"pairs a split the shortcut audit reads when the build ends (default {AUDIT_SAMPLE}; 0: no audit)",
    )
    p.add_argument("--no-progress", action="store_true")


AUDIT_SAMPLE = 1000  # pairs a split: a few seconds of audit a judge, enough to see a leak of a type with 10 % weight


def _data_build(args: argparse.Namespace) -> int:
    from ..config import ConfigError
    from ..data import build_dataset, load_recipe
    from ..data.perceivability import below_grid_warnings, dataset_perceivability
    from ..data.shortcuts import audit_after_build
    from ..sampling import TASK_SAMPLING, task_sampling

    recipe, source = load_recipe(args.recipe, args.overrides + ([f"source={args.input}"] if args.input else []))
    stats = build_dataset(recipe, source, args.out, materialize=args.materialize, progress=not args.no_progress)
    for judge, entry in stats["judges"].items():
        short = f" (asked for {entry['requested']})" if entry["pairs"] < entry["requested"] else ""
        print(
            f"{judge}: {entry['pairs']} pairs{short}: {entry['positives']} positive, {entry['negatives']} negative; "
            f"splits {entry['splits']}; rejected {entry['rejected']} {entry['rejection_reasons']}"
        )
        print(f"    negatives by type: {entry['negative_types']}")
        if entry.get("redrawn_unchanged"):
            print(f"    {entry['redrawn_unchanged']} draws left their source's sound as it was and were drawn again")
    print(f"dataset hash {stats['dataset_hash']}; stats in {args.out / 'stats.json'}")
    empty = {judge: entry for judge, entry in stats["judges"].items() if entry["requested"] and not entry["pairs"]}
    if empty:  # a judge asked for and given nothing to learn from is a failed build, not a quiet one
        raise ConfigError(
            "; ".join(
                f"{judge}: no pairs built of the {entry['requested']} asked for (sources and draws left out: "
                f"{entry['rejection_reasons'] or 'none'})"
                for judge, entry in empty.items()
            )
            + f"; see {args.out / 'stats.json'}"
        )
    seen = dataset_perceivability(args.out, task_sampling("av"))
    if seen is not None:
        where = f"the AV judge's default sampling ({TASK_SAMPLING['av']})"
        for line in below_grid_warnings(seen, where):
            print(line)
    if args.audit_sample:
        for line in audit_after_build(args.out, args.audit_sample, not args.no_progress):
            print(line)
    return 0


def _data_export_args(p: argparse.ArgumentParser) -> None:
    add_input(p, "a dataset folder made by `avjudge data build`")
    alias(p, "--dataset", "--input", dest="input", type=Path)
    p.add_argument(
        "--format",
        required=True,
        choices=["llamafactory", "swift", "pairs-csv", "llamafactory-ranking"],
        help="llamafactory, swift: Yes / No examples; pairs-csv (VideoAlign), llamafactory-ranking: preference pairs, "
        "each source's positive against each negative that changes its clip, both clips written as the judge saw them",
    )
    add_out(p, "folder for the exported files", folder=True)


def _data_export(args: argparse.Namespace) -> int:
    from ..data.export import export_dataset

    for path in export_dataset(required_input(args), args.format, args.out, progress=True):
        print(path)
    return 0


register(
    "data build",
    "build balanced judge pair datasets with hard negatives from a recipe",
    _data_build_args,
    _data_build,
    "Read the recipe's source manifest, split sources (no clip, or copy of a clip, in two\n"
    "splits), and write positives and hard negatives per judge to OUT/pairs/<judge>/<split>.jsonl,\n"
    "a Hugging Face dataset to OUT/hf/<judge>, and counts to OUT/stats.json. A negative is\n"
    "stored as its recipe and applied when loaded; --materialize writes its audio too.\n"
    "Killed and rerun with the same OUT, it continues where it stopped. When it ends, the\n"
    "shortcut audit (`avjudge data audit`) reads a sample of each judge's pairs, writes\n"
    "OUT/audit.json and warns of every negative type one side alone gives away.\n\n"
    "example:\n  avjudge data build --recipe world_demo --input world/world.jsonl --out pairs",
)
register(
    "data export",
    "write pairs in LLaMA-Factory or ms-swift format, or as preference pairs (VideoAlign CSV, LLaMA-Factory ranking)",
    _data_export_args,
    _data_export,
    "Write a dataset's pairs as the {messages, videos, audios} records LLaMA-Factory and ms-swift\n"
    "train on, so a judge can be trained with those tools too; or as preference pairs for pairwise\n"
    "reward training: VideoAlign's CSV (path_A, path_B, prompt, a label per dimension) or\n"
    "LLaMA-Factory's ranking format (both clips in the prompt, chosen / rejected the verdicts).\n"
    "Every clip is written to OUT/clips as `train` shows it: the negative applied, picture and\n"
    "sound cut to the pair's window (an MP4 with its sound, and a WAV of the sound).\n\n"
    "examples:\n  avjudge data export --input pairs --format llamafactory --out lf\n"
    "  avjudge data export --input pairs --format pairs-csv --out videoalign",
)


def _data_audit_args(p: argparse.ArgumentParser) -> None:
    add_input(p, "a dataset folder made by `avjudge data build`")
    alias(p, "--dataset", "--input", dest="input", type=Path)
    p.add_argument("--judges", help="comma-separated judges to audit, e.g. av,vt,at (default: every judge it holds)")
    p.add_argument("--train-split", default="train", help="the split the one-side classifiers learn from")
    p.add_argument("--eval-split", default="test", help="the split they are scored on (no source in both)")
    p.add_argument("--limit", type=positive_int, help="at most this many pairs a split (a fixed sample; default: all)")
    p.add_argument(
        "--workers", type=positive_int, default=os.cpu_count() or 1, help="decoding processes (default: one a core)"
    )
    p.add_argument(
        "--sampling",
        metavar="JUDGE",
        help="also say what an AV judge's input can represent of each negative type (perceivability) at its "
        "sampling: a named sampling ("
        + ", ".join(sorted(SAMPLINGS))
        + "), a train config (a shipped name such as av_qwen25omni_7b, or a YAML file) or a judge folder (the "
        "sampling it was trained with)",
    )
    add_out(p, "also write the report here as JSON", required=False)
    p.add_argument("--no-progress", action="store_true")


def audit_sampling(judge: str) -> tuple[Sampling, str]:
    """(the sampling, in words where it comes from) of ``--sampling``: a named sampling, a judge folder or a train
    config."""
    from ..config import ConfigError, load_config
    from ..judges.judge import checkpoint_sampling
    from ..resources import resolve
    from ..train import TrainConfig

    if judge in SAMPLINGS:
        return SAMPLINGS[judge], f"the {judge} sampling"
    folder = Path(judge).expanduser()
    if folder.is_dir():
        if not (folder / "config.json").is_file():  # else the default sampling would be reported as the judge's
            raise ConfigError(
                f"--sampling {judge}: the folder holds no judge (no config.json); give a trained judge's folder, a "
                f"train config or one of {', '.join(sorted(SAMPLINGS))}"
            )
        return checkpoint_sampling("av", folder), f"the judge in {judge}"
    config = load_config(TrainConfig, resolve(judge, "train_config"), [])
    return config.time_sampling(), f"train config {judge}"


def _data_audit(args: argparse.Namespace) -> int:
    from ..config import ConfigError
    from ..data.perceivability import dataset_perceivability, perceivability_lines
    from ..data.shortcuts import audit_lines, shortcut_audit
    from ..jsonl import write_json

    if args.out is not None and args.out.suffix != ".json":
        raise ConfigError(f"--out {args.out}: the report is JSON; name a .json file")
    judges = [j for j in (args.judges or "").split(",") if j] or None
    sampling, where = audit_sampling(args.sampling) if args.sampling else (None, None)  # refused before the audit
    report = shortcut_audit(
        required_input(args), judges, args.train_split, args.eval_split, args.limit, args.workers, not args.no_progress
    )
    print("\n".join(audit_lines(report)))
    if sampling is not None and "av" in report:
        seen = dataset_perceivability(required_input(args), sampling, (args.train_split, args.eval_split))
        report["av"]["perceivability"] = seen
        print(f"av at {where}:")
        print("\n".join(perceivability_lines(seen)))
    if args.out is not None:
        write_json(args.out, report)
        print(f"report in {args.out}")
    return 0


register(
    "data audit",
    "how well one side of a pair alone (audio, picture or text) tells a dataset's negatives apart",
    _data_audit_args,
    _data_audit,
    "For each judge and each side its pairs show (audio, picture, text), fit a logistic\n"
    "regression on cheap features of that side alone (silence and loudness at the edges,\n"
    "spectral balance, noise, seams and loops; black, frozen and looping frames, motion; the\n"
    "question's words) on the training split, and print its held-out AUROC per negative type\n"
    "with a 95 % interval. 0.5: that side alone says nothing. A type told apart by a side its\n"
    "strategy does not declare (`avjudge perturb list`: a filter may be heard, a time shift may\n"
    "not) is a LEAK, named with what gives it away: a judge trained on it can learn that\n"
    "instead of comparing sound and picture (or text).\n\n"
    "With --sampling, it also says for each AV negative type whether a judge's input can\n"
    "represent it at all: a judge reads the picture in token groups of 2 sampled frames, so a\n"
    "sound moved by less than 2 / fps seconds can hide inside one (AVBench's 1 fps: a 2 s\n"
    "grid). Per type: the share of shifts at least a grid step long, and, where the sources\n"
    "carry ground truth (the world), the share of pairs whose events differ from the picture at\n"
    "the grid. A type under half is BELOW THE GRID: the judge cannot learn it.\n\n"
    "examples:\n  avjudge data audit --input pairs --judges av,vt --out audit.json\n"
    "  avjudge data audit --input pairs --judges av --sampling avbench\n"
    "  avjudge data audit --input pairs --judges av --sampling runs/av/final",
)


def _annotate_args(p: argparse.ArgumentParser) -> None:
    add_input(p, "a folder of clips (searched recursively)")
    alias(p, "--in", "--input", dest="input", type=Path)
    add_out(p, "the manifest JSONL to write; rerun to resume")
    p.add_argument("--base-url", required=True, help="an OpenAI-compatible server, e.g. http://localhost:8000/v1")
    p.add_argument("--model", required=True, help="the served omni model, e.g. Qwen/Qwen3-Omni-30B-A3B-Instruct")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the key")
    p.add_argument("--concurrency", type=positive_int, default=4)
    p.add_argument("--no-progress", action="store_true")


def _annotate(args: argparse.Namespace) -> int:
    from ..data.annotate import annotate
    from ..llm import OpenAIChatBackend

    backend = OpenAIChatBackend(
        args.base_url,
        args.model,
        api_key_env=args.api_key_env,
        max_concurrency=args.concurrency,
        cache_dir=args.out.parent / ".annotate_cache",
    )
    print(json.dumps(annotate(required_input(args), args.out, backend, progress=not args.no_progress), indent=2))
    return 0


register(
    "data annotate",
    "caption real clips with an omni model server into a source manifest",
    _annotate_args,
    _annotate,
    "Send each clip to an OpenAI-compatible omni model and write {id, video, captions:\n"
    "{video, audio, utterance}} per clip. Replies are cached beside OUT; rerunning resumes. A clip\n"
    "with an unusable reply gets an `error` (and is skipped as a source), never empty captions.",
)
