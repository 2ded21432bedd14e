"""`avjudge media`: inspect media files."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..commands import add_input, register, required_input, warn_deprecated


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
