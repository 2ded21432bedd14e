"""`avjudge train`: fine-tune a judge."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..commands import add_set, register, warn_deprecated
from ..resources import shipped


def _train_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        required=True,
        help="a YAML TrainConfig file, or a shipped one by name: " + ", ".join(shipped("train_config")),
    )
    add_set(
        p,
        "set a judge field (model=DIR, dataset=DIR, output_dir=DIR) or any transformers TrainingArguments option "
        "(max_steps=10, max_grad_norm=0.5, deepspeed=zero3)",
    )
    p.add_argument("positional_overrides", nargs="*", metavar="KEY=VALUE", help=argparse.SUPPRESS)  # the old spelling


def _train(args: argparse.Namespace) -> int:
    from ..config import ConfigError, dump_yaml, load_config
    from ..resources import resolve
    from ..rewards.card import card_of_run
    from ..stats import printed
    from ..train import TrainConfig, evaluation_table, run_training
    from ..train.train_config import named_sampling_wins
    from ..train.trainer import end_worker, is_main_process

    if args.positional_overrides:
        warn_deprecated("KEY=VALUE without --set", "--set KEY=VALUE")
    overrides = args.positional_overrides + args.overrides
    config = named_sampling_wins(load_config(TrainConfig, resolve(args.config, "train_config"), overrides), overrides)
    given = {o.partition("=")[0] for o in overrides}
    # a path a shipped config holds: said where it came from, before anything loads (a model named as a hub id, not
    # a path, is the loader's to find)
    local = {"dataset": True, "model": config.model.startswith(("~", "/", "."))}
    for key in ("dataset", "model"):
        if key not in given and local[key] and not Path(getattr(config, key)).expanduser().exists():
            raise ConfigError(
                f"{key} {getattr(config, key)} (from the config {args.config}) does not exist: give "
                f"--set {key}=PATH" + (" (pairs made by `avjudge data build`, or `avjudge demo`'s demo_out/pairs)"
                                     if key == "dataset" else " (a judge or base model folder)")
            )  # fmt: skip
    if is_main_process():  # under torchrun or deepspeed, one process speaks for all
        print(dump_yaml(config))
    summary = run_training(config)
    if not is_main_process():
        end_worker()
    if not summary["replicas_agree"]:
        print(f"avjudge: error: the {summary['processes']} processes ended with different weights", file=sys.stderr)
        return 1
    after = summary["eval_after"]["overall"]
    print("\n".join(evaluation_table({config.task: summary})))
    print(
        f"trained {summary['steps']} steps; held-out accuracy {after['accuracy']:.3f}, AUROC "
        f"{printed(after['auroc'], 3, 'n/a')}, pairwise accuracy {printed(after.get('pairwise_accuracy'), 3, 'n/a')}, "
        f"Yes-bias {after['yes_bias']:.3f}; model in "
        f"{Path(config.output_dir) / 'final'}"
    )
    card = card_of_run(config, summary)
    for flag in card["flags"]:
        print(f"flag: {flag}")
    print(f"judge card: {Path(config.output_dir) / 'judge_card.md'} (avjudge judges card {config.output_dir})")
    return 0


register(
    "train",
    "fine-tune a judge on pairs (single-token Yes/No SFT; DeepSpeed optional)",
    _train_args,
    _train,
    "Train the model in CONFIG on a dataset made by `avjudge data build`. The loss falls on\n"
    "the answer token only; held-out pairs are scored every eval_steps (metrics to the log,\n"
    "wandb offline unless configured, and OUT/eval/step_*.json). OUT/final and every\n"
    "checkpoint load directly in `avjudge score`. Rerunning resumes from the newest checkpoint.\n"
    "It ends by writing the judge card (OUT/judge_card.json and .md, also in OUT/final): the data's\n"
    "shortcut audit, held-out figures per negative type and the judge's reward audit, with flags\n"
    "(`avjudge judges card OUT`).\n\n"
    "examples:\n"
    "  avjudge train --config tiny_world_av --set model=DIR --set dataset=pairs --set output_dir=runs/av\n"
    "multi-GPU (the paper's setup; held-out evaluation sharded over the processes, one writes):\n"
    "  torchrun --nproc_per_node 8 -m avjudge.cli train --config av_qwen25omni_7b --set dataset=DIR\n"
    "  deepspeed --num_gpus 8 --module avjudge.cli train --config av_qwen25omni_7b --set dataset=DIR",
)
