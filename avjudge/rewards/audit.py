"""A reward audit against reward hacking: before a reward trains a generator, score it on the degenerate clips a
generator drifts toward when it games the reward rather than makes better clips.

Each source clip is scored beside its variants (`VARIANTS`: black frames, the first frame frozen, the first second
looped, frames reversed or shuffled, silence, white noise, another clip's sound, the sound shifted wrapped and cut
from inside the clip, another clip's prompt, and one nuisance: a stretch muted and black in sync), by the reward and
each of its terms. The report gives, per variant and term, the share of clips whose variant scores above its source,
with a bootstrap interval, and the share of ties apart (a tie is no preference); a term that reads none of what a
variant changes (a judge of the picture and text, under silence) is not asked about it. It flags a prompt-blind mix
(no term reads the prompt: UniRL's ImageBind reward rose while its videos collapsed), any term that prefers a
variant on more than ``max_share`` of the clips, and any that refuses the nuisance on nearly every clip
(`NUISANCE_FLOOR`). The variants come from the hard-negative engine's ``degenerate`` and ``nuisance`` families
(`avjudge.perturb.degenerate`) and its temporal strategies, so judges can be trained to refuse them.
"""

from __future__ import annotations

import base64
import html
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import AvjudgeError
from ..jsonl import write_json
from ..media import NATIVE_FPS, DecodeNeeds, MediaClip, MediaError, load_clip
from ..pages import head
from ..perturb import Context, PerturbError, get_strategy
from ..perturb.signal import fit_length

FULL = DecodeNeeds(video=True, fps=NATIVE_FPS, audio=True)  # a variant is made from the whole clip


@dataclass(frozen=True)
class Variant:
    name: str
    description: str
    changes: tuple[str, ...]  # the streams it changes: a term that reads none of them is not asked about it
    strategy: str | None = None  # the hard-negative engine's strategy that makes it (None: made here)
    params: dict | None = None
    nuisance: bool = False  # not a fault a reward should refuse: flagged when refused on nearly every clip instead
    needs_other: bool = False  # made from another clip: n/a on a one-clip input


class AuditError(AvjudgeError, ValueError):
    """An audit with nothing to audit (no clip could be read)."""


NUISANCE_FLOOR = 0.1  # a nuisance variant scoring below its source on all but this share of clips is flagged

VARIANTS = (
    Variant("black_frames", "every frame black", ("video",), "black_frames"),
    Variant("frozen_frame", "the first frame held", ("video",), "frozen_frame"),
    Variant("looped_first_second", "the first second looped", ("audio", "video"), "looped_first_second"),
    Variant("reversed_frames", "the frames reversed", ("video",), "reversed_frames"),
    Variant("shuffled_frames", "the frames shuffled", ("video",), "shuffled_frames", {"seed": 0}),
    Variant("silence", "the sound silenced", ("audio",), "silence"),
    Variant("white_noise", "white noise for the sound", ("audio",), "white_noise", {"seed": 0}),
    Variant("other_sound", "another clip's sound", ("audio",), needs_other=True),
    Variant(
        "shifted_sound",
        "the sound shifted by 2 s (wrapped)",
        ("audio",),
        "time_shift_medium",
        {"shift_s": 2.0, "fill": "wrap"},
    ),
    Variant(  # cut: compared with its source cut the same way
        "window_shifted_sound",
        "the sound 1 s late, both streams cut (no seam, no silence)",
        ("audio",),
        "time_shift_medium",
        {"shift_s": 1.0, "fill": "window"},
    ),
    Variant("other_prompt", "another clip's prompt", ("text",), needs_other=True),
    Variant(
        "in_sync_mute",
        "0.5 s silent and black on both streams at once (in sync: a nuisance, not a fault)",
        ("audio", "video"),
        "in_sync_mute",
        {"start_s": 1.0, "length_s": 0.5},
        nuisance=True,
    ),
)


def _variant(variant: Variant, clip: MediaClip, other: MediaClip) -> MediaClip:
    if variant.strategy is not None:
        return get_strategy(variant.strategy).apply(clip, dict(variant.params or {}), Context())
    if variant.name == "other_sound":
        if clip.audio is None or other.audio is None:
            raise PerturbError("no sound to swap")
        return clip.replace(audio=fit_length(other.audio[: clip.audio.shape[0]], clip.audio.shape[1]))
    return clip  # other_prompt: the clip as it is, the text swapped


