"""Group win-rate rewards (``mode: win_rate``): G scorings per group, not C(G, 2); a failed rollout wins nothing;
through verl's own GRPO advantage and Flow-GRPO's per-prompt tracker, TRL's call shape, and the server's
/get_reward.

Found while writing these: GRPO's per-group standard deviation is blind to scale, so a near-tied group's win rates
are blown up as much as its pointwise scores are (both ±1.16 in a group of four). A win rate's advantages are
bounded where the trainer keeps the reward's scale: verl's ``norm_adv_by_std_in_grpo=False`` (Dr. GRPO) and
Flow-GRPO's ``global_std``. The tests show both sides.
"""

from __future__ import annotations

import shutil
from collections import Counter

import numpy as np
import pytest
from fastapi.testclient import TestClient

from avjudge.config import ConfigError
from avjudge.judges.preference import Preference
from avjudge.media import NATIVE_FPS, DecodeNeeds
from avjudge.rewards import Reward, RewardTerm, sample
from avjudge.rewards.adapters import (
    flow_grpo_reward,
    trl_reward,
    verl_async_compute_score,
    verl_batch_compute_score,
    verl_compute_score,
)
from avjudge.rewards.inputs import clip_item
from avjudge.serve.app import ServerSettings, create_app
from avjudge.serve.service import ScoreService

NEAR_TIED = [0.00, 0.01, 0.02, 0.03]  # a group's log-odds: four rollouts a judge can hardly tell apart
CLEAR = [-2.0, -2.1, -1.9, 3.0]  # one rollout far better than the other three


@pytest.fixture
def rollouts(world_records, tmp_path):
    """Eight clip files, the first four one group's rollouts, the last four another's, each with its log-odds."""
    paths = []
    for k in range(8):
        path = tmp_path / f"rollout{k}.mp4"
        shutil.copy(world_records[k % len(world_records)]["video"], path)
        paths.append(str(path))
    return paths, dict(zip(paths, NEAR_TIED + CLEAR))


def _log_odds_reward(log_odds: dict, calls: Counter, model=Preference(temperature=1.0, tie=1.5), mode="win_rate"):
    """A reward whose one term gives each clip its log-odds, counting how often each clip is scored."""

    def judged(clip) -> float:
        calls[clip.source] += 1
        return log_odds[clip.source]

    term = RewardTerm(judged, midpoint=0.0, needs=DecodeNeeds(video=True, fps=1.0), preference=model)
    return Reward({"judge": term}, mode=mode)


def test_a_groups_win_rates_come_from_one_scoring_each_and_a_failure_wins_nothing(rollouts, corrupt):
    paths, log_odds = rollouts
    calls = Counter()
    reward = _log_odds_reward(log_odds, calls)
    samples = [sample(clip_item(p), group="a" if k < 4 else "b") for k, p in enumerate(paths)]
    batch = reward.score(samples)
    assert sum(calls.values()) == 8 and set(calls.values()) == {1}  # G scorings per group, not C(G, 2) = 6
    model = Preference(temperature=1.0, tie=1.5)
    np.testing.assert_allclose(batch.rewards[:4], model.win_rates(NEAR_TIED), atol=1e-12)
    np.testing.assert_allclose(batch.rewards[4:], model.win_rates(CLEAR), atol=1e-12)
    assert np.mean(batch.rewards[:4]) == pytest.approx(0.5) and np.argmax(batch.rewards[4:]) == 3
    # a failed rollout takes the neutral ½, and the others' win rates are as if it were not there
    with_failure = reward.score([*samples[4:7], sample(clip_item(corrupt), group="b")])
    assert with_failure.failed == [False, False, False, True] and with_failure.rewards[3] == 0.5
    np.testing.assert_allclose(with_failure.rewards[:3], model.win_rates(CLEAR[:3]), atol=1e-12)
    # without a preference model a term's values win by rank
    ranked = Reward({"v": RewardTerm(lambda c: log_odds[c.source], midpoint=0.0,
                                     needs=DecodeNeeds(video=True, fps=NATIVE_FPS))}, mode="win_rate")  # fmt: skip
    assert ranked.score(samples[4:]).rewards == [1 / 3, 0.0, 2 / 3, 1.0]


