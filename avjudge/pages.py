"""The one style of every static HTML page avjudge writes (the demo report, the bench report, the reward audit), so
each reads the same and each colour means one thing: green a best or a gain, red a flag or an error."""

STYLE = """<style>
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 80em; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; vertical-align: top; }
th:first-child, td:first-child, td.text { text-align: left; }
td.best { font-weight: bold; background: #eef7ee; }
td.up { background: #eef7ee; }
td.flag { background: #fbeaea; color: #a33; }
td.err { color: #a33; }
ul.flags li { color: #a33; }
ul.flags li.none { color: inherit; }
p.note { color: #735; }
video { width: 220px; }
img { max-width: 100%; }
</style>"""


def head(title: str) -> str:
    """A page's opening, through its style, up to its body."""
    return f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>\n{STYLE}</head><body>'
