"""Rewards for RL fine-tuning of audio-video generators: one `Reward` (a weighted mix of judges, metrics and
functions, in this process or through the reward server), failures every trainer can take, clips in memory, and
each trainer's call shape (`avjudge.rewards.adapters`)."""

from .adapters import (
    FlowFactoryReward,
    flow_grpo_reward,
    openrlhf_reward_func,
    trl_reward,
    verl_async_compute_score,
    verl_batch_compute_score,
    verl_compute_score,
    verl_omni_compute_score,
)
from .avreward import AVReward
from .failure import OnFailure
from .inputs import batch_items, clip_item
from .reward import ASPECTS, Reward, RewardBatch, RewardTerm, sample

__all__ = [
    "ASPECTS",
    "AVReward",
    "FlowFactoryReward",
    "OnFailure",
    "Reward",
    "RewardBatch",
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
