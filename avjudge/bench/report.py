"""`avjudge bench report`: leaderboards shaped like the paper's Table 2 (Markdown, CSV), a radar chart per
split (PNG), and one static HTML file with both and a per-sample drill-down that opens from disk."""

from __future__ import annotations

import base64
import csv
import html
import json
import os
from pathlib import Path

import numpy as np

from ..jsonl import read_jsonl
from .errors import BenchError
from .runner import SAMPLES, SUMMARY


def load_results(bench_dir: str | Path) -> tuple[dict, list[dict]]:
    bench_dir = Path(bench_dir)
    if not (bench_dir / SUMMARY).is_file():
        raise BenchError(f"{bench_dir}: no {SUMMARY}; run `avjudge bench run --out {bench_dir}` first")
    summary = json.loads((bench_dir / SUMMARY).read_text())
    return summary, list(read_jsonl(bench_dir / summary.get("samples", SAMPLES)))


def splits_of(summary: dict) -> list[str]:
    return sorted({s for cells in summary["results"].values() for s in cells}, key=lambda s: (s != "normal", s))


def table(summary: dict, split: str) -> tuple[list[str], list[list[float | None]]]:
    """Models and their mean per dimension in one split (None where nothing was scored)."""
    models = [m for m in summary["models"] if split in summary["results"].get(m, {})]
    rows = [[summary["results"][m][split][d]["mean"] for d in summary["dimensions"]] for m in models]
    return models, rows


def _best(values: list[float | None], higher: bool) -> float | None:
    present = [v for v in values if v is not None]
    return (max(present) if higher else min(present)) if present else None


def leaderboard_markdown(summary: dict, split: str) -> str:
    dims = summary["dimensions"]
    models, rows = table(summary, split)
    best = [_best([r[j] for r in rows], summary["higher_is_better"][d]) for j, d in enumerate(dims)]
    head = (
        "| Model | "
        + " | ".join(summary["labels"][d] + ("" if summary["higher_is_better"][d] else " ↓") for d in dims)
        + " |"
    )
    lines = [f"### {split.capitalize()} split", "", head, "|---" * (len(dims) + 1) + "|"]
    for model, row in zip(models, rows):
        cells = ["–" if v is None else (f"**{v:.3f}**" if v == best[j] else f"{v:.3f}") for j, v in enumerate(row)]
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    errors = {
        (m, d): summary["results"][m][split][d]["errors"]
        for m in models
        for d in dims
        if summary["results"][m][split][d]["errors"]
    }
    if errors:
        lines += [
            "",
            "Clips not scored (errors, not zeros): " + ", ".join(f"{m} {d}: {n}" for (m, d), n in errors.items()),
        ]
    return "\n".join(lines) + "\n"


def write_leaderboard_csv(summary: dict, split: str, path: Path) -> None:
    dims = summary["dimensions"]
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["model"] + [f"{d}_{k}" for d in dims for k in ("mean", "std", "n", "errors")])
        for model in table(summary, split)[0]:
            cells = summary["results"][model][split]
            writer.writerow(
                [model]
                + ["" if cells[d][k] is None else cells[d][k] for d in dims for k in ("mean", "std", "n", "errors")]
            )


def normalized(summary: dict, split: str) -> tuple[list[str], np.ndarray]:
    """Per-dimension min-max normalisation over models (1 = best; a dimension all models tie on is 0.5;
    unscored cells are 0)."""
    models, rows = table(summary, split)
    values = np.array([[np.nan if v is None else v for v in r] for r in rows], float).reshape(len(models), -1)
    out = np.zeros_like(values)
    for j, dim in enumerate(summary["dimensions"]):
        col = values[:, j]
        if np.all(np.isnan(col)):
            continue
        lo, hi = np.nanmin(col), np.nanmax(col)
        scaled = np.where(np.isnan(col), np.nan, 0.5) if hi - lo < 1e-12 else (col - lo) / (hi - lo)
        if not summary["higher_is_better"][dim]:
            scaled = 1.0 - scaled
        out[:, j] = np.nan_to_num(scaled, nan=0.0)
    return models, out


