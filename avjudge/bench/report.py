"""`avjudge bench report`: leaderboards shaped like the paper's Table 2 (Markdown, CSV; each cell its mean, spread
and clip count), a chart per split (PNG: a radar for three dimensions or more, bars with their spread for fewer),
and one static HTML file with both and a per-sample drill-down that opens from disk. A split of fewer than
`MIN_PROMPTS_FOR_BEST` prompts names no best model, and a dimension names one only where its lead over the next
model is beyond the 95 % interval of the difference of their means: else its differences say too little."""

from __future__ import annotations

import base64
import csv
import html
import json
import os
from pathlib import Path

import numpy as np

from ..jsonl import read_json_object, read_jsonl
from ..pages import head
from .errors import BenchError
from .runner import SAMPLES, SUMMARY


def load_results(bench_dir: str | Path) -> tuple[dict, list[dict]]:
    bench_dir = Path(bench_dir)
    if not (bench_dir / SUMMARY).is_file():
        raise BenchError(f"{bench_dir}: no {SUMMARY}; run `avjudge bench run --out {bench_dir}` first")
    summary = read_json_object(bench_dir / SUMMARY, f"run `avjudge bench run --out {bench_dir}` again")
    return summary, list(read_jsonl(bench_dir / summary.get("samples", SAMPLES)))


def splits_of(summary: dict) -> list[str]:
    return sorted({s for cells in summary["results"].values() for s in cells}, key=lambda s: (s != "normal", s))


def table(summary: dict, split: str) -> tuple[list[str], list[list[float | None]]]:
    """Models and their mean per dimension in one split (None where nothing was scored)."""
    models = [m for m in summary["models"] if split in summary["results"].get(m, {})]
    rows = [[summary["results"][m][split][d]["mean"] for d in summary["dimensions"]] for m in models]
    return models, rows


MIN_PROMPTS_FOR_BEST = 5  # fewer prompts in a split: no model is named its best
MIN_DIMENSIONS_FOR_RADAR = 3  # fewer dimensions: a radar is a line or a point, so bars


def _best(values: list[float | None], higher: bool) -> float | None:
    present = [v for v in values if v is not None]
    return (max(present) if higher else min(present)) if present else None


def _lead_is_clear(cells: list[dict], higher: bool) -> bool:
    """Whether the best of ``cells`` (mean, std, n) leads the next by more than the 95 % interval of the difference
    of their means (each mean's standard error from its clips' spread)."""
    ranked = sorted((c for c in cells if c["mean"] is not None), key=lambda c: c["mean"], reverse=higher)
    if len(ranked) < 2:
        return bool(ranked)
    first, second = ranked[:2]
    if first["mean"] == second["mean"]:
        return False
    errors = [(c.get("std") or 0.0) ** 2 / max(c["n"], 1) for c in (first, second)]
    return abs(first["mean"] - second["mean"]) > 1.96 * float(np.sqrt(sum(errors)))


def bests(summary: dict, split: str) -> list[float | None]:
    """Each dimension's best mean in the split where it leads the next beyond their interval (`_lead_is_clear`);
    None where no best can be named: a tie within the interval, or a split too small for any."""
    models, rows = table(summary, split)
    if summary["prompts"].get(split, 0) < MIN_PROMPTS_FOR_BEST:
        return [None] * len(summary["dimensions"])
    marked = []
    for j, d in enumerate(summary["dimensions"]):
        higher = summary["higher_is_better"][d]
        cells = [summary["results"][m][split][d] for m in models]
        marked.append(_best([r[j] for r in rows], higher) if _lead_is_clear(cells, higher) else None)
    return marked


def too_small(summary: dict, split: str) -> str | None:
    """Why no best is named in the split, or on some of its dimensions, if so."""
    n = summary["prompts"].get(split, 0)
    if n < MIN_PROMPTS_FOR_BEST:
        return f"{n} prompt{'s' * (n != 1)} in this split: too few (under {MIN_PROMPTS_FOR_BEST}) to name a best model"
    unclear = [summary["labels"][d] for d, best in zip(summary["dimensions"], bests(summary, split)) if best is None]
    if not unclear:
        return None
    return f"on {', '.join(unclear)}, the first model's lead is within the 95 % interval of the two means' difference"


