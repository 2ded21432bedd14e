"""Rewards for RL fine-tuning of audio-video generators, scored through the scoring core."""

from .reward import AVReward, RewardTerm

__all__ = ["AVReward", "RewardTerm"]