def radar_png(summary: dict, split: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models, values = normalized(summary, split)
    labels = [summary["labels"][d] for d in summary["dimensions"]]
    angles = np.linspace(0, 2 * np.pi, len(labels), endpoint=False)
    fig = plt.figure(figsize=(6.5, 6.5))
    ax = fig.add_subplot(polar=True)
    for model, row in zip(models, values):
        ax.plot(np.append(angles, angles[0]), np.append(row, row[0]), label=model, linewidth=1.8)
        ax.fill(np.append(angles, angles[0]), np.append(row, row[0]), alpha=0.08)
    ax.set_xticks(angles, labels, fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_yticks([0.25, 0.5, 0.75, 1.0], ["", "", "", ""])
    ax.set_title(f"{split} split (min-max normalised per dimension)", fontsize=10)
    ax.legend(loc="upper right", bbox_to_anchor=(1.3, 1.1), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>avjudge benchmark</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border: 1px solid #ccc; padding: 4px 8px; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
td.best {{ font-weight: bold; background: #eef7ee; }}
td.err {{ color: #a33; }}
video {{ width: 240px; }}
</style></head><body>
<h1>avjudge benchmark</h1>
<p>{facts}</p>
{sections}
<h2>Samples</h2>
<p><label>model <select id="model-filter"><option value="">all</option></select></label>
<label>split <select id="split-filter"><option value="">all</option></select></label>
<span id="sample-count"></span></p>
<table id="samples"><thead><tr><th>sample</th><th>clip</th>{sample_heads}</tr></thead><tbody></tbody></table>
<script id="sample-data" type="application/json">{data}</script>
<script>
const data = JSON.parse(document.getElementById("sample-data").textContent);
const body = document.querySelector("#samples tbody");
for (const key of ["model", "split"]) {{
  const select = document.getElementById(key + "-filter");
  for (const v of [...new Set(data.samples.map(s => s[key]))].sort()) select.add(new Option(v, v));
  select.addEventListener("change", render);
}}
function cell(row, text, cls) {{
  const td = row.insertCell(); td.textContent = text; if (cls) td.className = cls; return td;
}}
function render() {{
  const model = document.getElementById("model-filter").value, split = document.getElementById("split-filter").value;
  body.replaceChildren();
  const shown = data.samples.filter(s => (!model || s.model === model) && (!split || s.split === split));
  for (const s of shown) {{
    const row = body.insertRow();
    cell(row, s.id);
    const video = document.createElement("video");
    video.src = s.video; video.controls = true; video.preload = "none";
    row.insertCell().appendChild(video);
    for (const d of data.dimensions) {{
      const value = s.scores ? s.scores[d] : undefined;
      const why = s.error || (s.errors || {{}})[d];
      if (value === undefined || value === null) cell(row, "error", "err").title = why || "not scored";
      else cell(row, value.toFixed(3));
    }}
  }}
  document.getElementById("sample-count").textContent = shown.length + " samples";
}}
render();
</script>
</body></html>
"""


def _html_table(summary: dict, split: str) -> str:
    dims = summary["dimensions"]
    models, rows = table(summary, split)
    best = [_best([r[j] for r in rows], summary["higher_is_better"][d]) for j, d in enumerate(dims)]
    head = "".join(f"<th>{html.escape(summary['labels'][d])}</th>" for d in dims)
    body = []
    for model, row in zip(models, rows):
        cells = "".join(
            '<td class="err">–</td>' if v is None else f"<td{' class=best' if v == best[j] else ''}>{v:.3f}</td>"
            for j, v in enumerate(row)
        )
        body.append(f"<tr><td>{html.escape(model)}</td>{cells}</tr>")
    return (
        f'<table class="leaderboard" data-split="{html.escape(split)}"><thead><tr><th>model</th>{head}</tr>'
        f"</thead><tbody>{''.join(body)}</tbody></table>"
    )


def write_html(summary: dict, records: list[dict], charts: dict[str, Path], path: Path) -> None:
    sections = []
    for split, chart in charts.items():
        img = base64.b64encode(chart.read_bytes()).decode()
        sections.append(
            f"<h2>{html.escape(split.capitalize())} split</h2>{_html_table(summary, split)}"
            f'<img alt="radar chart, {html.escape(split)} split" src="data:image/png;base64,{img}">'
        )
    skipped = summary.get("skipped_dimensions") or {}
    facts = (
        f"{len(summary['models'])} models, {summary['clips']} clips, prompts per split: "
        f"{html.escape(json.dumps(summary['prompts']))}. Errors are shown as errors, never as zeros."
    )
    if skipped:
        facts += " Skipped dimensions: " + "; ".join(f"{html.escape(k)} ({html.escape(v)})" for k, v in skipped.items())
    missing = summary.get("missing") or {}
    if missing:
        facts += " Missing clips: " + ", ".join(f"{html.escape(m)}: {len(ids)}" for m, ids in missing.items())
    samples = [
        {
            "id": r["id"],
            "model": r["model"],
            "split": r["split"],
            "video": Path(os.path.relpath(Path(r["video"]).resolve(), path.parent.resolve())).as_posix(),
            "scores": r.get("scores"),
            "errors": r.get("errors"),
            "error": r.get("error"),
        }
        for r in records
    ]
    data = json.dumps({"dimensions": summary["dimensions"], "samples": samples}).replace("</", "<\\/")
    heads = "".join(f"<th>{html.escape(summary['labels'][d])}</th>" for d in summary["dimensions"])
    path.write_text(_PAGE.format(facts=facts, sections="\n".join(sections), sample_heads=heads, data=data))


def write_report(bench_dir: str | Path, out: str | Path | None = None) -> dict[str, list[str]]:
    """Write the reports of a bench run.

    Args:
        bench_dir: the ``out`` folder of `run_bench`.
        out: where the reports go (default: ``bench_dir``).

    Returns:
        Split (and ``html``) -> the files written: leaderboard_<split>.md / .csv, radar_<split>.png, report.html.
    """
    summary, records = load_results(bench_dir)
    out = Path(out or bench_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, list[str]] = {}
    charts = {}
    for split in splits_of(summary):
        md, csv_path = out / f"leaderboard_{split}.md", out / f"leaderboard_{split}.csv"
        png = out / f"radar_{split}.png"
        md.write_text(leaderboard_markdown(summary, split))
        write_leaderboard_csv(summary, split, csv_path)
        radar_png(summary, split, png)
        charts[split] = png
        written[split] = [str(md), str(csv_path), str(png)]
    write_html(summary, records, charts, out / "report.html")
    written["html"] = [str(out / "report.html")]
    return written
