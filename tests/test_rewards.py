"""Rewards RL trainers use unchanged (`avjudge.rewards`): the failure rules, clips in memory scoring as their files in
process and through the server, and every trainer's call shape with one clip failing among good ones: only finite
numbers reach the trainer, the failure flagged."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from avjudge.config import ConfigError
from avjudge.media import DecodeNeeds, decode, from_arrays
from avjudge.rewards import (
    FlowFactoryReward,
    Reward,
    RewardTerm,
    clip_item,
    flow_grpo_reward,
    openrlhf_reward_func,
    sample,
    trl_reward,
    verl_batch_compute_score,
    verl_compute_score,
    verl_omni_compute_score,
)
from avjudge.serve.app import ServerSettings, create_app
from avjudge.serve.client import RewardClient
from avjudge.serve.service import ScoreService

from .helpers import live_app

# ---- the failure rules ---------------------------------------------------------------------------------------------


def _clip(level: int):
    return from_arrays(np.full((2, 8, 8, 3), level, np.uint8), 2.0)


def _bright(clip) -> float:
    if clip.frames.mean() > 200:
        raise ValueError("too bright to judge")
    return float(clip.frames.mean())


def test_a_failed_sample_gets_what_the_rule_says_and_is_always_flagged():
    term = RewardTerm(_bright, midpoint=50.0, aspect="video")
    reward = Reward({"bright": term})
    samples = [sample({"media": _clip(v)}) for v in (10, 30, 250)]
    batch = reward.score(samples)
    assert batch.rewards == [10.0, 30.0, 20.0]  # neutral: the call's good values' mean
    assert batch.failed == [False, False, True] and "too bright" in batch.errors[2]
    assert batch.info(2) == {"bright": 20.0, "failed": 1.0} and reward.aspects == {"bright": "video"}
    assert reward.score([samples[2]]).rewards == [20.0]  # a call of failures alone: the running mean
    fresh = Reward({"bright": term})
    assert fresh.score([samples[2]]).rewards == [50.0]  # nothing good seen yet: the midpoint
    for rule, expected in (("none", None), (-1, -1.0)):
        assert reward.with_failure(rule).score(samples).rewards == [10.0, 30.0, expected]
    assert math.isnan(reward.with_failure("nan").score(samples).rewards[2])
    assert reward.with_failure("none").score(samples).columns()["bright"] == [10.0, 30.0, 20.0]  # info: numbers
    with pytest.raises(ConfigError, match="no midpoint"):
        Reward({"f": _bright})
    with pytest.raises(ConfigError, match="neutral, none, nan or a number"):
        Reward({"bright": term}, on_failure="zero")
    with pytest.raises(ConfigError, match="aspect"):
        Reward({"bright": RewardTerm(_bright, midpoint=0.0, aspect="smell")})


# ---- judges in process and through the server ------------------------------------------------------------------------


@pytest.fixture
def judges(av_vt_judges):
    return av_vt_judges


@pytest.fixture
def world(world_records):
    return world_records


def _arrays(path: str) -> dict:
    """A clip as a trainer holds it: float frames (T, 3, H, W) in [0, 1] and a stereo waveform with their rates."""
    clip = decode(path)
    frames = clip.frames.transpose(0, 3, 1, 2).astype(np.float32) / 255.0
    return {
        "frames": frames,
        "fps": clip.fps,
        "audio": np.vstack([clip.audio, clip.audio]),
        "sample_rate": clip.sample_rate,
    }


def _per_prompt_advantages(prompts: list[str], rewards: np.ndarray) -> np.ndarray:
    """Flow-GRPO's GRPO advantage (flow_grpo @ ac4c86e8, flow_grpo/stat_tracking.py, PerPromptStatTracker.update):
    each reward less its prompt's mean, over its prompt's standard deviation plus 1e-4."""
    prompts, advantages = np.asarray(prompts), np.empty_like(rewards, dtype=np.float64)
    for prompt in np.unique(prompts):
        group = rewards[prompts == prompt]
        advantages[prompts == prompt] = (group - group.mean()) / (group.std() + 1e-4)
    return advantages


def _same_length(arrays: list[dict]) -> list[dict]:
    frames = min(len(a["frames"]) for a in arrays)
    samples = int(round(frames / arrays[0]["fps"] * arrays[0]["sample_rate"]))
    return [{**a, "frames": a["frames"][:frames], "audio": a["audio"][:, :samples]} for a in arrays]


def test_a_clip_in_memory_scores_as_its_file_in_process_and_through_the_server(judges, world):
    path, caption = world[0]["video"], world[0]["captions"]["video"]
    clip = decode(path)
    stereo = np.vstack([clip.audio, clip.audio])
    inputs = [path, open(path, "rb").read(), {"frames": clip.frames, "fps": clip.fps, "audio": stereo,
                                               "sample_rate": clip.sample_rate}]  # fmt: skip
    local = Reward({"av": judges["av"], "vt": RewardTerm(judges["vt"], 0.5)})
    samples = [sample(clip_item(m), caption) for m in inputs]
    expected = local.score(samples)
    assert not any(expected.failed) and expected.rewards[1] == pytest.approx(expected.rewards[0], abs=1e-6)
    assert expected.rewards[2] == pytest.approx(expected.rewards[0], abs=1e-6)
    av = judges["av"].score([path])[0].score
    assert expected.terms["av"][0] == pytest.approx(av, abs=1e-6)
    service = ScoreService(judges)
    with live_app(create_app(service)) as url:
        for server in (service, RewardClient(url)):  # the server's scoring in this process, and over HTTP
            served = Reward.served(server, {"av": 1.0, "vt": RewardTerm("vt", 0.5)})
            batch = served.score(samples)
            assert batch.rewards == pytest.approx(expected.rewards, abs=1e-6), server
            for name, values in expected.terms.items():
                assert batch.terms[name] == pytest.approx(values, abs=1e-6), (server, name)
            assert served.aspects == {"av": "sync", "vt": "video-text"}


@pytest.mark.parametrize("where", ["in_process", "served"])
def test_every_trainer_shape_gets_finite_numbers_with_one_clip_failing(judges, world, corrupt, where):
    import torch

    videos = [c["video"] for c in world[:2]]
    captions = [c["captions"]["video"] for c in world[:2]]
    if where == "served":
        reward = Reward.served(ScoreService(judges), {"av": 1.0})
    else:
        reward = Reward({"av": judges["av"]})
    scores = [r.score for r in judges["av"].score(videos)]
    neutral = float(np.mean(scores))

    # TRL: None for the failed clip (GRPOTrainer leaves it out of its group), named after the reward's terms
    trl = trl_reward(reward)
    assert trl.__name__ == "avjudge_av"
    out = trl(prompts=["p", "q", "r"], completions=["a", "b", "c"], video=[*videos, corrupt])
    assert out[:2] == pytest.approx(scores, abs=1e-6) and out[2] is None

    # verl, per sample and batch: dicts of numbers only, the failure neutral and flagged
    verl = verl_compute_score(reward)
    assert verl("world", videos[0], None, {"prompt": "p"})["score"] == pytest.approx(scores[0], abs=1e-6)
    failed = verl("world", corrupt, None, {"prompt": "p"})
    assert failed["failed"] == 1.0 and math.isfinite(failed["score"])
    rows = verl_batch_compute_score(reward)(["w"] * 3, [*videos, corrupt], [None] * 3, [{}] * 3)
    assert [r["failed"] for r in rows] == [0.0, 0.0, 1.0] and rows[2]["score"] == pytest.approx(neutral, abs=1e-6)
    assert all(isinstance(v, float) and math.isfinite(v) for r in rows for v in r.values())

    # OpenRLHF's .py reward function: tensors it can cat, the failure in extra_logs
    orl = openrlhf_reward_func(reward)([f"q {v}" for v in [*videos, corrupt]], ["q "] * 3, [None] * 3)
    assert orl["rewards"].tolist() == pytest.approx([*scores, neutral], abs=1e-6)
    assert orl["extra_logs"]["failed"].tolist() == [0.0, 0.0, 1.0]

    # Flow-GRPO: (float32 scores, info arrays), batched frames in [0, 1] (B, T, C, H, W) with audio in metadata;
    # a rollout's clips share one length, so the world's clips are cut to the shortest
    arrays = _same_length([_arrays(v) for v in videos])
    in_memory = reward.score([sample(clip_item(a)) for a in arrays]).rewards
    batch = np.stack([a["frames"] for a in arrays])
    meta = [{"audio": a["audio"], "audio_sample_rate": a["sample_rate"]} for a in arrays]
    scored, info = flow_grpo_reward(reward, fps=arrays[0]["fps"])(batch, captions, meta)
    assert scored.dtype == np.float32 and np.isfinite(scored).all() and not info["failed"].any()
    assert scored.tolist() == pytest.approx(in_memory, abs=1e-5)
    # Flow-GRPO's advantage step with a sample whose audio never came: the weighted "avg" of multi_score, made a
    # tensor, normalised per prompt (flow_grpo @ ac4c86e8, flow_grpo/rewards.py, scripts/train_sd3.py,
    # flow_grpo/stat_tracking.py); finite, where a NaN would spread to its whole group
    group = np.stack([batch[0], batch[1], batch[0]])
    for rule, finite in (("neutral", True), ("nan", False)):
        fn = flow_grpo_reward(reward, fps=arrays[0]["fps"], on_failure=rule)
        scored, info = fn(group, ["p"] * 3, [*meta, {"audio": None}])
        assert info["failed"].tolist() == [0.0, 0.0, 1.0]
        avg = torch.as_tensor(2.0 * scored).float().numpy()
        assert np.isfinite(_per_prompt_advantages(["p"] * 3, avg)).all() == finite

    # verl-omni: a uint8 (T, C, H, W) video, its audio in extra_info
    omni = verl_omni_compute_score(reward, fps=arrays[0]["fps"])
    uint8 = (arrays[0]["frames"] * 255).round().astype(np.uint8)
    extra = {"audio": arrays[0]["audio"], "audio_sample_rate": arrays[0]["sample_rate"]}
    assert omni("w", uint8, captions[0], extra)["score"] == pytest.approx(in_memory[0], abs=1e-5)
    broken = omni("w", uint8, captions[0], {"audio": None})  # no audio for the AV judge: failed, neutral
    assert broken["failed"] == 1.0 and math.isfinite(broken["score"])

    # Flow-Factory: a pointwise reward model over lists of (T, C, H, W) frames and (C, N) waveforms
    model = FlowFactoryReward(reward, fps=arrays[0]["fps"])
    output = model(captions, video=[a["frames"] for a in arrays], audio=[a["audio"] for a in arrays],
                   audio_sample_rate=[a["sample_rate"] for a in arrays])  # fmt: skip
    assert output.rewards == pytest.approx(in_memory, abs=1e-5) and output.extra_info["failed"] == [0.0, 0.0]
    # a sample whose arrays are not a clip fails alone, as an unreadable file does
    malformed = model(captions, video=[a["frames"] for a in arrays], audio=[arrays[0]["audio"], np.zeros((2, 1, 5))],
                      audio_sample_rate=[a["sample_rate"] for a in arrays])  # fmt: skip
    assert malformed.extra_info["failed"] == [0.0, 1.0] and malformed.rewards[0] == pytest.approx(in_memory[0])


def test_a_function_reads_what_it_says_and_a_term_on_text_reads_the_completion(judges, world):
    """TRL for a captioning policy: text_from="completion" judges each completion against the clip, so the rewards
    of one group differ."""
    video = world[0]["video"]
    reward = Reward({"vt": judges["vt"], "loud": RewardTerm(lambda c: float(np.abs(c.audio).max()), 0.1,
                                                            midpoint=0.5, needs=DecodeNeeds(audio=True))})  # fmt: skip
    completions = ["a red circle moves left", "a blue square stays still", "music plays"]
    out = trl_reward(reward, text_from="completion")(prompts=["describe"] * 3, completions=completions,
                                                      video=[video] * 3)  # fmt: skip
    assert len(set(out)) == 3
    vt = [r.score for r in judges["vt"].score([video] * 3, completions)]
    loud = float(np.abs(decode(video, video=False).audio).max())
    assert out == pytest.approx([(s + 0.1 * loud) / 1.1 for s in vt], abs=1e-5)


def test_openrlhf_reaches_a_protected_server_through_its_url_and_1025_queries_in_one_request(judges, world, tmp_path):
    """OpenRLHF's client sends no header: the token rides in the URL. Its 0.9 experience maker sends a whole rollout
    batch in one request, here 1,025 queries against the default queue of 1,024: answered, every reward a number.
    Both of OpenRLHF's call shapes then make their tensors."""
    import urllib.request

    import torch

    videos = [c["video"] for c in world]
    missing = str(tmp_path / "never_rendered.mp4")  # the rollouts that failed to write their clip
    clips = videos + [missing] * (1025 - len(videos))
    settings = ServerSettings(token="s3cret", reward_judge="av")
    with live_app(create_app(ScoreService({"av": judges["av"]}), settings)) as url:
        body = json.dumps({"query": [f"q {c}" for c in clips], "prompts": ["q "] * 1025}).encode()
        request = urllib.request.Request(f"{url}/t/s3cret/get_reward", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=300) as response:
            answer = json.loads(response.read())
    assert answer["extra_logs"]["failed"] == [0.0] * len(videos) + [1.0] * (1025 - len(videos))
    # OpenRLHF 0.9, openrlhf/trainer/ppo_utils/experience_maker.py: torch.cat([torch.as_tensor(info["rewards"])]);
    # v0.11.2, openrlhf/trainer/ppo_utils/samples_generator.py: torch.tensor([reward]) of each query's answer
    rewards = torch.cat([torch.as_tensor(answer["rewards"])])
    each = torch.cat([torch.tensor([r]) for r in answer["rewards"]])
    assert rewards.shape == (1025,) and torch.isfinite(rewards).all() and torch.equal(rewards, each)
    expected = [r.score for r in judges["av"].score(videos)]
    assert rewards[: len(videos)].tolist() == pytest.approx(expected, abs=1e-6)
    assert rewards[len(videos) :].tolist() == pytest.approx([float(np.mean(expected))] * (1025 - len(videos)))


