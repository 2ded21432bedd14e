"""Rewards for RL fine-tuning of audio-video generators: one `Reward` (a weighted mix of judges, metrics and
functions, in this process or through the reward server), failures every trainer can take, clips in memory, and
each trainer's call shape (`avjudge.rewards.adapters`)."""

from .adapters import (
    flow_grpo_reward,
    openrlhf_reward_func,
    trl_reward,
    verl_async_compute_score,
    verl_batch_compute_score,
    verl_compute_score,
    verl_omni_compute_score,
)
from .avreward import AVReward
from .config import RewardConfig, TermConfig, load_reward
from .failure import OnFailure
from .inputs import batch_items, clip_item
from .reward import ASPECTS, PromptBlindReward, Reward, RewardBatch, RewardTerm, sample
from .watch import GoldWatch, RewardHacking

__all__ = [
    "ASPECTS",
    "AVReward",
    "FlowFactoryReward",
    "GoldWatch",
    "RewardConfig",
    "TermConfig",
    "load_reward",
    "OnFailure",
    "PromptBlindReward",
    "Reward",
    "RewardBatch",
    "RewardHacking",
    "RewardTerm",
    "batch_items",
    "clip_item",
    "flow_grpo_reward",
    "openrlhf_reward_func",
    "sample",
    "trl_reward",
    "verl_async_compute_score",
    "verl_batch_compute_score",
    "verl_compute_score",
    "verl_omni_compute_score",
]


def __getattr__(name: str):
    if name == "FlowFactoryReward":  # imports Flow-Factory where it is installed: only when asked for
        from .flow_factory import FlowFactoryReward

        return FlowFactoryReward
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
