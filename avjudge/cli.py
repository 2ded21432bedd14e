"""The ``avjudge`` command: thin wrappers that parse arguments, call the library, print.

Commands register themselves in COMMANDS by their words ("world make"); nested
sub-parsers are built from that registry.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import __version__
from .config import ConfigError


@dataclass(frozen=True)
class Command:
    words: tuple[str, ...]
    help: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


COMMANDS: dict[tuple[str, ...], Command] = {}
GROUP_HELP: dict[str, str] = {
    "world": "make the synthetic audio-video world",
    "media": "inspect media files",
}


def register(words: str, help: str, add_arguments, run, description: str = "") -> None:
    key = tuple(words.split())
    COMMANDS[key] = Command(key, help, description or help, add_arguments, run)


class _Formatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    pass


# ---- world -----------------------------------------------------------------------------

def _parse_duration(text: str) -> tuple[float, float | None]:
    if ":" in text:
        lo, hi = text.split(":", 1)
        return float(lo), float(hi)
    return float(text), None


def _parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = text.lower().split("x")
        return int(w), int(h)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"size must look like 256x256, got {text!r}") from err


def _world_make_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, type=Path, help="folder for clips/, world.jsonl and world_summary.json")
    p.add_argument("--n", type=int, default=20, help="number of clips")
    p.add_argument("--seed", type=int, default=0, help="world seed; the same seed always makes the same clips")
    p.add_argument("--duration", default="8", help="clip length in seconds, or a range such as 4:12")
    p.add_argument("--size", type=_parse_size, default=(256, 256), help="frame size WxH (even numbers)")
    p.add_argument("--fps", type=float, default=25.0, help="frame rate")
    p.add_argument("--sample-rate", type=int, default=16000, help="audio sample rate in Hz")
    p.add_argument("--speech", choices=["auto", "on", "off"], default="auto",
                   help="spoken utterances with espeak-ng (auto: when it is installed)")
    p.add_argument("--config", type=Path, help="a YAML WorldConfig; flags given here override it")
    p.add_argument("--workers", type=int, default=None, help="parallel processes (default: all cores)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def _world_make(args: argparse.Namespace) -> int:
    from .config import load_config
    from .world import WorldConfig, make_world

    lo, hi = _parse_duration(args.duration)
    overrides = [f"n={args.n}", f"seed={args.seed}", f"duration={lo}", f"max_duration={'null' if hi is None else hi}",
                 f"width={args.size[0]}", f"height={args.size[1]}", f"fps={args.fps}",
                 f"sample_rate={args.sample_rate}", f"speech={args.speech}"]
    cfg = load_config(WorldConfig, args.config, overrides)
    summary = make_world(cfg, args.out, workers=args.workers, progress=not args.no_progress)
    print(json.dumps(summary, indent=2))
    print(f"wrote {summary['clips']} clips and {args.out / 'world.jsonl'}")
    return 0


register("world make", "make synthetic clips with exact ground truth and captions", _world_make_args, _world_make,
         "Render N deterministic clips (shapes that move and sound, ambience, optional speech)\n"
         "into OUT/clips/*.mp4 and one ground-truth record per clip into OUT/world.jsonl.\n"
         "Rerunning with the same OUT resumes: finished clips are kept.\n\n"
         "example:\n  avjudge world make --out world --n 100 --duration 4:12 --size 320x240")


# ---- media -----------------------------------------------------------------------------

def _probe_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", type=Path, help="media files")


def _probe(args: argparse.Namespace) -> int:
    from .media import MediaError, probe

    failed = 0
    for path in args.paths:
        try:
            print(json.dumps(probe(path).to_dict()))
        except MediaError as err:
            failed += 1
            print(json.dumps({"path": str(path), "error": err.problem}))
    return 1 if failed else 0


register("media probe", "print stream facts of media files as JSON lines", _probe_args, _probe)


# ---- judges ----------------------------------------------------------------------------

def _score_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--judge", required=True, choices=["av", "vt", "at"], help="which consistency to judge")
    p.add_argument("--checkpoint", required=True, type=Path, help="local checkpoint directory")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--video", type=Path, action="append", help="a media file (repeatable)")
    src.add_argument("--manifest", type=Path,
                     help="JSONL of {id, video, captions: {video, audio, utterance}} (world.jsonl works)")
    p.add_argument("--text", help="description for --video with the vt/at judges")
    p.add_argument("--out", required=True, type=Path, help="results JSONL; rerun to resume")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--fps", type=float, help="frames per second shown to the judge (default: AVBench's 1.0)")
    p.add_argument("--max-pixels", type=int, help="pixels per frame (default: AVBench's per judge)")
    p.add_argument("--long-audio", choices=["error", "head"], default="error",
                   help="audio longer than the model's window: report an error, or score its beginning")
    p.add_argument("--device", default="auto")
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"])
    p.add_argument("--no-progress", action="store_true")


def _score(args: argparse.Namespace) -> int:
    from .judges import Judge
    from .judges.batch import file_items, manifest_items, score_items

    judge = Judge.load(args.judge, args.checkpoint, batch_size=args.batch_size, fps=args.fps,
                       max_pixels=args.max_pixels, long_audio=args.long_audio, device=args.device, dtype=args.dtype)
    items = manifest_items(args.manifest) if args.manifest else file_items(args.video, args.text)
    summary = score_items(judge, items, args.out, progress=not args.no_progress)
    print(json.dumps(summary, indent=2))
    return 0


register("score", "score clips with a Yes/No judge: S = P(Yes) / (P(Yes) + P(No))", _score_args, _score,
         "Score each clip with one judge and append one JSON line per clip to OUT, with\n"
         "score, delta (log P(Yes) - log P(No)), mass (P(Yes) + P(No)) and yes/no probabilities.\n"
         "A clip that cannot be read gets an `error` and no score (never 0). Rerunning with the\n"
         "same OUT resumes; OUT's .summary.json counts errors.\n\n"
         "examples:\n"
         "  avjudge score --judge av --checkpoint ckpt/av --manifest world/world.jsonl --out av.jsonl\n"
         "  avjudge score --judge vt --checkpoint ckpt/vt --video a.mp4 --text \"a red circle moves left\" --out r.jsonl")


# ---- demo ------------------------------------------------------------------------------

def _demo_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=Path("demo_out"), help="output folder")
    p.add_argument("--n", type=int, default=12, help="clips in the demo world")
    p.add_argument("--seed", type=int, default=0, help="world seed")
    p.add_argument("--cache", type=Path, default=None,
                   help="where tiny judges are built (default: $AVJUDGE_CACHE or ~/.cache/avjudge)")


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    report = run_demo(args.out, n=args.n, seed=args.seed, cache=args.cache)
    print(report["text"])
    return 0


register("demo", "run the end-to-end demo on built-in defaults", _demo_args, _demo,
         "Make a small synthetic world, decode it back and check it against its ground truth,\n"
         "then score it with tiny untrained AV / VT / AT judges (built offline on first use).\n"
         "Later stages (hard-negative pairs, training, reports) join as they land.")


# ---- parser ----------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="avjudge", formatter_class=_Formatter,
        description="Train and run judges of generated audio-video (AVBench-style Yes/No scoring).\n"
                    "Start with `avjudge demo`; every command has --help.",
    )
    parser.add_argument("--version", action="version", version=f"avjudge {__version__}")
    top = parser.add_subparsers(dest="command", metavar="COMMAND")
    groups: dict[str, argparse._SubParsersAction] = {}
    for words, cmd in sorted(COMMANDS.items()):
        if len(words) == 1:
            sub = top.add_parser(words[0], help=cmd.help, description=cmd.description, formatter_class=_Formatter)
        else:
            if words[0] not in groups:
                group = top.add_parser(words[0], help=GROUP_HELP.get(words[0], ""), formatter_class=_Formatter)
                groups[words[0]] = group.add_subparsers(dest="subcommand", metavar="SUBCOMMAND", required=True)
            sub = groups[words[0]].add_parser(words[1], help=cmd.help, description=cmd.description,
                                              formatter_class=_Formatter)
        cmd.add_arguments(sub)
        sub.set_defaults(_run=cmd.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "_run"):
        parser.print_help()
        return 2
    try:
        return args._run(args)
    except ConfigError as err:
        print(f"avjudge: configuration error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
