"""The judge card: what a trained judge learnt from what, and what it may have learnt instead.

Every `avjudge train` run writes one into its output folder and its ``final`` checkpoint (JSON and Markdown): the
recipe and dataset it learnt from, its held-out accuracy and AUROC per negative type, the dataset's shortcut audit
(`avjudge.data.shortcuts`: can one side alone tell a type apart?), and the reward audit (`avjudge.rewards.audit`) of
the judge before and after training on held-out source clips: degenerate variants, shifts wrapped and cut from inside
the clip, and an in-sync mute. Its flags name each leak, each variant the trained judge scores above its source on more
than half the clips, and an in-sync mute it punishes on nearly all; `Judge.load` warns of them.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path

from ..config import ConfigError
from ..data import built_sources, pairs_now, split_sources
from ..data.perceivability import below_grid_reason, dataset_perceivability, perceivability_lines
from ..data.shortcuts import AUDIT_FILE, audit_lines, judge_audit
from ..jsonl import read_json_object, write_json
from ..judges import CARD_FILE, Judge
from ..judges.adapters import model_name
from ..judges.judge import checkpoint_sampling
from ..prompts import task as judge_task
from ..stats import printed
from .audit import VARIANTS, audit
from .reward import PromptBlindReward, Reward, sample

CARD_MARKDOWN = "judge_card.md"
AUDIT_PAIRS = 400  # pairs a split the card's own shortcut audit reads where the build kept none
AUDIT_CLIPS = 12  # held-out source clips the card's reward audit scores (each beside every variant)


def _shortcuts(dataset: Path, task: str, train_split: str, eval_split: str) -> dict:
    """The dataset's shortcut audit of ``task``: the one its build kept, else one run now on a sample."""
    kept = dataset / AUDIT_FILE
    if kept.is_file():
        report = read_json_object(kept, f"run `avjudge data audit --input {dataset}` again, or delete it")
        if task in report:
            return report[task]
    return judge_audit(dataset, task, train_split, eval_split, AUDIT_PAIRS, os.cpu_count() or 1)


def _reward_audit(checkpoint: Path, task: str, clips: list[dict], settings: dict) -> dict:
    """The reward audit of the judge in ``checkpoint`` on ``clips`` (manifest records); variants of another prompt
    only for a judge that reads one."""
    judge = Judge.load(task, checkpoint, **settings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PromptBlindReward)  # an AV judge reads no prompt by design
        reward = Reward({task: judge})
    field = judge_task(task).caption_field
    samples = [sample({"video": r["video"]}, (r.get("captions") or {}).get(field) if field else None) for r in clips]
    variants = tuple(v for v in VARIANTS if v.name != "other_prompt" or judge_task(task).needs_text)
    report = audit(reward, samples, variants, bootstrap=200)
    report["flags"] = [flag for flag in report["flags"] if not flag.startswith("prompt-blind")]
    return report


def judge_card(
    dataset: str | Path,
    task: str,
    checkpoint: str | Path,
    base_model: str | Path,
    summary: dict,
    train_split: str = "train",
    eval_split: str = "test",
    clips: int = AUDIT_CLIPS,
    settings: dict | None = None,
) -> dict:
    """The card of the judge ``task`` trained on ``dataset`` into ``checkpoint`` from ``base_model``; ``summary`` is
    what `avjudge.train.run_training` returned; ``settings``: `JudgeSettings` fields to load both judges with (e.g.
    ``device``)."""
    from ..data import built_recipe

    dataset = Path(dataset)
    pairs_hash, edited = pairs_now(dataset)
    recipe_text = (dataset / "recipe.yaml").read_text()
    held_out = split_sources(dataset, built_sources(dataset), eval_split)[:clips]
    settings = dict(settings or {})
    shortcuts = _shortcuts(dataset, task, train_split, eval_split)
    before = _reward_audit(Path(base_model), task, held_out, settings)
    after = _reward_audit(Path(checkpoint), task, held_out, settings)
    evaluation = summary["eval_after"]
    # what its input can represent of each AV negative, at the sampling it was trained and is scored with
    seen = dataset_perceivability(dataset, checkpoint_sampling(task, Path(checkpoint))) if task == "av" else None
    flags = (
        [
            f"leak: the {leak['side']} alone tells {leak['type']} apart (AUROC {printed(leak['auroc'], 2)}): "
            f"{leak['gives_away']}"
            for leak in shortcuts["leak_details"]
        ]
        + [f"below the grid: {kind}: {below_grid_reason(seen, kind)}" for kind in (seen or {}).get("below_grid", [])]
        + after["flags"]
        + (["pairs edited since the build: the dataset hash is of the pairs as they are now"] if edited else [])
    )
    return {
        "judge": task,
        "checkpoint": str(checkpoint),
        "model": model_name(checkpoint),  # "Qwen2.5-Omni + sync adapter" where it has one
        "base_model": str(base_model),
        "steps": summary.get("steps"),
        "dataset": {
            "path": str(dataset),
            "recipe": built_recipe(dataset).name,
            "recipe_sha256": hashlib.sha256(recipe_text.encode()).hexdigest(),
            "dataset_hash": pairs_hash,
        },
        "held_out": {
            "split": eval_split,
            "overall": evaluation["overall"],
            "per_type": {
                kind: {key: m[key] for key in ("n", "accuracy", "balanced_accuracy", "auroc")}
                for kind, m in evaluation["per_type"].items()
            },
        },
        "shortcut_audit": shortcuts,
        "perceivability": seen,
        "reward_audit": {"clips": after["clips"], "before": before["variants"], "after": after["variants"]},
        "flags": flags,
    }


