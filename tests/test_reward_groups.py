"""A failed rollout is neutral for its own group: its reward is the mean of its group's good rewards, so each trainer's
own GRPO advantage gives it 0 and leaves its group's mean as it was (a rollout that learns to crash the decoder gains
nothing). Shown in verl's GRPO advantage (its own code), and in Flow-GRPO's, DanceGRPO's and TRL's advantage steps
(their formulas, files named)."""

from __future__ import annotations

import numpy as np
import pytest

from avjudge.media import DecodeNeeds, from_arrays
from avjudge.rewards import Reward, RewardTerm, flow_grpo_reward, sample, trl_reward, verl_batch_compute_score

from .helpers import float32_group_tolerance

NEEDS = DecodeNeeds(video=True, fps=2.0)


def brightness(clip) -> float:
    """A scripted term: the picture's mean brightness / 255; a white picture is a decoder crash."""
    if clip.frames.mean() > 250:
        raise ValueError("the decoder crashed")
    return float(clip.frames.mean()) / 255


def frames(level: float) -> np.ndarray:
    return np.full((2, 8, 8, 3), level, np.uint8)


# two prompts of three rollouts each; the second rollout of prompt "a" crashes the decoder
LEVELS = [40, 255, 200, 10, 90, 60]
PROMPTS = ["a", "a", "a", "b", "b", "b"]
GOOD = [k for k, level in enumerate(LEVELS) if level != 255]


def reward() -> Reward:
    return Reward({"bright": RewardTerm(brightness, midpoint=0.5, needs=NEEDS)})


def test_the_neutral_value_is_the_groups_good_mean_then_the_calls_then_the_groups_history():
    r = reward()
    batch = r.score([sample({"media": from_arrays(frames(v), 2.0)}, group=p) for v, p in zip(LEVELS, PROMPTS)])
    assert batch.failed == [k not in GOOD for k in range(6)]
    assert batch.rewards[1] == pytest.approx((40 + 200) / 2 / 255)  # group a's good mean, not the call's
    # a group with no good value in the call: the same group's recent good values, then the call's mean
    again = r.score([sample({"media": from_arrays(frames(255), 2.0)}, group="a"),
                     sample({"media": from_arrays(frames(20), 2.0)}, group="c"),
                     sample({"media": from_arrays(frames(255), 2.0)}, group="d")])  # fmt: skip
    assert again.rewards[0] == pytest.approx((40 + 200) / 2 / 255)
    assert again.rewards[2] == pytest.approx(20 / 255)


def _flow_grpo_advantages(prompts, rewards):
    """flow_grpo @ ac4c86e8, flow_grpo/stat_tracking.py, PerPromptStatTracker.update (std over the prompt's group)."""
    prompts, out = np.asarray(prompts), np.empty_like(rewards, dtype=np.float64)
    for prompt in np.unique(prompts):
        group = rewards[prompts == prompt]
        out[prompts == prompt] = (group - group.mean()) / (group.std() + 1e-4)
    return out


def _dance_grpo_advantages(rewards, num_generations):
    """XueZeyue/DanceGRPO @ 22b85efe, fastvideo/train_grpo_flux.py, train_one_step (use_group): consecutive groups of
    num_generations, torch's unbiased std plus 1e-8."""
    import torch

    rewards = torch.as_tensor(rewards, dtype=torch.float32)
    advantages = torch.zeros_like(rewards)
    for i in range(len(rewards) // num_generations):
        group = rewards[i * num_generations : (i + 1) * num_generations]
        advantages[i * num_generations : (i + 1) * num_generations] = (group - group.mean()) / (group.std() + 1e-8)
    return advantages.numpy()


def _without_the_failure(values):
    return np.array([values[k] for k in GOOD])


def test_flow_grpo_and_dance_grpo_give_a_failed_rollout_advantage_0_and_keep_its_groups_mean():
    batch = np.stack([frames(v).astype(np.float32) / 255 for v in LEVELS])  # (B, T, H, W, C) in [0, 1]
    scored, info = flow_grpo_reward(reward(), fps=2.0)(batch, PROMPTS, None)
    assert info["failed"].tolist() == [0, 1, 0, 0, 0, 0]
    for advantages in (_flow_grpo_advantages(PROMPTS, scored), _dance_grpo_advantages(scored, 3)):
        assert abs(advantages[1]) <= float32_group_tolerance(scored[:3])
    group_a = scored[:3]
    assert group_a.mean() == pytest.approx(np.mean([scored[0], scored[2]]), abs=1e-7)  # the group's mean stays


def test_trls_groups_are_its_prompts_and_a_neutral_failure_has_advantage_0():
    """TRL 1.16's GRPOTrainer repeats each prompt num_generations times and normalises rewards within those groups
    (trl/trainer/grpo_trainer.py, _generate_and_score_completions)."""
    fn = trl_reward(reward(), media_from="clip", on_failure="neutral")
    rewards = np.array(fn(prompts=PROMPTS, completions=["c"] * 6, clip=[frames(v) for v in LEVELS]), float)
    grouped = rewards.reshape(2, 3)
    advantages = (grouped - grouped.mean(1, keepdims=True)) / (grouped.std(1, keepdims=True) + 1e-4)
    assert abs(advantages.ravel()[1]) <= float32_group_tolerance(grouped[0])


def test_verls_own_grpo_advantage_gives_a_failed_rollout_0_and_mean_only_leaves_the_others_unchanged():
    pytest.importorskip("verl")
    import torch
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage

    # verl's batch reward manager hands compute_score each rollout's extra_info: here the rendered clip's arrays and
    # the dataset row's index, which verl's data recipes write (and which its uid follows: one per row)
    extras = [{"clip": {"frames": frames(v), "fps": 2.0}, "index": p} for v, p in zip(LEVELS, PROMPTS)]
    rows = verl_batch_compute_score(reward(), clip_from="clip")(["w"] * 6, [""] * 6, [None] * 6, extras)
    scores = torch.tensor([[row["score"]] for row in rows])
    mask = torch.ones_like(scores)
    uid = np.array(PROMPTS, dtype=object)
    normalised, _ = compute_grpo_outcome_advantage(scores, mask, uid)
    assert [row["failed"] for row in rows] == [0, 1, 0, 0, 0, 0]
    assert abs(float(normalised[1, 0])) <= float32_group_tolerance(scores[:3, 0])
    mean_only, _ = compute_grpo_outcome_advantage(scores, mask, uid, norm_adv_by_std_in_grpo=False)
    alone, _ = compute_grpo_outcome_advantage(scores[GOOD], mask[GOOD], uid[GOOD], norm_adv_by_std_in_grpo=False)
    assert mean_only[GOOD, 0].tolist() == pytest.approx(alone[:, 0].tolist(), abs=1e-6)