def test_win_rates_in_verls_grpo_advantage(rollouts, tiny_judges):
    """verl's BatchRewardManager and compute_grpo_outcome_advantage (volcengine/verl @ v0.9.1) on two groups: one
    near-tied, one with a clear winner."""
    pytest.importorskip("verl")
    from transformers import AutoTokenizer
    from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage
    from verl.workers.reward_manager import BatchRewardManager

    from .test_trainer_code import _verl_batch

    paths, log_odds = rollouts
    groups = ["a"] * 4 + ["b"] * 4
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_judges["qwen2_5_omni"]))

    def advantages(mode: str, by_std: bool):
        reward = _log_odds_reward(log_odds, Counter(), mode=mode)
        data = _verl_batch(tokenizer, paths, groups)
        out = BatchRewardManager(tokenizer, 0, compute_score=verl_batch_compute_score(reward))(data, return_dict=True)
        mask = data.batch["attention_mask"][:, data.batch["prompts"].shape[-1] :]
        adv, _ = compute_grpo_outcome_advantage(
            out["reward_tensor"], mask, np.array(groups, dtype=object), norm_adv_by_std_in_grpo=by_std
        )
        return adv[:, 0].numpy()  # a rollout's advantage, the same on each of its tokens

    won = advantages("win_rate", by_std=False)
    assert np.abs(won[:4]).max() < 0.01  # the near-tied group: about nothing to learn
    assert np.argmax(won[4:]) == 3 and won[7] > 0.3 and (won[4:7] < 0).all()  # the winner ranks first
    illusory = advantages("pointwise", by_std=True)
    assert np.abs(illusory[:4]).max() > 1.0  # pointwise S with the group's std: a 0.03 spread made into ±1.16
    assert np.abs(advantages("win_rate", by_std=True)[:4]).max() > 1.0  # the std is blind to scale: the same


def test_win_rates_in_flow_grpos_per_prompt_tracker(rollouts):
    """Flow-GRPO's reward function shape and its advantage, ``PerPromptStatTracker.update`` of type ``grpo``
    (yifan123/flow_grpo @ 94e23ee, ``flow_grpo/stat_tracking.py``: per prompt, (reward - mean) / (std + 1e-4), the
    std of the prompt's rewards or, with ``global_std``, of the whole batch's), written out here."""
    paths, log_odds = rollouts
    prompts = ["a dog barks"] * 4 + ["rain on a roof"] * 4

    def tracker(rewards, global_std: bool) -> np.ndarray:
        rewards, names = np.asarray(rewards, np.float64), np.asarray(prompts)
        advantages = np.zeros_like(rewards)
        for prompt in np.unique(names):
            mine = rewards[names == prompt]
            std = (np.std(rewards) if global_std else np.std(mine)) + 1e-4
            advantages[names == prompt] = (mine - mine.mean()) / std
        return advantages

    fn = flow_grpo_reward(_log_odds_reward(log_odds, Counter()))
    rewards, info = fn(paths, prompts, [{}] * 8)
    adv = tracker(rewards, global_std=True)
    assert np.abs(adv[:4]).max() < 0.05 and np.argmax(adv[4:]) == 3 and adv[7] > 1.0
    assert np.abs(tracker(rewards, global_std=False)[:4]).max() > 1.0  # per-prompt std: scale-blind, as in verl
    assert list(info["failed"]) == [0.0] * 8


