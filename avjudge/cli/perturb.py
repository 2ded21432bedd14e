"""`avjudge perturb`: the hard-negative strategies: list them, make one negative of a file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..commands import add_input, add_out, add_set, alias, count, register, required_input


def _perturb_list_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _perturb_list(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from ..perturb import describe_all
    from ..perturb.base import tells_text
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
    print(
        "audio-video strategies; tells: the side that may give a negative away on its own, by design (none: only "
        "sound against picture; `avjudge data audit` flags any other side that does):"
    )
    for info in infos:
        params = ", ".join(f"{k}={v}" for k, v in info.parameters.items()) or "-"
        print(
            f"  {info.name:<20} {info.family:<10} tells: {tells_text(info.tells):<12} {params}\n"
            f"  {'':<20} {info.description}"
        )
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
    add_set(p, "override a parameter range, e.g. shift_s=[0.1,0.3] or kind=lowpass")
    p.add_argument("--params", help="exact parameters as JSON instead of sampling, e.g. '{\"shift_s\": -0.5}'")
    p.add_argument("--pool", type=Path, help="a manifest of other clips (mismatch, babble, extra voices)")
    p.add_argument("--seed", type=count, default=0)


def _perturb_apply(args: argparse.Namespace) -> int:
    from ..config import ConfigError, parse_overrides
    from ..data import load_manifest
    from ..perturb import SourcePool
    from ..perturb.files import negative_of_file

    if args.out is None:
        raise ConfigError("--out is required: where the negative goes")
    params = negative_of_file(
        args.strategy,
        required_input(args),
        args.out,
        parse_overrides(args.overrides),
        _exact_params(args.params),
        SourcePool(load_manifest(args.pool)) if args.pool else None,
        args.seed,
    )
    print(json.dumps({"strategy": args.strategy, "params": params, "output": str(args.out)}))
    return 0


def _exact_params(text: str | None) -> dict | None:
    from ..config import ConfigError

    if not text:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"--params is not JSON ({err}): give an object such as '{{\"shift_s\": -0.5}}'") from err


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
