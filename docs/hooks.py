"""MkDocs hook: the CLI reference page is generated from avjudge's command registry at build time."""

from avjudge.cli.reference import markdown_reference

MARKER = "<!-- cli-reference -->"


def on_page_markdown(markdown, page, config, files):
    return markdown.replace(MARKER, markdown_reference()) if MARKER in markdown else markdown