def test_trl_groups_by_prompt_and_per_sample_adapters_refuse_win_rates(rollouts):
    paths, log_odds = rollouts
    reward = _log_odds_reward(log_odds, Counter())
    prompts = ["p"] * 4 + ["q"] * 4
    rewards = trl_reward(reward)(prompts=prompts, completions=[""] * 8, video=paths)
    model = Preference(temperature=1.0, tie=1.5)
    np.testing.assert_allclose(rewards, [*model.win_rates(NEAR_TIED), *model.win_rates(CLEAR)], atol=1e-12)
    for adapter in (verl_compute_score, verl_async_compute_score):
        with pytest.raises(ConfigError, match="one sample at a time.*verl_batch_compute_score"):
            adapter(reward)
    with pytest.raises(ConfigError, match="mode is one of pointwise, win_rate"):
        Reward({"x": RewardTerm(lambda c: 0.0, midpoint=0.0)}, mode="pairs")


def test_get_reward_gives_win_rates_among_a_prompts_queries(av_vt_judges, world_records):
    service = ScoreService({"av": av_vt_judges["av"]})
    assert service.describe()["models"][0]["preference"] == {"temperature": 1.0, "tie": 1.0}
    videos = [r["video"] for r in world_records]
    body = {"query": [videos[0], videos[1], videos[2], videos[0]], "prompts": ["", "", "x", "x"]}
    settings = ServerSettings(reward_judge="av", reward_mode="win_rate")
    with TestClient(create_app(service, settings)) as client:
        rewards = client.post("/get_reward", json=body).json()["rewards"]
    deltas = {v: r.delta for v, r in zip(videos, av_vt_judges["av"].score(videos))}
    expected = [*Preference().win_rates([deltas[videos[0]], deltas[videos[1]]]),
                *Preference().win_rates([deltas[videos[2]], deltas[videos[0]]])]  # fmt: skip
    np.testing.assert_allclose(rewards, expected, atol=1e-6)
    assert rewards[0] + rewards[1] == pytest.approx(1.0) and rewards[2] + rewards[3] == pytest.approx(1.0)


def _scripted_reward(proxy_step: float, gold_step: float, tmp_path, patience: int = 3):
    """A reward whose optimised term and gold term move by a fixed step each call (a training run, scripted), the
    gold term held out; written as a reward YAML a trainer's loader reads would give it."""
    state = {"calls": 0}

    def proxy(clip) -> float:
        return 0.5 + proxy_step * state["calls"]

    def gold(clip) -> float:
        return 0.5 + gold_step * state["calls"]

    needs = DecodeNeeds(video=True, fps=1.0)
    terms = {
        "proxy": RewardTerm(proxy, midpoint=0.5, needs=needs),
        "gold": RewardTerm(gold, midpoint=0.5, needs=needs, gold=True),
    }
    return Reward(terms, watch_patience=patience), state


def test_the_gold_watch_warns_when_the_reward_rises_and_the_gold_falls(rollouts, tmp_path):
    from avjudge.rewards import RewardHacking

    paths, _ = rollouts
    reward, state = _scripted_reward(+0.01, -0.01, tmp_path)
    fn = flow_grpo_reward(reward)  # through a trainer's adapter: the gold term is logged beside the reward
    with pytest.warns(RewardHacking, match="the gold term 'gold' fell in each of the last 3 logs"):
        for step in range(4):  # the first call has nothing to compare with: three rising logs after it
            state["calls"] = step
            rewards, info = fn(paths[:2], ["p", "p"], [{}, {}])
    assert rewards == pytest.approx([0.53, 0.53]) and list(info["gold"]) == pytest.approx([0.47, 0.47])
    assert len(reward.watch.warned) == 1