def cell_text(cell: dict) -> str:
    """A leaderboard cell: mean ± standard deviation over its clips, and how many clips."""
    if cell["mean"] is None:
        return "–"
    spread = f" ± {cell['std']:.3f}" if cell.get("std") is not None else ""
    return f"{cell['mean']:.3f}{spread} (n={cell['n']})"


def leaderboard_markdown(summary: dict, split: str) -> str:
    dims = summary["dimensions"]
    models, rows = table(summary, split)
    best = bests(summary, split)
    head = (
        "| Model | "
        + " | ".join(summary["labels"][d] + ("" if summary["higher_is_better"][d] else " ↓") for d in dims)
        + " |"
    )
    lines = [f"### {split.capitalize()} split", "", head, "|---" * (len(dims) + 1) + "|"]
    for model, row in zip(models, rows):
        cells = [summary["results"][model][split][d] for d in dims]
        texts = [f"**{cell_text(c)}**" if v is not None and v == best[j] else cell_text(c)
                 for j, (v, c) in enumerate(zip(row, cells))]  # fmt: skip
        lines.append(f"| {model} | " + " | ".join(texts) + " |")
    lines += ["", "Each cell: mean ± standard deviation over its clips (n)."]
    if too_small(summary, split):
        lines += ["", f"No best is marked: {too_small(summary, split)}."]
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


def chart_name(summary: dict, split: str) -> str:
    return f"{'radar' if len(summary['dimensions']) >= MIN_DIMENSIONS_FOR_RADAR else 'bars'}_{split}.png"


def chart_png(summary: dict, split: str, path: Path) -> None:
    """A radar of the min-max normalised means for three dimensions or more; for fewer, each dimension's means as
    bars with their standard deviation (a radar of two axes is a line)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dims = summary["dimensions"]
    if len(dims) < MIN_DIMENSIONS_FOR_RADAR:
        models = table(summary, split)[0]
        fig, axes = plt.subplots(1, len(dims), figsize=(4.5 * len(dims), 0.5 * len(models) + 1.5), squeeze=False)
        for ax, dim in zip(axes[0], dims):
            cells = [summary["results"][m][split][dim] for m in models]
            ax.barh(models, [c["mean"] or 0.0 for c in cells], xerr=[c.get("std") or 0.0 for c in cells], capsize=3)
            ax.invert_yaxis()
            ax.set_title(summary["labels"][dim] + ("" if summary["higher_is_better"][dim] else " (lower is better)"),
                         fontsize=9)  # fmt: skip
        fig.suptitle(f"{split} split: mean ± standard deviation", fontsize=10)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return
    models, values = normalized(summary, split)
    labels = [summary["labels"][d] for d in dims]
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


_PAGE = """{head}
<h1>avjudge benchmark</h1>
<p>{facts}</p>
{splits}
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
    best = bests(summary, split)
    head = "".join(f"<th>{html.escape(summary['labels'][d])}</th>" for d in dims)
    body = []
    for model, row in zip(models, rows):
        cells = []
        for j, (v, dim) in enumerate(zip(row, dims)):
            cell = summary["results"][model][split][dim]
            if v is None:
                cells.append('<td class="err">–</td>')
                continue
            mark = " class=best" if v == best[j] else ""
            cells.append(f'<td{mark} title="{cell["n"]} clips">{html.escape(cell_text(cell))}</td>')
        body.append(f"<tr><td>{html.escape(model)}</td>{''.join(cells)}</tr>")
    note = too_small(summary, split)
    return (
        f'<table class="leaderboard" data-split="{html.escape(split)}"><thead><tr><th>model</th>{head}</tr>'
        f"</thead><tbody>{''.join(body)}</tbody></table>"
        "<p>Each cell: mean ± standard deviation over its clips (n).</p>"
        + (f'<p class="note">No best is marked: {html.escape(note)}.</p>' if note else "")
    )