def test_the_deprecated_server_adapters_warn_and_give_the_new_adapters_numbers(judges, world, corrupt):
    import sys

    sys.modules.pop("avjudge.serve.adapters", None)
    with pytest.warns(DeprecationWarning, match="avjudge.rewards.adapters"):
        from avjudge.serve import adapters as old
    videos = [c["video"] for c in world[:2]]
    service = ScoreService({"av": judges["av"]})
    new = trl_reward(Reward.served(service, {"av": 1.0}), media_from="completions")
    expected = new(prompts=["p"] * 2, completions=videos)
    assert old.trl_reward(service, "av")(prompts=["p"] * 2, completions=videos) == expected  # clips as completions
    assert old.trl_reward(service, "av")(prompts=["p"] * 2, completions=["", ""], video=videos) == expected
    assert old.verl_compute_score(service, "av")("w", corrupt, None, {})["failed"] == 1.0


def test_a_relative_path_through_a_served_reward_scores_the_users_file(judges, world, monkeypatch):
    """The client sends a path as the absolute path of the caller's file (a server refuses a relative one, which it
    would read from its own folder)."""
    path = world[0]["video"]
    expected = Reward({"av": judges["av"]}).score([sample(clip_item(path))]).rewards
    monkeypatch.chdir(Path(path).parent)
    with live_app(create_app(ScoreService({"av": judges["av"]}))) as url:
        batch = Reward.served(RewardClient(url), {"av": 1.0}).score([sample(clip_item(Path(path).name))])
    assert batch.failed == [False] and batch.rewards == pytest.approx(expected, abs=1e-6)