def test_the_gold_watch_stays_silent_while_both_rise_and_a_gold_failure_fails_no_sample(rollouts, tmp_path):
    import warnings

    from avjudge.rewards import RewardHacking

    paths, _ = rollouts
    reward, state = _scripted_reward(+0.01, +0.02, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RewardHacking)
        for step in range(8):
            state["calls"] = step
            batch = reward.score([sample(clip_item(p)) for p in paths[:2]])
    assert batch.rewards == pytest.approx([0.57, 0.57]) and reward.watch.warned == []
    with pytest.raises(ConfigError, match="at least one term it optimises"):
        Reward({"g": RewardTerm(lambda c: 0.0, midpoint=0.0, gold=True)})
    broken = Reward({"ok": RewardTerm(lambda c: 1.0, midpoint=0.0),
                     "g": RewardTerm(lambda c: 1 / 0, midpoint=0.0, gold=True)})  # fmt: skip
    assert broken.score([sample(clip_item(paths[0]))]).failed == [False]


def test_a_reward_yaml_names_its_mode_gold_terms_and_patience(tiny_judges, tmp_path):
    from avjudge.rewards import load_reward

    checkpoint = tiny_judges["qwen2_5_omni"]
    (tmp_path / "reward.yaml").write_text(
        f"terms:\n  av: {{judge: av, checkpoint: {checkpoint}}}\n"
        f"  second: {{judge: vt, checkpoint: {checkpoint}, gold: true}}\n"
        "mode: win_rate\nwatch_patience: 2\nworkers: 1\n"
    )
    reward = load_reward(tmp_path / "reward.yaml")
    assert reward.mode == "win_rate" and reward.terms["second"].gold and not reward.terms["av"].gold
    assert reward.watch.patience == 2 and set(reward.preferences) == {"av", "second"}


@pytest.mark.parametrize(
    "line, words",
    [
        ("mode: winrate", "mode is one of pointwise, win_rate, not 'winrate'"),
        ("on_failure: zero", "on_failure"),
        ("watch_patience: 0", "watch_patience must be at least 1"),
        ("batch_size: 0", "batch_size must be at least 1"),
        ("terms: {av: {judge: av, checkpoint: CKPT, weight: 0}}", "weights must sum to a positive number"),
        ("terms: {av: {judge: va, checkpoint: CKPT}}", "'va'"),
        ("terms: {q: {metric: dnsmoss}}", "unknown metric 'dnsmoss'"),
        ("terms: {av: {judge: av, checkpoint: CKPT, aspect: synch}}", "aspect 'synch' is not one of"),
    ],
)
def test_a_reward_yaml_is_refused_naming_the_file_before_a_judge_loads(tmp_path, line, words):
    """The checkpoint does not exist: a value refused before it is looked for (it was after every judge loaded)."""
    from avjudge.config import ConfigError
    from avjudge.rewards import load_reward

    checkpoint = tmp_path / "no_judge"
    terms = f"terms: {{av: {{judge: av, checkpoint: {checkpoint}}}}}\n" if not line.startswith("terms") else ""
    (tmp_path / "reward.yaml").write_text(terms + line.replace("CKPT", str(checkpoint)) + "\n")
    with pytest.raises(ConfigError) as refused:
        load_reward(tmp_path / "reward.yaml")
    message = str(refused.value)
    assert message.startswith(str(tmp_path / "reward.yaml")) and words in message, message


def test_openrlhfs_function_and_flow_factorys_model_give_win_rates_by_prompt(rollouts):
    """OpenRLHF's reward function file and Flow-Factory's pointwise reward model group by prompt as their trainers
    do; each group's win rates are the group's own."""
    import torch

    from avjudge.rewards import FlowFactoryReward
    from avjudge.rewards.adapters import openrlhf_reward_func

    paths, log_odds = rollouts
    prompts = ["p"] * 4 + ["q"] * 4
    expected = [*Preference(tie=1.5).win_rates(NEAR_TIED), *Preference(tie=1.5).win_rates(CLEAR)]
    out = openrlhf_reward_func(_log_odds_reward(log_odds, Counter()))(paths, prompts, None)
    np.testing.assert_allclose(torch.as_tensor(out["rewards"]).numpy(), expected, atol=1e-6)
    model = FlowFactoryReward(_log_odds_reward(log_odds, Counter()))
    np.testing.assert_allclose(model(prompts, video=paths).rewards, expected, atol=1e-12)
