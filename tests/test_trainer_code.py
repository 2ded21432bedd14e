"""The rewards inside the RL trainers' own code: verl's reward managers and GRPO advantage, TRL's GRPOTrainer.

verl comes from the install line in the Makefile (0.9.1, without its GPU dependencies); TRL from the ``train``
extra. OpenRLHF cannot be installed without vLLM: its call shapes are in test_rewards.py, upstream file named.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from avjudge.rewards import Reward
from avjudge.rewards.adapters import trl_reward, verl_batch_compute_score, verl_compute_score

from .helpers import float32_group_tolerance


@pytest.fixture
def judges(av_vt_judges):
    return av_vt_judges


@pytest.fixture
def clips(world_records):
    return [r["video"] for r in world_records]


def _verl_batch(tokenizer, responses: list[str], groups: list[str]):
    """A rollout batch as verl's trainer hands it to its reward manager: left-padded prompts, right-padded responses
    (here each response is the path of the clip the rollout rendered), the dataset's non-tensor fields."""
    import torch
    from verl import DataProto

    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    prompt_ids = tokenizer("make a clip", add_special_tokens=False)["input_ids"]
    encoded = [tokenizer(r, add_special_tokens=False)["input_ids"] for r in responses]
    width = max(map(len, encoded)) + 2
    responses_t = torch.tensor([ids + [pad] * (width - len(ids)) for ids in encoded])
    prompts_t = torch.tensor([prompt_ids] * len(responses))
    mask = torch.tensor([[1] * len(prompt_ids) + [1] * len(ids) + [0] * (width - len(ids)) for ids in encoded])
    n = len(responses)
    return DataProto.from_dict(
        tensors={"prompts": prompts_t, "responses": responses_t, "attention_mask": mask},
        non_tensors={
            "data_source": np.array(["avworld"] * n, dtype=object),
            "reward_model": np.array([{"ground_truth": None}] * n, dtype=object),
            # verl's data recipes write each row's index in extra_info; its uid (one per row) follows it
            "extra_info": np.array([{"prompt": "a clip", "index": g} for g in groups], dtype=object),
            "uid": np.array(groups, dtype=object),
        },
    )


def test_verl_reward_managers_and_grpo_keep_a_group_with_a_failed_clip_finite(judges, clips, corrupt, tiny_judges):
    pytest.importorskip("verl")
    from transformers import AutoTokenizer
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage
    from verl.trainer.ppo.metric_utils import process_validation_metrics
    from verl.workers.reward_manager import BatchRewardManager, NaiveRewardManager

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_judges["qwen2_5_omni"]))
    responses = [clips[0], clips[1], corrupt, clips[1], clips[0], clips[2]]
    groups = ["a", "a", "a", "b", "b", "b"]
    reward = Reward({"av": judges["av"]})
    expected = {p: r.score for p, r in zip(clips, judges["av"].score(clips))}

    def advantages(out, data):
        response_mask = data.batch["attention_mask"][:, data.batch["prompts"].shape[-1] :]
        adv, _ = compute_grpo_outcome_advantage(out["reward_tensor"], response_mask, np.array(groups, dtype=object))
        return adv, response_mask

    data = _verl_batch(tokenizer, responses, groups)
    naive = NaiveRewardManager(tokenizer, 0, compute_score=verl_compute_score(reward))(data, return_dict=True)
    batch = BatchRewardManager(tokenizer, 0, compute_score=verl_batch_compute_score(reward))(
        _verl_batch(tokenizer, responses, groups), return_dict=True
    )
    for out in (naive, batch):
        sequence_rewards = out["reward_tensor"].sum(-1).tolist()
        good = [k for k, r in enumerate(responses) if r != corrupt]
        assert [sequence_rewards[k] for k in good] == pytest.approx([expected[responses[k]] for k in good], abs=1e-5)
        assert math.isfinite(sequence_rewards[2]) and out["reward_extra_info"]["failed"] == [0, 0, 1, 0, 0, 0]
        adv, mask = advantages(out, data)
        assert bool(adv[mask.bool()].isfinite().all())
        # the failed rollout is its group's mean: advantage 0 (per sample too: it comes after its group's good ones)
        assert float(adv[2][mask[2].bool()].abs().max()) <= float32_group_tolerance(sequence_rewards[:3])
    # verl's validation metrics take every extra value as a number
    metrics = process_validation_metrics(["avworld"] * 6, groups, dict(naive["reward_extra_info"]))
    assert "failed" in metrics["avworld"]

    # what the neutral default prevents: a NaN reward makes every advantage of its group NaN in verl's GRPO
    as_nan = NaiveRewardManager(tokenizer, 0, compute_score=verl_compute_score(reward, on_failure="nan"))
    adv, mask = advantages(as_nan(_verl_batch(tokenizer, responses, groups), return_dict=True), data)
    assert adv[:3][mask[:3].bool()].isnan().all() and adv[3:][mask[3:].bool()].isfinite().all()