def test_flow_factorys_own_loader_and_processor_steps_build_and_call_the_reward(judges, world, tmp_path):
    """Flow-Factory is not on the package registry: its steps are reproduced as its code writes them
    (X-GenGroup/Flow-Factory @ 5f6cda1a: rewards/registry.py get_reward_model_class, rewards/loader.py
    load_reward_model, hparams/reward_args.py RewardArguments, rewards/reward_processor.py
    _resolve_batch_size / _compute_pointwise_batch)."""
    import dataclasses
    import importlib
    import inspect

    import torch

    checkpoint = judges["av"].adapter.checkpoint
    (tmp_path / "reward.yaml").write_text(f"terms:\n  av: {{judge: av, checkpoint: {checkpoint}}}\ndevice: cpu\n")

    @dataclasses.dataclass
    class RewardArguments:  # its fields; unknown keys of the YAML land in extra_kwargs (ArgABC)
        name: str = "default"
        reward_model: str | None = None
        weight: float = 1.0
        dtype: object = torch.float32
        device: object = torch.device("cpu")
        batch_size: int = 16
        extra_kwargs: dict = dataclasses.field(default_factory=dict)

    arrays = _same_length([_arrays(c["video"]) for c in world[:2]])
    config = RewardArguments(reward_model="avjudge.rewards.FlowFactoryReward", batch_size=2,
                             extra_kwargs={"reward": str(tmp_path / "reward.yaml"), "fps": arrays[0]["fps"],
                                           "sample_rate": arrays[0]["sample_rate"]})  # fmt: skip
    # get_reward_model_class: a dotted path imported as is; load_reward_model: cls(config=..., accelerator=...)
    module_path, class_name = config.reward_model.rsplit(".", 1)
    model = getattr(importlib.import_module(module_path), class_name)(config=config, accelerator=object())
    # the processor: the batch size from the model's config, the sample fields __call__ names, a tensor of rewards
    assert model.config.batch_size == 2 and model.use_tensor_inputs
    sample_fields = {"prompt": "a clip", "video": None, "audio": None, "image": None, "condition_images": None}
    named = set(inspect.signature(model.__call__).parameters) & set(sample_fields)
    assert named == {"prompt", "video", "audio"}
    captions = [c["captions"]["video"] for c in world[:2]]
    batch = {"prompt": captions, "video": [torch.from_numpy(a["frames"]) for a in arrays],
             "audio": [torch.from_numpy(a["audio"]) for a in arrays]}  # fmt: skip
    output = model(**batch)
    rewards = torch.as_tensor(output.rewards if hasattr(output, "rewards") else output, dtype=torch.float32)
    in_memory = Reward({"av": judges["av"]}).score([sample(clip_item(a)) for a in arrays]).rewards
    assert rewards.tolist() == pytest.approx(in_memory, abs=1e-5) and output.extra_info["failed"] == [0.0, 0.0]
    with pytest.raises(ConfigError, match="reward: FILE"):
        getattr(importlib.import_module(module_path), class_name)(config=RewardArguments(), accelerator=None)
