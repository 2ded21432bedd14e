"""The CLI reference page, generated from the command registry (the docs build calls `markdown_reference`)."""

from __future__ import annotations

import os

from ..commands import GROUP_HELP
from . import COMMANDS, build_parser, command_parser


def markdown_reference() -> str:
    """Every command's --help, grouped as the CLI groups them, as Markdown."""
    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps help at the terminal's width: make the page independent of it
    try:
        return _reference()
    finally:
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns


def _reference() -> str:
    parser = build_parser()
    parts = ["```text", parser.format_help().rstrip(), "```"]
    renamed = sorted((old, c.replaced_by) for old, c in COMMANDS.items() if c.replaced_by)
    parts += [
        "## Renamed commands",
        "These old spellings still run in this release, with a deprecation warning:",
        "\n".join(f"- `avjudge {' '.join(old)}`: now `avjudge {' '.join(new)}`" for old, new in renamed),
    ]
    group = None
    for words in sorted(w for w, c in COMMANDS.items() if not c.replaced_by):
        if len(words) > 1 and words[0] != group:
            group = words[0]
            parts += [f"## avjudge {group}", GROUP_HELP.get(group, "")]
        elif len(words) == 1:
            group = None
        level = "###" if len(words) > 1 else "##"
        help_text = command_parser(parser, words).format_help().rstrip()
        parts += [f"{level} avjudge {' '.join(words)}", "```text", help_text, "```"]
    return "\n\n".join(parts) + "\n"
