"""`avjudge rewards`: a reward checked before it trains a generator."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..commands import GROUP_HELP, add_input, add_out, add_set, register, required_input

GROUP_HELP["rewards"] = "rewards for RL fine-tuning: audit one against reward hacking before training"


def _audit_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--reward", type=Path, required=True, help="the reward's YAML (avjudge.rewards.RewardConfig)")
    add_input(p, "clips a generator made, with their prompts: a manifest (captions), a folder or files")
    add_out(p, "folder for audit.json, audit.md and audit.html")
    p.add_argument("--max-share", type=float, default=0.5, help="flag a term that prefers a variant on more clips")
    p.add_argument("--bootstrap", type=int, default=1000, help="resamples of each share's 95%% interval")
    p.add_argument("--seed", type=int, default=0, help="the bootstrap's seed")
    add_set(p, "an override of the reward's YAML, e.g. device=cpu")


def _audit(args: argparse.Namespace) -> int:
    from ..data import input_items
    from ..rewards import load_reward
    from ..rewards.audit import audit, write_audit
    from ..scoring import captions_of

    items = input_items(required_input(args))
    reward = load_reward(args.reward, args.overrides)
    captions = [item.get("captions") or captions_of() for item in items]
    samples = [{"video": item["video"], "captions": c} for item, c in zip(items, captions)]
    report = audit(reward, samples, max_share=args.max_share, bootstrap=args.bootstrap, seed=args.seed)
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
    "shifted, another clip's prompt), by the reward and each term. The report gives the share of\n"
    "clips whose variant scores at least its source (with a bootstrap interval), and flags a\n"
    "prompt-blind reward and any term that prefers a variant on more than --max-share of clips.\n\n"
    "example:\n  avjudge rewards audit --reward reward.yaml --input world/world.jsonl --out audit",
)
