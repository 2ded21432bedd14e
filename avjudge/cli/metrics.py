"""`avjudge metrics` and `avjudge checkpoints`: signal metrics, and the checkpoints they load."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..commands import add_input, add_out, register, required_input
from .grammar import add_decode_processes, add_engine_arguments, add_runtime_arguments, engine_of


def _metrics_list_args(p: argparse.ArgumentParser) -> None:
    pass


def _metrics_list(args: argparse.Namespace) -> int:
    from ..media import NATIVE_FPS
    from ..metrics import METRICS

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
    add_decode_processes(p)
    add_engine_arguments(p)


def _metrics_run(args: argparse.Namespace) -> int:
    from ..runtime.jobs import check_output
    from ..scoring.jobs import run_metrics

    check_output(args.out)
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
    per_metric = summary["per_metric"]
    if summary["done"] and all(m["clips"] == 0 for m in per_metric.values()):
        reasons = [reason for m in per_metric.values() for reason in m["error_reasons"]]
        print(f"avjudge: no metric scored any of the {summary['done']} clips (e.g. {reasons[0]}); each reason is in "
              f"{args.out}", file=sys.stderr)  # fmt: skip
        return 1
    return 0


def _metrics_compare_args(p: argparse.ArgumentParser) -> None:
    from ..metrics.sets import SET_METRICS

    known = "; ".join(f"{m.name}: {m.description}" for m in SET_METRICS.values())
    p.add_argument("--metrics", required=True, help=f"comma-separated set metrics ({known})")
    add_input(p, "the generated clips: a folder of them, a manifest or files")
    p.add_argument(
        "--reference",
        type=Path,
        required=True,
        help="the reference clips, as --input; clips pair by id (a folder's: their path without the extension)",
    )
    add_out(p, "the report (.json): each metric under avjudge's and av-benchmark's names, clips, failures, pairs")
    p.add_argument(
        "--protocol",
        choices=["av-benchmark", "all-clips"],
        default="av-benchmark",
        help="av-benchmark: as its evaluate.py, PaSST's FD and IS over the clips paired by id only (the report lists "
        "the unpaired); all-clips: every metric over every clip",
    )
    p.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="where each clip's features are kept, by extractor and file content "
        "(default: $AVJUDGE_CACHE/features); a rerun reuses them",
    )
    p.add_argument(
        "--root", type=Path, default=None, help="checkpoint folder (default: $AVJUDGE_CHECKPOINTS or ./checkpoints)"
    )
    add_runtime_arguments(p, batch_size=16, model=False)


def _metrics_compare(args: argparse.Namespace) -> int:
    from ..devices import device_name
    from ..scoring.set_compare import compare_sets

    report = compare_sets(
        required_input(args),
        args.reference,
        [n.strip() for n in args.metrics.split(",") if n.strip()],
        args.out,
        cache=args.cache,
        root=args.root,
        device=device_name(args.device),
        batch_size=args.batch_size,
        workers=args.workers,
        progress=not args.no_progress,
        protocol=args.protocol,
    )
    print(json.dumps({k: report[k] for k in ("metrics", "av_benchmark", "errors")}, indent=2))
    failed = {side: len(report[side]["failed"]) for side in ("generated", "reference")}
    if any(failed.values()):
        print(f"clips that could not be read (each named in {args.out}): {failed}")
    return 0


def _checkpoints_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--root", type=Path, default=None, help="checkpoint folder (default: $AVJUDGE_CHECKPOINTS or ./checkpoints)"
    )


def _checkpoints_list(args: argparse.Namespace) -> int:
    from ..metrics.checkpoints import checkpoint_root, load_manifest

    root = (args.root or checkpoint_root()).resolve()
    print(f"checkpoint folder: {root}")
    for key, entry in load_manifest().items():
        files = ", ".join(
            f"{f.name} ({f'{f.size:,} bytes' if f.size else 'no published hash: pin it'})" for f in entry.files
        )
        obtain = entry.obtain.replace("<root>", str(root))
        print(f"{key}: {entry.description}\n  files: {files}\n  licence: {entry.licence}\n  get it: {obtain}")
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
    "metrics compare",
    "compare a generated set of clips with a reference set: FD, KL, IS as papers report them",
    _metrics_compare_args,
    _metrics_compare,
    "Extract each clip's features once (cached by file content: a rerun reuses them), then the set\n"
    "statistics generation papers print: Fréchet distance of embeddings (FD), KL divergence of class\n"
    "distributions between clips paired by id, inception score of the generated set (IS). The report\n"
    "gives each under avjudge's name and av-benchmark's key (FD-PANN, KL-PANNS-softmax, ISC-PANNS-mean),\n"
    "and every clip that could not be read, with why.\n\n"
    "example:\n  avjudge metrics compare --metrics fd_panns,kl_panns,is_panns --input generated/ \\\n"
    "      --reference real/ --out report.json",
)


def _make_random_args(p: argparse.ArgumentParser) -> None:
    from ..metrics.random_checkpoints import BUILDERS

    p.add_argument("--out", type=Path, required=True, help="the checkpoint folder to build (AVJUDGE_CHECKPOINTS=OUT)")
    p.add_argument("--only", help=f"comma-separated subset of {', '.join(BUILDERS)} (default: all)")
    p.add_argument("--nisqa", type=Path, help="a folder holding NISQA's real nisqa.tar / nisqa_tts.tar, linked in")


def _make_random(args: argparse.Namespace) -> int:
    from ..metrics.random_checkpoints import make_random_checkpoints

    only = [n.strip() for n in args.only.split(",") if n.strip()] if args.only else None
    for name, keys in make_random_checkpoints(args.out, only, args.nisqa).items():
        print(f"{name}: built and pinned {', '.join(keys)}")
    print(f"use them with AVJUDGE_CHECKPOINTS={args.out} (their scores mean nothing; their cost is the real one)")
    return 0


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
register(
    "checkpoints make-random",
    "build real-size metric checkpoints with random weights, pinned: for timing, memory and tests",
    _make_random_args,
    _make_random,
    "Build the metrics' checkpoints at their real size with random weights (every tensor random, the\n"
    "AudioSet heads scaled), and pin them, where the real ones cannot be downloaded: their scores mean\n"
    "nothing, their time and memory are the real ones. NISQA's real weights can be linked in.\n\n"
    "example:\n  avjudge checkpoints make-random --out /tmp/rck --only panns,passt && "
    "AVJUDGE_CHECKPOINTS=/tmp/rck avjudge metrics compare ...",
)