def card_markdown(card: dict) -> str:
    """The card as a page: where the judge came from, what it scores held out, the audits and the flags."""
    data, held = card["dataset"], card["held_out"]
    lines = [
        f"# Judge card: {card['judge']} judge, {card['checkpoint']}",
        "",
        *([f"Model: {card['model']}.", ""] if card.get("model") else []),  # cards before avjudge named it had none
        f"Trained {card['steps']} steps from `{card['base_model']}` on `{data['path']}` (recipe `{data['recipe']}`, "
        f"dataset hash `{data['dataset_hash'][:16]}`).",
        "",
        "## Flags",
        "",
        *([f"- {flag}" for flag in card["flags"]] or ["- none"]),
        "",
        f"## Held out ({held['split']} split)",
        "",
        "| pairs | accuracy | balanced accuracy | AUROC |",
        "|---|---|---|---|",
    ]
    rows = {"all pairs": held["overall"], **held["per_type"]}
    for kind, m in rows.items():
        lines.append(
            f"| {kind} ({m['n']}) | {printed(m['accuracy'], 3)} | {printed(m['balanced_accuracy'], 3)} | "
            f"{printed(m['auroc'], 3, 'n/a')} |"
        )
    audited = card["reward_audit"]
    lines += [
        "",
        "## Shortcut audit of the pairs",
        "",
        "```",
        *audit_lines({card["judge"]: card["shortcut_audit"]}),
        "```",
        "",
        *(
            ["## What its input can represent", "", "```", *perceivability_lines(card["perceivability"]), "```", ""]
            if card.get("perceivability")
            else []
        ),
        f"## Reward audit on {audited['clips']} held-out source clips",
        "",
        "Share of clips whose variant scores above its source, untrained and trained (– : the judge reads none of "
        "what the variant changes).",
        "",
        "| variant | untrained | trained |",
        "|---|---|---|",
    ]
    for name, row in audited["after"].items():
        before = audited["before"].get(name, {}).get("reward", {}).get("share")
        lines.append(f"| {name} ({row['description']}) | {printed(before, 2)} | {printed(row['reward']['share'], 2)} |")
    return "\n".join(lines) + "\n"


def write_card(card: dict, *folders: str | Path) -> list[Path]:
    """``judge_card.json`` and ``judge_card.md`` into each of ``folders`` (the run's output and its checkpoint)."""
    written = []
    for folder in folders:
        folder = Path(folder)
        write_json(folder / CARD_FILE, card)
        (folder / CARD_MARKDOWN).write_text(card_markdown(card))
        written += [folder / CARD_FILE, folder / CARD_MARKDOWN]
    return written


def read_card(folder: str | Path) -> dict:
    """The card in ``folder`` (a run's output folder or its checkpoint).

    Raises:
        ConfigError: there is none, or it is not JSON of a judge card's fields.
    """
    path = Path(folder) / CARD_FILE
    if not path.is_file():
        raise ConfigError(f"{path}: no judge card; `avjudge train` writes one into its output folder and final/")
    try:
        card = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: not a judge card ({err}); a training run writes it anew") from None
    fields = ("judge", "checkpoint", "base_model", "steps", "dataset", "held_out", "shortcut_audit", "reward_audit",
              "flags")  # fmt: skip
    missing = [key for key in fields if key not in card] if isinstance(card, dict) else ["object"]
    if missing:
        raise ConfigError(f"{path}: not a judge card (no {', '.join(missing)}); a training run writes it anew")
    return card


def card_of_run(config, summary: dict, clips: int = AUDIT_CLIPS) -> dict:
    """The card of the run ``config`` (an `avjudge.train.TrainConfig`) that returned ``summary``, written into its
    output folder and its ``final`` checkpoint."""
    out = Path(config.output_dir)
    card = judge_card(
        Path(config.dataset).expanduser(),
        config.task,
        out / "final",
        Path(config.model).expanduser(),
        summary,
        config.train_split,
        config.eval_split,
        clips,
    )
    write_card(card, out, out / "final")
    return card
