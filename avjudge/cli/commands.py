"""Commands for media, hard negatives, datasets, judges, metrics and training: thin wrappers that parse
arguments, call the library, print."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..resources import shipped
from .grammar import (
    add_engine_arguments,
    add_input,
    add_judge,
    add_out,
    add_runtime_arguments,
    add_served_arguments,
    add_set,
    alias,
    engine_of,
    model_options,
    register,
    required_input,
    served_endpoints,
    warn_deprecated,
)

# ---- media -----------------------------------------------------------------------------


def _probe_args(p: argparse.ArgumentParser) -> None:
    add_input(p, "a media file, a folder of them or a manifest", repeatable=True)
    p.add_argument("paths", nargs="*", type=Path, help=argparse.SUPPRESS)  # the old spelling: files without --input


def _probe(args: argparse.Namespace) -> int:
    from ..data import input_items
    from ..media import MediaError, probe

    if args.paths:
        warn_deprecated("media files without --input", "--input FILE")
    failed = 0
    sources = (args.input or []) + args.paths or required_input(args)  # none given: the shared error
    for path in [item["video"] for item in input_items(sources)]:
        try:
            print(json.dumps(probe(path).to_dict()))
        except MediaError as err:
            failed += 1
            print(json.dumps({"path": str(path), "error": err.problem}))
    return 1 if failed else 0


register(
    "media probe",
    "print stream facts of media files as JSON lines",
    _probe_args,
    _probe,
    "One JSON line per file; a file that cannot be read gets an error line, and the exit code is 1.\n\n"
    "example:\n  avjudge media probe --input clip.mp4 --input other.wav",
)


# ---- hard negatives --------------------------------------------------------------------


def _perturb_list_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _perturb_list(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from ..perturb import describe_all
    from ..perturb.taxonomy import taxonomy

    infos = describe_all()
    text = {
        task: [
            {"dimension": d.key, "category": d.primary, "weight": round(d.weight, 4), "errors": d.error_types}
            for d in taxonomy(task)
        ]
        for task in ("vt", "at")
    }
    if args.json:
        print(json.dumps({"audio_video": [asdict(i) for i in infos], "text": text}, indent=2))
        return 0
    print("audio-video strategies (the picture stays, the audio changes):")
    for info in infos:
        params = ", ".join(f"{k}={v}" for k, v in info.parameters.items()) or "-"
        print(f"  {info.name:<18} {info.family:<9} {params}\n  {'':<18} {info.description}")
    for task, title in (("vt", "video-text"), ("at", "audio-text")):
        print(f"\n{title} caption-edit dimensions (weight):")
        for row in text[task]:
            print(f"  {row['dimension']:<22} {row['category']:<24} {row['weight']:.3f}")
    return 0


def _perturb_apply_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--strategy", required=True, help="a name from `avjudge perturb list`")
    add_input(p, "a video (its picture is kept) or an audio file")
    add_out(p, "where the negative goes (same kind as the input)", required=False)
    alias(p, "--output", "--out", dest="out", type=Path)
    add_set(p, "override a parameter range, e.g. shift_s=[0.0,0.1] or kind=lowpass")
    p.add_argument("--params", help="exact parameters as JSON instead of sampling, e.g. '{\"shift_s\": -0.5}'")
    p.add_argument("--pool", type=Path, help="a manifest of other clips (mismatch, babble, extra voices)")
    p.add_argument("--seed", type=int, default=0)


def _perturb_apply(args: argparse.Namespace) -> int:
    import numpy as np

    from ..config import ConfigError, parse_overrides
    from ..data import load_manifest
    from ..media import decode, encode_audio, probe, replace_audio
    from ..perturb import Context, SourcePool, get_strategy

    source, out = required_input(args), args.out
    if out is None:
        raise ConfigError("--out is required: where the negative goes")
    info = probe(source)
    clip = decode(source, video=False)
    pool = SourcePool(load_manifest(args.pool)) if args.pool else None
    ctx = Context(record={"id": str(source)}, pool=pool)
    strategy = get_strategy(args.strategy, parse_overrides(args.overrides))
    if args.params:
        params = json.loads(args.params)
        out_clip = strategy.apply(clip, params, ctx)
    else:
        out_clip, params = strategy(clip, np.random.default_rng(args.seed), ctx)
    if info.video is not None:
        replace_audio(source, out_clip.audio, out_clip.sample_rate, out)
    else:
        encode_audio(out, out_clip.audio, out_clip.sample_rate)
    print(json.dumps({"strategy": args.strategy, "params": params, "output": str(out)}))
    return 0


register(
    "perturb list", "show every hard-negative strategy and caption-edit dimension", _perturb_list_args, _perturb_list
)
register(
    "perturb apply",
    "make one hard negative of a file and print the parameters applied",
    _perturb_apply_args,
    _perturb_apply,
    "Apply one strategy to one file so you can hear and see what it does. The picture of a\n"
    "video is copied untouched; only its audio track changes.\n\n"
    "examples:\n"
    "  avjudge perturb apply --strategy time_shift_micro --input a.mp4 --out a_shift.mp4\n"
    "  avjudge perturb apply --strategy filter --set kind=lowpass --input a.mp4 --out lp.mp4\n"
    "  avjudge perturb apply --strategy pitch_shift --params '{\"semitones\": -3}' --input a.wav --out p.wav",
)


# ---- datasets ----------------------------------------------------------------------------


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
    p.add_argument("--no-progress", action="store_true")


def _data_build(args: argparse.Namespace) -> int:
    from ..data import build_dataset, load_recipe

    recipe, source = load_recipe(args.recipe, args.overrides + ([f"source={args.input}"] if args.input else []))
    stats = build_dataset(recipe, source, args.out, materialize=args.materialize, progress=not args.no_progress)
    for judge, entry in stats["judges"].items():
        short = f" (asked for {entry['requested']})" if entry["pairs"] < entry["requested"] else ""
        print(
            f"{judge}: {entry['pairs']} pairs{short}: {entry['positives']} positive, {entry['negatives']} negative; "
            f"splits {entry['splits']}; rejected {entry['rejected']} {entry['rejection_reasons']}"
        )
        print(f"    negatives by type: {entry['negative_types']}")
    print(f"dataset hash {stats['dataset_hash']}; stats in {args.out / 'stats.json'}")
    return 0


def _data_export_args(p: argparse.ArgumentParser) -> None:
    add_input(p, "a dataset folder made by `avjudge data build`")
    alias(p, "--dataset", "--input", dest="input", type=Path)
    p.add_argument("--format", required=True, choices=["llamafactory", "swift"], help="the training tool's format")
    add_out(p, "folder for the exported files")


def _data_export(args: argparse.Namespace) -> int:
    from ..data.export import export_dataset

    for path in export_dataset(required_input(args), args.format, args.out):
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
    "Killed and rerun with the same OUT, it continues where it stopped.\n\n"
    "example:\n  avjudge data build --recipe world_demo --input world/world.jsonl --out pairs",
)
register(
    "data export",
    "write pairs in LLaMA-Factory or ms-swift format",
    _data_export_args,
    _data_export,
    "Write a dataset's pairs as the {messages, videos, audios} records LLaMA-Factory and ms-swift\n"
    "train on, so a judge can be trained with those tools too.\n\n"
    "example:\n  avjudge data export --input pairs --format llamafactory --out lf",
)


def _data_audit_args(p: argparse.ArgumentParser) -> None:
    add_input(p, "a dataset folder made by `avjudge data build`")
    alias(p, "--dataset", "--input", dest="input", type=Path)
    p.add_argument("--judges", default="vt,at", help="comma-separated judges that read text")
    p.add_argument("--train-split", default="train", help="the split the text-only classifier learns from")
    p.add_argument("--eval-split", default="test", help="the split it is scored on")


def _data_audit(args: argparse.Namespace) -> int:
    from ..data.audit import text_leak
    from ..stats import format_statistic as number

    for judge in args.judges.split(","):
        leak = text_leak(required_input(args), judge, args.train_split, args.eval_split)
        print(
            f"{judge}: the question's text alone tells {leak['pairs']} held-out pairs apart at AUROC "
            f"{number(leak['overall'])}"
        )
        for kind, value in leak["per_type"].items():
            print(f"    {kind:<24}{number(value)}")
    return 0


register(
    "data audit",
    "how well the text alone tells a dataset's positives from its negatives",
    _data_audit_args,
    _data_audit,
    "Fit a logistic regression on the words and word pairs of each training pair's question\n"
    "(caption and spoken line; no media) and print its held-out AUROC, overall and per negative\n"
    "type against all positives. 0.5: the text gives nothing away. Far above it: those negatives\n"
    "carry a tell of their own (words or counts the positives never use), and a judge trained on\n"
    "them can learn to read the caption instead of the clip.\n\n"
    "example:\n  avjudge data audit --input pairs --judges vt",
)


def _annotate_args(p: argparse.ArgumentParser) -> None:
    add_input(p, "a folder of clips (searched recursively)")
    alias(p, "--in", "--input", dest="input", type=Path)
    add_out(p, "the manifest JSONL to write; rerun to resume")
    p.add_argument("--base-url", required=True, help="an OpenAI-compatible server, e.g. http://localhost:8000/v1")
    p.add_argument("--model", required=True, help="the served omni model, e.g. Qwen/Qwen3-Omni-30B-A3B-Instruct")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the key")
    p.add_argument("--concurrency", type=int, default=4)
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


# ---- judges ----------------------------------------------------------------------------


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
    p.add_argument("--fps", type=float, help="frames per second shown to the judge (default: AVBench's 1.0)")
    p.add_argument("--max-pixels", type=int, help="pixels per frame (default: AVBench's per judge)")
    p.add_argument(
        "--long-audio",
        choices=["error", "head"],
        default="error",
        help="audio longer than the model's window: report an error, or score its beginning",
    )
    add_served_arguments(p)
    add_runtime_arguments(p)
    add_engine_arguments(p)


def _score(args: argparse.Namespace) -> int:
    from ..bench import parse_judge_dirs
    from ..config import ConfigError
    from ..data import input_items
    from ..judges.served import load_judge
    from ..runtime.clip_jobs import score_items

    judges = list(args.judge or [])
    if args.checkpoint is not None:  # the old spelling: --judge TASK --checkpoint DIR
        judges = [f"{task}={args.checkpoint}" for task in judges]
    dirs = parse_judge_dirs(judges, defaults=False)
    if len(dirs) != 1:
        raise ConfigError("give one judge as --judge TASK=DIR, e.g. --judge av=runs/av/final")
    ((task, folder),) = dirs.items()
    items = input_items(required_input(args), text=args.text)  # bad inputs fail before a model loads
    engine = engine_of(args)
    settings = dict(fps=args.fps, max_pixels=args.max_pixels, long_audio=args.long_audio)
    judge = load_judge(task, folder, served_endpoints(args, dirs).get(task), **settings, **model_options(args, engine))
    summary = score_items(judge, items, args.out, progress=not args.no_progress, engine=engine)
    print(json.dumps(summary, indent=2))
    return 0


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


# ---- metrics -------------------------------------------------------------------------------


def _metrics_list_args(p: argparse.ArgumentParser) -> None:
    pass


def _metrics_list(args: argparse.Namespace) -> int:
    from ..metrics import METRICS, NATIVE_FPS

    for name, cls in sorted(METRICS.items()):
        needs = (
            [f"audio at {f'{cls.audio.sample_rate} Hz' if cls.audio.sample_rate else 'its own rate'}"]
            if cls.audio
            else []
        )
        needs += (
            [f"frames {cls.video_fps} fps" if cls.video_fps != NATIVE_FPS else "the file's own frames"]
            if cls.video_fps
            else []
        )
        print(
            f"{name:<15} {cls.description}\n{'':<15} needs {', '.join(needs)}; checkpoints: "
            f"{', '.join(cls.checkpoints) or 'none (shipped with its package)'}"
        )
    return 0


def _metrics_run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--metrics", required=True, help="comma-separated names from `avjudge metrics list`")
    add_input(p, "a media file, a folder of them, or a source manifest", repeatable=True)
    add_out(p, "results: .jsonl, written as it goes, or .parquet, written when complete; rerun to resume")
    add_runtime_arguments(p, model=False)  # --device reaches the metrics that run a model on one (speech_content)
    add_engine_arguments(p)


def _metrics_run(args: argparse.Namespace) -> int:
    from ..runtime.clip_jobs import run_metrics

    names = [n.strip() for n in args.metrics.split(",") if n.strip()]
    summary = run_metrics(
        names,
        required_input(args),
        args.out,
        batch_size=args.batch_size,
        workers=args.workers,
        device=args.device,
        progress=not args.no_progress,
        engine=engine_of(args),
    )
    print(json.dumps(summary, indent=2))
    return 0


def _checkpoints_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--root", type=Path, default=None, help="checkpoint folder (default: $AVJUDGE_CHECKPOINTS or ./checkpoints)"
    )


def _checkpoints_list(args: argparse.Namespace) -> int:
    from ..metrics.checkpoints import load_manifest

    for key, entry in load_manifest().items():
        files = ", ".join(
            f"{f.name} ({f'{f.size:,} bytes' if f.size else 'no published hash: pin it'})" for f in entry.files
        )
        print(f"{key}: {entry.description}\n  files: {files}\n  licence: {entry.licence}\n  get it: {entry.obtain}")
    return 0


def _checkpoints_verify(args: argparse.Namespace) -> int:
    from ..metrics import verify_all

    status = verify_all(args.root)
    for key, state in status.items():
        print(f"{key}: {state}")
    return 0 if all(v == "ok" for v in status.values()) else 1


def _checkpoints_pin_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("key", help="a manifest entry whose files have no published sha256 (see `checkpoints list`)")
    _checkpoints_args(p)


def _checkpoints_pin(args: argparse.Namespace) -> int:
    from ..metrics.checkpoints import PINS, checkpoint_root, pin

    files = pin(args.key, args.root)
    for name, f in files.items():
        print(f"{args.key}/{name}: {f['size']:,} bytes, sha256 {f['sha256']}")
    print(f"recorded in {(args.root or checkpoint_root()) / PINS}")
    return 0


register("metrics list", "show every signal metric, what it needs and what it loads", _metrics_list_args, _metrics_list)
register(
    "metrics run",
    "score clips with signal metrics, each clip decoded once",
    _metrics_run_args,
    _metrics_run,
    "Decode each clip once and give it to every metric named; one JSON line per clip with the\n"
    "scores, and per-metric errors (a clip a metric cannot score is recorded, never scored 0).\n"
    "Rerunning with the same OUT resumes.\n\n"
    "example:\n  avjudge metrics run --metrics dnsmos --input clips/ --out quality.jsonl",
)
register(
    "checkpoints list",
    "list the checkpoints metrics load, with licence and where to get them",
    _checkpoints_args,
    _checkpoints_list,
)
register(
    "checkpoints verify",
    "check every checkpoint file's presence, size and sha256",
    _checkpoints_args,
    _checkpoints_verify,
)
register(
    "checkpoints pin",
    "record the sha256 of weights the manifest has no hash for",
    _checkpoints_pin_args,
    _checkpoints_pin,
    "Some weights (SyncNet, the LAION aesthetics head, CLIP, DF-Arena, Audiobox, DOVER++) have no\n"
    "sha256 that avjudge could publish. Download them from the source `checkpoints list` names,\n"
    "check them there, then pin: their size and sha256 go to <root>/pinned.yaml and every\n"
    "later load refuses a different file.\n\n"
    "example:\n  avjudge checkpoints pin syncnet",
)


# ---- training ----------------------------------------------------------------------------


def _train_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        required=True,
        help="a YAML TrainConfig file, or a shipped one by name: " + ", ".join(shipped("train_config")),
    )
    add_set(
        p,
        "set a judge field (model=DIR, dataset=DIR, output_dir=DIR) or any transformers TrainingArguments option "
        "(max_steps=10, max_grad_norm=0.5, deepspeed=zero3)",
    )
    p.add_argument("positional_overrides", nargs="*", metavar="KEY=VALUE", help=argparse.SUPPRESS)  # the old spelling


def _train(args: argparse.Namespace) -> int:
    from ..config import dump_yaml, load_config
    from ..resources import resolve
    from ..stats import format_statistic
    from ..train import TrainConfig, evaluation_table, run_training
    from ..train.trainer import is_main_process

    if args.positional_overrides:
        warn_deprecated("KEY=VALUE without --set", "--set KEY=VALUE")
    config = load_config(TrainConfig, resolve(args.config, "train_config"), args.positional_overrides + args.overrides)
    if is_main_process():  # under torchrun or deepspeed, one process speaks for all
        print(dump_yaml(config))
    summary = run_training(config)
    if not is_main_process():
        return 0
    if not summary["replicas_agree"]:
        print(f"avjudge: error: the {summary['processes']} processes ended with different weights", file=sys.stderr)
        return 1
    after = summary["eval_after"]["overall"]
    print("\n".join(evaluation_table({config.task: summary})))
    print(
        f"trained {summary['steps']} steps; held-out accuracy {after['accuracy']:.3f}, AUROC "
        f"{format_statistic(after['auroc'])}, Yes-bias {after['yes_bias']:.3f}; model in "
        f"{Path(config.output_dir) / 'final'}"
    )
    return 0


register(
    "train",
    "fine-tune a judge on pairs (single-token Yes/No SFT; DeepSpeed optional)",
    _train_args,
    _train,
    "Train the model in CONFIG on a dataset made by `avjudge data build`. The loss falls on\n"
    "the answer token only; held-out pairs are scored every eval_steps (metrics to the log,\n"
    "wandb offline unless configured, and OUT/eval/step_*.json). OUT/final and every\n"
    "checkpoint load directly in `avjudge score`. Rerunning resumes from the newest checkpoint.\n\n"
    "examples:\n"
    "  avjudge train --config tiny_world_av --set model=DIR --set dataset=pairs --set output_dir=runs/av\n"
    "multi-GPU (the paper's setup; held-out evaluation sharded over the processes, one writes):\n"
    "  torchrun --nproc_per_node 8 -m avjudge.cli train --config av_qwen25omni_7b --set dataset=DIR\n"
    "  deepspeed --num_gpus 8 --module avjudge.cli train --config av_qwen25omni_7b --set dataset=DIR",
)