def _splits_table(summary: dict) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(split)}</td><td>{n}</td></tr>" for split, n in sorted(summary["prompts"].items())
    )
    return f'<table class="splits"><thead><tr><th>split</th><th>prompts</th></tr></thead><tbody>{rows}</tbody></table>'


def write_html(summary: dict, records: list[dict], charts: dict[str, Path], path: Path) -> None:
    sections = []
    for split, chart in charts.items():
        img = base64.b64encode(chart.read_bytes()).decode()
        kind = "radar chart" if chart.name.startswith("radar") else "bar chart"
        sections.append(
            f"<h2>{html.escape(split.capitalize())} split</h2>{_html_table(summary, split)}"
            f'<img alt="{kind}, {html.escape(split)} split" src="data:image/png;base64,{img}">'
        )
    skipped = summary.get("skipped_dimensions") or {}
    facts = f"{len(summary['models'])} models, {summary['clips']} clips. Errors are shown as errors, never as zeros."
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
    sections += _calibration_sections(summary)
    data = json.dumps({"dimensions": summary["dimensions"], "samples": samples}).replace("</", "<\\/")
    heads = "".join(f"<th>{html.escape(summary['labels'][d])}</th>" for d in summary["dimensions"])
    page = _PAGE.format(head=head("avjudge benchmark"), facts=facts, splits=_splits_table(summary),
                        sections="\n".join(sections), sample_heads=heads, data=data)  # fmt: skip
    path.write_text(page)


def _calibration_sections(summary: dict) -> list[str]:
    """A section per judge of the run that `avjudge judges calibrate` has calibrated: its figures before and after,
    and its reliability diagram."""
    sections = []
    for task, checkpoint in sorted((summary.get("judges") or {}).items()):
        figures, diagram = Path(checkpoint) / "calibration.json", Path(checkpoint) / "reliability.png"
        if not (figures.is_file() and diagram.is_file()):
            continue
        result = json.loads(figures.read_text())
        before, after = result["pointwise"]["before"], result["pointwise"]["after"]
        pairwise = result["pairwise"]["after"]
        img = base64.b64encode(diagram.read_bytes()).decode()
        sections.append(
            f"<h2>The {html.escape(task)} judge's calibration</h2><p>Fitted on the {html.escape(result['fit_split'])} "
            f"split, reported on the {html.escape(result['report_split'])} split: ECE {before['ece']:.3f} &rarr; "
            f"{after['ece']:.3f}, Brier {before['brier']:.3f} &rarr; {after['brier']:.3f}, log loss "
            f"{before['log_loss']:.3f} &rarr; {after['log_loss']:.3f}; preference accuracy "
            f"{pairwise['accuracy_without_ties']:.3f} without ties, {pairwise['accuracy_with_ties']:.3f} with.</p>"
            f'<img alt="reliability diagram of the {html.escape(task)} judge" src="data:image/png;base64,{img}">'
        )
    return sections


def write_report(bench_dir: str | Path, out: str | Path | None = None) -> dict[str, list[str]]:
    """Write the reports of a bench run.

    Args:
        bench_dir: the ``out`` folder of `run_bench`.
        out: where the reports go (default: ``bench_dir``).

    Returns:
        Split (and ``html``) -> the files written: leaderboard_<split>.md / .csv, radar_<split>.png
        (bars_<split>.png for fewer than three dimensions), report.html.
    """
    summary, records = load_results(bench_dir)
    out = Path(out or bench_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, list[str]] = {}
    charts = {}
    for split in splits_of(summary):
        md, csv_path = out / f"leaderboard_{split}.md", out / f"leaderboard_{split}.csv"
        png = out / chart_name(summary, split)
        md.write_text(leaderboard_markdown(summary, split))
        write_leaderboard_csv(summary, split, csv_path)
        chart_png(summary, split, png)
        charts[split] = png
        written[split] = [str(md), str(csv_path), str(png)]
    write_html(summary, records, charts, out / "report.html")
    written["html"] = [str(out / "report.html")]
    return written
