"""The demo's report as one static HTML page that opens from disk: what was built, what each judge learned (held-out
balanced accuracy per negative type before and after training, learning curves), each judge's card (its pairs'
shortcut audit, its reward audit before and after) and a handful of held-out pairs with their scores, each clip
playable."""

from __future__ import annotations

import base64
import html
from pathlib import Path

from ..pages import head
from ..stats import printed
from ..train.evaluation import shown

_PAGE = """{head}
<h1>avjudge demo</h1>
<p>{world}</p>
<p>Pairs per judge: {pairs}. Each judge was scored on its held-out pairs untrained, trained on the CPU, and
scored again. A score is S = P(Yes) / (P(Yes) + P(No)): near 1 the judge says the pair matches, near 0 that it
does not. Balanced accuracy compares each negative type with all held-out positives at S = 0.5, AUROC at every
threshold; 0.5 is chance for both.</p>
<h2>What each judge learned</h2>
{tables}
{path_only}
<img alt="held-out balanced accuracy per negative type, before and after, and learning curves"
 src="data:image/png;base64,{chart}">
<h2>Judge cards: what else each judge may have learnt</h2>
<p>Each training run wrote a judge card (<code>avjudge judges card</code>). The pairs' shortcut audit asks whether
one side alone (the sound, the picture, the text) tells a negative type from the positives: AUROC near 0.5 means
the judge has to compare the sides; a type a side gives away that its strategy does not declare is a leak. The
reward audit scores held-out source clips beside degenerate variants: the share of clips whose variant scores at
least its source (a judge should refuse the variants; the in-sync mute is a nuisance it should not punish).</p>
{cards}
<h2>Held-out pairs and their scores</h2>
<p>The first held-out positive and the first negative of each type. An audio-video negative's clip is the source's
picture with the negative's sound; a caption negative shows the edited text beside the untouched clip.</p>
<table id="examples"><thead><tr><th>judge</th><th>pair</th><th>clip</th><th>text</th><th>untrained S</th>
<th>trained S</th></tr></thead><tbody>
{examples}
</tbody></table>
{generators}
<p>Seconds per phase: {seconds}.</p>
</body></html>
"""


def _per_type_table(judge: str, result: dict) -> str:
    before = {kind: shown(m) for kind, m in (result["eval_before"] or {}).get("per_type", {}).items()}
    after = {kind: shown(m) for kind, m in result["eval_after"]["per_type"].items()}
    rows = []
    for kind in sorted(after):
        b, a = before.get(kind, {}).get("balanced_accuracy"), after[kind]["balanced_accuracy"]
        up = ' class="up"' if b is not None and a is not None and a >= b + 0.05 else ""  # clearly learned
        aurocs = [before.get(kind, {}).get("auroc"), after[kind].get("auroc")]
        rows.append(
            f"<tr><td>{html.escape(kind)}</td><td>{printed(b, 3, 'n/a')}</td><td{up}>{printed(a, 3, 'n/a')}</td>"
            + "".join(f"<td>{printed(v, 3, 'n/a')}</td>" for v in aurocs)
            + "</tr>"
        )
    overall_before = (result["eval_before"] or {}).get("overall", {}).get("auroc")
    return (
        f'<h3>{judge.upper()} judge</h3><table class="per-type" data-judge="{html.escape(judge)}"><thead><tr>'
        "<th>negative type</th><th>balanced accuracy, untrained</th><th>trained</th><th>AUROC, untrained</th>"
        "<th>trained</th></tr></thead><tbody>"
        + "".join(rows)
        + f"</tbody></table><p>AUROC over all held-out pairs: {printed(overall_before, 3, 'n/a')} untrained, "
        f"{printed(result['eval_after']['overall']['auroc'], 3, 'n/a')} trained.</p>"
    )