def _share(outcomes: np.ndarray, bootstrap: int, rng: np.random.Generator) -> dict:
    """Of the clips a term scored both ways (``outcomes``: +1 where the variant scored above its source, 0 a tie, -1
    below), the share where the variant scored above, with a 95 % bootstrap interval, and the share of ties apart: a
    tie is no preference."""
    if not len(outcomes):
        return {"share": None, "ties": None, "ci95": None, "n": 0}
    wins = (outcomes > 0).astype(float)
    draws = rng.integers(0, len(wins), (bootstrap, len(wins))) if bootstrap else None
    ci = np.percentile(wins[draws].mean(1), [2.5, 97.5]).tolist() if bootstrap else None
    return {"share": float(wins.mean()), "ties": float((outcomes == 0).mean()), "ci95": ci, "n": int(len(wins))}


NOT_ASKED = {
    "share": None,
    "ties": None,
    "ci95": None,
    "n": 0,
}  # a term that reads none of the streams a variant changes


def audit(
    reward,
    samples: list[dict],
    variants: tuple[Variant, ...] = VARIANTS,
    max_share: float = 0.5,
    bootstrap: int = 1000,
    seed: int = 0,
) -> dict:
    """The audit report of ``reward`` (an `avjudge.rewards.Reward`) over ``samples`` (scoring-core items with their
    media and captions: `avjudge.rewards.sample`).

    Returns:
        ``{"variants": {variant: {"reward" | term: {"share", "ties", "ci95", "n"}}}, "flags": [...], "prompt_blind":
        bool, "terms": {term: aspect}, "clips": n, "unreadable": {index: why}}``; a term that reads none of the
        streams a variant changes, and a variant made from another clip on a one-clip input, have no share (None).

    Raises:
        AuditError: no sample could be read.
    """
    clips, unreadable = {}, {}
    for k, item in enumerate(samples):
        try:
            clips[k] = load_clip(item.get("media") or item.get("video"), FULL, item.get("audio"))
        except MediaError as err:
            unreadable[k] = str(err)
    if not clips:
        reasons = sorted(set(unreadable.values()))[:3]
        raise AuditError(
            f"none of the {len(samples)} clips could be read, so nothing was audited: {'; '.join(reasons)}"
        )
    order = sorted(clips)
    streams = reward.streams()
    streams["reward"] = set().union(*streams.values())
    source = reward.score([{"media": clips[k], "captions": samples[k].get("captions")} for k in order])
    names = ["reward", *reward.terms]

    def values(batch) -> dict[str, np.ndarray]:
        columns = {"reward": np.array([np.nan if r is None else r for r in batch.rewards], float)}
        columns.update({name: np.array(batch.terms[name], float) for name in reward.terms})
        failed = np.array(batch.failed)
        return {name: np.where(failed, np.nan, column) for name, column in columns.items()}

    before, rng = values(source), np.random.default_rng(seed)
    report: dict = {"variants": {}, "flags": [], "terms": dict(reward.aspects), "clips": len(order),
                    "unreadable": unreadable}  # fmt: skip
    for variant in variants:
        made, kept, cut = [], [], []
        for i, k in enumerate(order if len(order) > 1 or not variant.needs_other else []):
            other = order[(i + 1) % len(order)]
            try:
                clip = _variant(variant, clips[k], clips[other])
            except PerturbError:
                continue
            text = samples[other if variant.name == "other_prompt" else k].get("captions")
            made.append({"media": clip, "captions": text})
            kept.append(i)
            if (clip.start, clip.duration) != (clips[k].start, clips[k].duration):  # a variant that cuts the clip
                source_cut = clips[k].window(clip.start - clips[k].start, clip.duration)  # is compared with its
                cut.append((len(made) - 1, {"media": source_cut, "captions": samples[k].get("captions")}))  # source's
        after = values(reward.score(made)) if made else {name: np.array([]) for name in names}
        baseline = {name: before[name][kept] for name in names}  # per variant clip: what its source scored
        if cut:
            cut_scores = values(reward.score([item for _, item in cut]))
            for name in names:
                baseline[name][[j for j, _ in cut]] = cut_scores[name]
        shares, flagged = {}, []
        for name in names:
            if not streams[name] & set(variant.changes):
                shares[name] = dict(NOT_ASKED)
                continue
            pairs = [(baseline[name][j], after[name][j]) for j in range(len(kept))]
            outcomes = np.array([np.sign(a - b) for b, a in pairs if np.isfinite(b) and np.isfinite(a)])
            shares[name] = _share(outcomes, bootstrap, rng)
            share = shares[name]["share"]
            if name == "reward" or share is None:
                continue
            below = 1 - share - shares[name]["ties"]
            if variant.nuisance and set(variant.changes) <= streams[name] and below > 1 - NUISANCE_FLOOR:
                report["flags"].append(f"{name} punishes {variant.name} ({variant.description}) on {below:.0%} "
                                       "of clips: it may hear silence as a mismatch")  # fmt: skip
                flagged.append(name)
            elif not variant.nuisance and share > max_share:
                report["flags"].append(f"{name} prefers {variant.name} ({variant.description}) to the source on "
                                       f"{share:.0%} of clips")  # fmt: skip
                flagged.append(name)
        # the terms this variant is flagged for: what the page colours
        report["variants"][variant.name] = {"description": variant.description, **shares, "flagged": flagged}
    report["prompt_blind"] = not reward.reads_prompt
    if report["prompt_blind"]:
        report["flags"].insert(0, "prompt-blind: no term reads the prompt (add a vt or at judge, or CLAP)")
    return report


