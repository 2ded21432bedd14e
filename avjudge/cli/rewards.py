"""`avjudge rewards`: a reward checked before it trains a generator."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..commands import GROUP_HELP, add_input, add_out, add_set, count, register, required_input, share

GROUP_HELP["rewards"] = "rewards for RL fine-tuning: audit one against reward hacking before training"


def _audit_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reward", type=Path, required=True, help="the reward's YAML (avjudge.rewards.RewardConfig)")
    add_input(p, "clips a generator made, with their prompts: a manifest (captions), a folder or files")
    add_out(p, "folder for audit.json, audit.md and audit.html")
    p.add_argument("--max-share", type=share, default=0.5, help="flag a term that prefers a variant on more clips")
    p.add_argument("--bootstrap", type=count, default=1000, help="resamples of each share's 95%% interval")
    p.add_argument("--seed", type=count, default=0, help="the bootstrap's seed")
    add_set(p, "an override of the reward's YAML, e.g. device=cpu")


def _audit(args: argparse.Namespace) -> int:
    from ..data import input_items
    from ..rewards import load_reward
    from ..rewards.audit import AuditError, audit, write_audit
    from ..scoring import captions_of

    items = input_items(required_input(args))
    reward = load_reward(args.reward, args.overrides)
    captions = [item.get("captions") or captions_of() for item in items]
    samples = [{"video": item["video"], "captions": c} for item, c in zip(items, captions)]
    try:
        report = audit(reward, samples, max_share=args.max_share, bootstrap=args.bootstrap, seed=args.seed)
    except AuditError as err:
        print(f"avjudge: {err}", file=sys.stderr)
        return 1  # as a job whose every clip failed
    written = write_audit(report, args.out)
    for flag in report["flags"]:
        print(f"flag: {flag}")
    print(json.dumps({k: str(v) for k, v in written.items()}, indent=2))
    return 0


register(
    "rewards audit",
    "score a reward on degenerate clips (black, frozen, looped, silent...) beside their sources",
    _audit_args,
    _audit,
    "Before a reward trains a generator: each clip is scored beside variants a generator drifts\n"
    "toward when it games the reward (black frames, the first frame frozen, the first second\n"
    "looped, frames reversed or shuffled, silence, white noise, another clip's sound, the sound\n"
    "shifted wrapped or cut from inside the clip, another clip's prompt) and an in-sync mute, by\n"
    "the reward and each term. The report gives the share of clips whose variant scores above\n"
    "its source (with a bootstrap interval; ties apart, as no preference; a term is asked only\n"
    "about variants of what it reads), and flags a prompt-blind reward, any term that prefers a\n"
    "variant on more than --max-share of clips, and one that punishes the in-sync mute on\n"
    "nearly all. A run where no clip can be read exits 1.\n\n"
    "example:\n  avjudge rewards audit --reward reward.yaml --input world/world.jsonl --out audit",
)