def _card_section(judge: str, card: dict) -> str:
    from ..data.shortcuts import audit_lines

    flags = "".join(f"<li>{html.escape(flag)}</li>" for flag in card["flags"]) or '<li class="none">none</li>'
    audited = card["reward_audit"]
    rows = "".join(
        f'<tr><td class="text">{html.escape(name)} <small>{html.escape(row["description"])}</small></td>'
        f"<td>{printed(audited['before'].get(name, {}).get('reward', {}).get('share'), 2)}</td>"
        f"<td>{printed(row['reward']['share'], 2)}</td></tr>"
        for name, row in audited["after"].items()
    )
    shortcuts = html.escape("\n".join(audit_lines({judge: card["shortcut_audit"]})))
    return (
        f'<h3>{judge.upper()} judge</h3><p>Flags:</p><ul class="flags" data-judge="{html.escape(judge)}">{flags}</ul>'
        f"<p>Shortcut audit of its pairs:</p><pre>{shortcuts}</pre>"
        f"<p>Reward audit on {audited['clips']} held-out source clips:</p>"
        f'<table class="card" data-judge="{html.escape(judge)}"><thead><tr><th>variant</th><th>untrained</th>'
        f"<th>trained</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _example_row(example: dict) -> str:
    media = html.escape(example["media"])
    label = "match" if example["label"] else "negative"
    return (
        f'<tr><td>{example["judge"].upper()}</td><td class="text">{html.escape(example["kind"])} ({label})'
        f"<br><small>{html.escape(example['id'])}</small></td>"
        f'<td><video src="{media}" controls preload="none"></video></td>'
        f'<td class="text">{html.escape(example["text"] or "")}</td>'
        f"<td>{printed(example['before'], 3, 'n/a')}</td><td>{printed(example['after'], 3, 'n/a')}</td></tr>"
    )


def _generators_section(generators: dict | None, root: Path) -> str:
    if not generators:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(model)}</td><td>{printed(means.get('untrained'), 3, 'n/a')}</td>"
        f"<td>{printed(means.get('trained'), 3, 'n/a')}</td></tr>"
        for model, means in generators["mean_av"].items()
    )
    links = ", ".join(
        f'<a href="{html.escape(Path(path).relative_to(root).as_posix())}">{html.escape(name)} judge\'s report</a>'
        for name, path in generators["reports"].items()
    )
    return (
        "<h2>Benchmarking generators with the judge</h2>"
        f"<p>What a user does next: four synthetic generators made {generators['clips']} clips each of a world "
        "none of the judges saw (the reference clips, and the same clips with their sound shifted in time, with "
        "noise, or another clip's), and the AV judge scored them (<code>avjudge bench run</code>). A working judge "
        "ranks the reference first. Mean S per generator:</p>"
        '<table id="generators"><thead><tr><th>generator</th><th>untrained</th><th>trained</th></tr></thead>'
        f"<tbody>{rows}</tbody></table><p>Leaderboards and every clip: {links}.</p>"
    )


def write_page(report: dict, chart: Path, path: Path) -> Path:
    """The HTML page of a demo ``report`` (`run_demo`'s), with ``chart`` (a PNG) inline; media paths stay relative to
    the demo folder, where the page is written."""
    pairs = "; ".join(f"{judge} {entry['pairs']}" for judge, entry in report["pairs"]["judges"].items())
    page = _PAGE.format(
        head=head("avjudge demo"),
        world=html.escape(report["world_line"]),
        pairs=html.escape(pairs),
        tables="\n".join(_per_type_table(judge, result) for judge, result in report["judges"].items()),
        cards="\n".join(_card_section(judge, result["card"]) for judge, result in report["judges"].items()),
        path_only="".join(f'<p class="path-only">{html.escape(line)}.</p>' for line in report.get("path_only", [])),
        chart=base64.b64encode(Path(chart).read_bytes()).decode(),
        examples="\n".join(_example_row(e) for e in report["examples"]),
        generators=_generators_section(report.get("generators"), path.parent),
        seconds=html.escape(", ".join(f"{k} {v:.0f}" for k, v in report["seconds"].items())),
    )
    path.write_text(page)
    return path