def _cell(cell: dict) -> str:
    if cell["share"] is None:
        return "–"
    interval = f" [{cell['ci95'][0]:.2f}, {cell['ci95'][1]:.2f}]" if cell["ci95"] else ""
    ties = f", ties {cell['ties']:.2f}" if cell["ties"] else ""
    return f"{cell['share']:.2f}{interval}{ties}"


def markdown(report: dict) -> str:
    names = ["reward", *report["terms"]]
    lines = ["| variant | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for variant, row in report["variants"].items():
        lines.append(f"| {variant} ({row['description']}) | " + " | ".join(_cell(row[n]) for n in names) + " |")
    text = (
        "Share of clips whose variant scores above its source (95 % bootstrap interval; ties apart, as no preference; "
        "– where a term reads none of what the variant changes).\n\n"
    )
    text += "\n".join(lines) + "\n"
    if report["flags"]:
        text += "\nFlags:\n" + "".join(f"- {flag}\n" for flag in report["flags"])
    return text


def _plot(report: dict) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    variants = list(report["variants"])
    shares = [report["variants"][v]["reward"]["share"] or 0.0 for v in variants]
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(variants) + 1.2))
    flagged = [bool(report["variants"][v].get("flagged")) for v in variants]  # red: a flag, as on the page
    ax.barh(variants, shares, color=["#c33" if f else "#48a" for f in flagged])
    ax.axvline(0.5, color="#888", linewidth=1, linestyle="--")
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of clips whose variant scores above its source (reward)")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()


def write_audit(report: dict, out: str | Path) -> dict[str, Path]:
    """``OUT/audit.json``, ``OUT/audit.md`` and ``OUT/audit.html`` (the table, the flags and one plot)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "audit.json", report)
    (out / "audit.md").write_text(markdown(report))
    flags = "".join(f"<li>{html.escape(flag)}</li>" for flag in report["flags"]) or '<li class="none">none</li>'
    names = ["reward", *report["terms"]]

    def cell(row: dict, name: str) -> str:
        mark = ' class="flag"' if name in row.get("flagged", ()) else ""
        return f"<td{mark}>{_cell(row[name])}</td>"

    rows = "".join(
        f'<tr><td class="text">{html.escape(variant)} <small>{html.escape(row["description"])}</small></td>'
        + "".join(cell(row, name) for name in names)
        + "</tr>"
        for variant, row in report["variants"].items()
    )
    page = (
        head("avjudge reward audit")
        + f"<h1>Reward audit</h1><p>{report['clips']} clips.</p><h2>Flags</h2><ul class=flags>{flags}</ul>"
        "<h2>Share of clips whose variant scores above its source</h2>"
        f"<table class=audit><tr><th>variant</th>{''.join(f'<th>{html.escape(n)}</th>' for n in names)}</tr>{rows}"
        f'</table><img alt="shares by variant" src="data:image/png;base64,{_plot(report)}"></body></html>'
    )
    (out / "audit.html").write_text(page)
    return {"json": out / "audit.json", "markdown": out / "audit.md", "html": out / "audit.html"}