def test_verl_reward_loop_scores_each_sample_and_the_async_reward_batches_them(judges, clips, corrupt, tiny_judges):
    """verl 0.9's trainer rewards through its reward loop: one coroutine per sample, all gathered at once, a plain
    compute_score run in executor threads. The plain adapter is safe there (one call at a time); the async one
    scores the samples awaiting together as one batch."""
    pytest.importorskip("verl")
    import asyncio

    from omegaconf import OmegaConf
    from transformers import AutoTokenizer
    from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager as RewardLoopManager

    from avjudge.rewards.adapters import verl_async_compute_score

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_judges["qwen2_5_omni"]))
    responses = [clips[0], clips[1], corrupt, clips[1], clips[0], clips[2]]
    data = _verl_batch(tokenizer, responses, ["a", "a", "a", "b", "b", "b"])
    expected = {p: r.score for p, r in zip(clips, judges["av"].score(clips))}
    reward = Reward({"av": judges["av"]})
    batch_sizes = []
    score = reward.backend.score
    reward.backend.score = lambda samples: batch_sizes.append(len(samples)) or score(samples)

    async def rollout(compute_score):
        manager = RewardLoopManager(OmegaConf.create({}), tokenizer, compute_score)
        return await asyncio.gather(*(manager.run_single(data[k : k + 1]) for k in range(len(data))))

    for compute_score, sizes in ((verl_async_compute_score(reward), [6]), (verl_compute_score(reward), [1] * 6)):
        batch_sizes.clear()
        answers = asyncio.run(rollout(compute_score))
        rewards = [a["reward_score"] for a in answers]
        assert [a["reward_extra_info"]["failed"] for a in answers] == [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
        good = [k for k, r in enumerate(responses) if r != corrupt]
        assert [rewards[k] for k in good] == pytest.approx([expected[responses[k]] for k in good], abs=1e-5)
        assert math.isfinite(rewards[2]) and batch_sizes == sizes


@pytest.fixture(scope="module")
def tiny_policy(tiny_judges, tmp_path_factory):
    """A causal LM of one layer with the tiny judges' tokenizer: a captioning policy for TRL to train."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    folder = tmp_path_factory.mktemp("tiny_policy")
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_judges["qwen2_5_omni"]))
    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1)  # fmt: skip
    Qwen2ForCausalLM(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def test_trl_grpo_trainer_steps_with_a_failed_clip_and_logs_it(judges, clips, corrupt, tiny_policy, tmp_path):
    """TRL's own GRPOTrainer trains a captioning policy on the VT judge's reward of each completion: one clip of
    the dataset is corrupt, its completions are left out of their group (None), training goes on, and TRL logs
    avjudge's metrics and errors."""
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    dataset = Dataset.from_dict({"prompt": ["Describe the clip:"] * 2, "video": [clips[0], corrupt]})
    judged = trl_reward(Reward({"vt": judges["vt"]}), text_from="completion")
    given = []

    def reward(**kwargs):  # what TRL got back, call by call
        given.append(judged(**kwargs))
        return given[-1]

    reward.__name__ = judged.__name__
    config = GRPOConfig(
        output_dir=str(tmp_path / "grpo"), per_device_train_batch_size=4, num_generations=2,
        max_completion_length=6, max_steps=1, logging_steps=1, learning_rate=1e-3, report_to=[], use_cpu=True,
        save_strategy="no", log_completions=True, num_completions_to_print=0, seed=0,
    )  # fmt: skip
    trainer = GRPOTrainer(model=str(tiny_policy), reward_funcs=[reward], args=config, train_dataset=dataset)
    before = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.train()
    logged = trainer.state.log_history[0]
    (rewards,) = given  # the good clip's two completions, differently judged; the corrupt clip's two, None
    good = [r for r in rewards if r is not None]
    assert len(good) == 2 and good[0] != good[1] and rewards.count(None) == 2
    assert math.isfinite(logged["reward"]) and math.isfinite(logged["rewards/avjudge_vt/mean"])
    assert logged["avjudge/failed"] == pytest.approx(0.5)  # two of the four completions are of the corrupt clip
    assert all(torch.isfinite(p).all() for p in trainer.model.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.model.parameters()))


def test_the_rl_rewards_page_runs_as_written(tmp_path, monkeypatch):
    """docs/rewards.md: its Python blocks, in order, in one namespace, in a fresh folder."""
    import re
    from pathlib import Path

    page = (Path(__file__).parents[1] / "docs" / "rewards.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    assert len(blocks) >= 7
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for k, block in enumerate(blocks):
        exec(compile(block, f"docs/rewards.md block {k}", "exec"), namespace)
    batch, samples = namespace["batch"], namespace["samples"]
    assert batch.failed == [False] * 3 + [True] and all(math.isfinite(r) for r in batch.rewards)
    remote, local = namespace["remote"].score(samples).rewards, namespace["local"].score(samples).rewards
    assert remote == pytest.approx(local, abs=1e-6)
