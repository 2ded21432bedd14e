"""Deprecated for one release: the trainer adapters are `avjudge.rewards.adapters`, over a `avjudge.rewards.Reward`
(``Reward.served(scorer, {"av": 1.0})`` is what these built). They keep their old signature ``(scorer, judge)``,
with the new adapters' failure rules."""

from __future__ import annotations

import warnings

from ..rewards import Reward, adapters

warnings.warn(
    "avjudge.serve.adapters is deprecated and goes in avjudge 0.3: use avjudge.rewards.adapters over a "
    "avjudge.rewards.Reward (Reward.served(scorer, {judge: 1.0}) for a server)",
    DeprecationWarning,
    stacklevel=2,
)


def _reward(scorer, judge: str, use_delta: bool) -> Reward:
    return Reward.served(scorer, {judge: 1.0}, use_delta=use_delta)


def trl_reward(scorer, judge: str, media_key: str = "video", use_delta: bool = False):
    """Clips from the ``media_key`` column, else the completions (as before)."""
    reward = _reward(scorer, judge, use_delta)
    by_column, by_completion = (adapters.trl_reward(reward, media_from=m) for m in (media_key, "completions"))

    def avjudge_reward(prompts=None, completions=None, **columns):
        chosen = by_column if columns.get(media_key) is not None else by_completion
        return chosen(prompts=prompts, completions=completions, **columns)

    avjudge_reward.__name__ = by_column.__name__
    return avjudge_reward


def verl_compute_score(scorer, judge: str, use_delta: bool = False):
    return adapters.verl_compute_score(_reward(scorer, judge, use_delta))


def openrlhf_reward_func(scorer, judge: str, use_delta: bool = False):
    return adapters.openrlhf_reward_func(_reward(scorer, judge, use_delta))


def flow_grpo_reward(scorer, judge: str, use_delta: bool = False):
    return adapters.flow_grpo_reward(_reward(scorer, judge, use_delta))
