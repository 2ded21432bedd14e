"""A `Reward` in each RL trainer's own call shape, read from the trainers' code (repository, file and commit named
at each adapter). Each returns the weighted reward and, where the trainer takes extra information, each term's
value and ``failed`` (numbers only: verl averages every key it is given). Each defaults to the failure rule its
trainer can take (`avjudge.rewards.failure`): TRL ``none`` (it leaves the sample out of its group), the others
``neutral``.

Media may be files, their bytes, `MediaClip` s or decoded arrays (`avjudge.rewards.inputs`); frames without their
rate take the adapter's ``fps``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import numpy as np

from ..config import ConfigError
from .failure import OnFailure
from .gather import SampleGatherer
from .inputs import batch_items, clip_item, same_lengths
from .reward import Reward, RewardBatch, sample

TEXT_FROM = ("prompt", "completion")


def failing_as(reward: Reward, on_failure, default):
    return reward.with_failure(default if on_failure is None else on_failure)


def one_sample_a_call(reward: Reward, adapter: str) -> Reward:
    """``reward`` for an adapter its trainer calls one sample at a time: a win rate needs the sample's whole group in
    one call, so a win-rate reward is refused, naming the adapter that batches."""
    if reward.mode == "win_rate":
        raise ConfigError(
            f"{adapter} is called one sample at a time, and a win-rate reward compares a group's samples in one call: "
            "use verl_batch_compute_score (verl's BatchRewardManager), or mode: pointwise"
        )
    return reward


def _message_text(value) -> str | None:
    """A prompt or completion as text: TRL's conversational ones are lists of messages (the last one's content)."""
    if isinstance(value, list) and value and isinstance(value[-1], dict):
        value = value[-1].get("content")
    if isinstance(value, list):  # a message's content parts: their text
        value = " ".join(part.get("text", "") for part in value if isinstance(part, dict))
    return value


# -- TRL ------------------------------------------------------------------------------------------------------------


def trl_reward(
    reward: Reward,
    media_from: str = "video",
    text_from: str = "prompt",
    utterance_from: str | None = None,
    fps: float | None = None,
    on_failure=None,
) -> Callable:
    """TRL's ``GRPOTrainer`` reward function, ``f(prompts, completions, completion_ids, **columns) -> list``
    (huggingface/trl @ v1.16.0, ``trl/trainer/grpo_trainer.py``, ``_calculate_rewards``: every dataset column but the
    prompt comes as a keyword, None becomes NaN and is left out of the group).

    Args:
        media_from: the dataset column of each sample's clip, or ``completions`` where the completions are clips.
        text_from: what a ``vt`` / ``at`` judge checks: ``prompt``, ``completion`` (a captioning or description
            policy: each completion is judged against the clip), or a column's name.
        utterance_from: the column of the spoken line an ``at`` judge checks, if any.
        fps: the rate of frames given as arrays without one.
        on_failure: default ``none``.
    """
    reward = failing_as(reward, on_failure, "none")

    def avjudge_reward(prompts=None, completions=None, completion_ids=None, **columns) -> list[float | None]:
        # a caller may hand any iterable (a generator): each is read once, as a list
        prompts, completions = (None if v is None else list(v) for v in (prompts, completions))
        media = completions if media_from == "completions" else columns.get(media_from)
        if media is None:
            raise ConfigError(f"no clips: the dataset has no {media_from!r} column (media_from=) for the reward")
        texts = {"prompt": prompts, "completion": completions}.get(text_from, columns.get(text_from))
        if text_from not in TEXT_FROM and text_from not in columns:
            raise ConfigError(f"text_from={text_from!r}: give prompt, completion or a column of the dataset")
        utterances = columns.get(utterance_from) if utterance_from else None
        same_lengths(**{media_from: media, "prompts": prompts, text_from: texts, str(utterance_from): utterances})
        samples = [  # a group: the completions of one prompt (TRL's consecutive num_generations)
            sample(clip_item(m, fps), _message_text(texts[k]) if texts else None,
                   utterances[k] if utterances else None, prompts[k] if prompts else None)
            for k, m in enumerate(media)
        ]  # fmt: skip
        batch = reward.score(samples)
        log_metric, log_extra = columns.get("log_metric"), columns.get("log_extra")
        if callable(log_metric):  # TRL logs these beside its own reward columns
            for name, values in batch.columns().items():
                log_metric(f"avjudge/{name}", float(np.mean(values)))
        if callable(log_extra):  # and this in its completions table, one per completion
            log_extra("avjudge_error", [error or "" for error in batch.errors])
        return batch.rewards

    avjudge_reward.__name__ = "avjudge_" + "+".join(reward.terms)  # TRL logs reward functions by name
    return avjudge_reward


# -- verl -----------------------------------------------------------------------------------------------------------


def _verl_sample(solution, ground_truth, extra_info: dict | None, clip_from: str, text_from: str, fps) -> dict:
    extra = extra_info or {}
    clip = solution if clip_from == "solution" else extra.get(clip_from)
    if clip is None:
        raise ConfigError(f"clip_from={clip_from!r}: the sample's extra_info has no {clip_from!r} (give clip_from=)")
    texts = {"solution": solution, "ground_truth": ground_truth}
    text = texts[text_from] if text_from in texts else extra.get(text_from)
    media = clip_item(clip, extra.get("fps", fps), extra.get("audio"), extra.get("audio_sample_rate"))
    return sample(media, text, extra.get("utterance"), _verl_group(extra, ground_truth))


def _verl_group(extra: dict, ground_truth) -> object:
    """The GRPO group of a verl sample (verl groups rollouts by ``uid``, one per dataset row, which it does not hand
    the reward function): ``extra_info``'s ``uid``, else the row's ``index`` (verl's data recipes write it), else the
    prompt, else the ground truth."""
    for key in ("uid", "index", "prompt"):
        if extra.get(key) is not None:
            return extra[key]
    return ground_truth


def _verl_dict(batch: RewardBatch, k: int) -> dict:
    return {"score": batch.rewards[k], **batch.info(k)}


def verl_compute_score(
    reward: Reward,
    clip_from: str = "solution",
    text_from: str = "prompt",
    fps: float | None = None,
    on_failure=None,
) -> Callable:
    """verl's per-sample custom reward, ``compute_score(data_source, solution_str, ground_truth, extra_info) ->
    {"score", ...}`` (volcengine/verl @ v0.9.1, ``verl/workers/reward_manager/naive.py``; every key but ``score`` is
    kept per sample and averaged by ``process_validation_metrics``, so all are numbers). verl's reward loop calls it
    from several threads at once; the reward scores one call at a time, so there `verl_async_compute_score`, which
    batches the samples, is faster.

    Args:
        clip_from: ``solution`` (the response is the clip's path) or an ``extra_info`` key holding the clip (a path,
            bytes or arrays; ``extra_info["audio"]`` and ``["audio_sample_rate"]`` join frames given apart).
        text_from: ``prompt`` (``extra_info["prompt"]``), ``solution`` (a captioning policy's response),
            ``ground_truth``, or another ``extra_info`` key.
        fps: the rate of frames given as arrays without one (``extra_info["fps"]`` wins).
        on_failure: default ``neutral``.
    """
    reward = one_sample_a_call(failing_as(reward, on_failure, "neutral"), "verl_compute_score")

    def compute_score(data_source=None, solution_str=None, ground_truth=None, extra_info=None, **_) -> dict:
        batch = reward.score([_verl_sample(solution_str, ground_truth, extra_info, clip_from, text_from, fps)])
        return _verl_dict(batch, 0)

    return compute_score


def verl_batch_compute_score(
    reward: Reward,
    clip_from: str = "solution",
    text_from: str = "prompt",
    fps: float | None = None,
    on_failure=None,
) -> Callable:
    """verl's batch reward manager's function, ``compute_score(data_sources, solution_strs, ground_truths,
    extra_infos, **reward_kwargs) -> [{"score", ...}]`` (volcengine/verl @ v0.9.1,
    ``verl/workers/reward_manager/batch.py``): the whole batch scored together. Options as `verl_compute_score`."""
    reward = failing_as(reward, on_failure, "neutral")

    def compute_score(data_sources=None, solution_strs=(), ground_truths=None, extra_infos=None, **_) -> list[dict]:
        n = len(solution_strs)  # verl hands some of these as numpy object arrays: never ask them for truth
        truths = list(ground_truths) if ground_truths is not None else [None] * n
        extras = list(extra_infos) if extra_infos is not None else [None] * n
        same_lengths(solution_strs=solution_strs, ground_truths=truths, extra_infos=extras)
        samples = [_verl_sample(s, g, e, clip_from, text_from, fps) for s, g, e in zip(solution_strs, truths, extras)]
        batch = reward.score(samples)
        return [_verl_dict(batch, k) for k in range(n)]

    return compute_score


def verl_async_compute_score(
    reward: Reward,
    clip_from: str = "solution",
    text_from: str = "prompt",
    fps: float | None = None,
    on_failure=None,
    max_batch_size: int = 16,
    max_wait_ms: float = 20.0,
) -> Callable:
    """`verl_compute_score` as a coroutine function, for verl's reward loop (volcengine/verl @ v0.9.1,
    ``verl/experimental/reward_loop/reward_manager/naive.py``, ``run_single``: it awaits a coroutine ``compute_score``
    for every sample of the rollout at once). The samples awaiting together are scored as batches of up to
    ``max_batch_size`` (`avjudge.rewards.gather`), so the judge's forward passes are batched as the legacy batch
    manager's were. Options as `verl_compute_score`."""
    reward = one_sample_a_call(failing_as(reward, on_failure, "neutral"), "verl_async_compute_score")
    gatherer = SampleGatherer(reward, _verl_dict, max_batch_size, max_wait_ms)

    async def compute_score(data_source=None, solution_str=None, ground_truth=None, extra_info=None, **_) -> dict:
        return await gatherer.score(_verl_sample(solution_str, ground_truth, extra_info, clip_from, text_from, fps))

    return compute_score


def verl_omni_compute_score(reward: Reward, fps: float | None = None, on_failure=None) -> Callable:
    """verl-omni's reward for generated media, ``compute_score(data_source, solution_image, ground_truth,
    extra_info)`` (verl-project/verl-omni, ``tests/reward_loop/test_generated_media.py``): the generated video as a
    uint8 tensor (T, C, H, W), its audio in ``extra_info["audio"]`` ((C, N)) at ``extra_info["audio_sample_rate"]``,
    the prompt as the ground truth. ``fps``: the video's rate (``extra_info["fps"]`` wins)."""
    reward = one_sample_a_call(failing_as(reward, on_failure, "neutral"), "verl_omni_compute_score")

    def compute_score(data_source=None, solution_image=None, ground_truth=None, extra_info=None, **_) -> dict:
        extra = extra_info or {}
        media = clip_item(solution_image, extra.get("fps", fps), extra.get("audio"), extra.get("audio_sample_rate"))
        group = _verl_group(extra, ground_truth)
        return _verl_dict(reward.score([sample(media, ground_truth, extra.get("utterance"), group)]), 0)

    return compute_score


# -- OpenRLHF ---------------------------------------------------------------------------------------------------------


def query_fields(query: str, prompt: str | None, label, clip_from: str, text_from: str) -> tuple:
    """The clip and the text of one OpenRLHF query: ``clip_from`` ``label`` (the dataset's label is the clip), ``query``
    (the response is a clip's path) or ``prompt_json`` (the prompt is a JSON object with ``video`` and ``text``);
    ``text_from`` ``response`` (the query minus its prompt: what the policy wrote), ``prompt``
    or ``label``."""
    response = query[len(prompt) :] if prompt and query.startswith(prompt) else query
    fields = {}
    if clip_from == "prompt_json":
        try:
            fields = json.loads(prompt or "")
        except ValueError as err:
            raise ValueError(f"the prompt is not a JSON object of video and text ({err})") from None
        if not isinstance(fields, dict):
            raise ValueError("the prompt is not a JSON object of video and text")
    clips = {"label": label, "query": response.strip(), "prompt_json": fields.get("video")}
    texts = {"response": response.strip(), "prompt": fields.get("text", prompt), "label": label}
    if clip_from not in clips or text_from not in texts:
        raise ConfigError(
            f"clip_from={clip_from!r}, text_from={text_from!r}: the clip comes from label, query or prompt_json, "
            "the text from response, prompt or label"
        )
    return clips[clip_from], texts[text_from]


def openrlhf_rewards(
    reward: Reward,
    queries: Sequence[str],
    prompts=None,
    labels=None,
    clip_from: str = "query",
    text_from: str = "prompt",
) -> RewardBatch:
    """The rewards of OpenRLHF's queries (with their prompts and labels, as it sends them): each query's clip and
    text by `query_fields`; a query that names no clip fails alone. `openrlhf_reward_func` and the reward server's
    ``/get_reward`` both answer with it."""
    samples = []
    for k, query in enumerate(queries):
        prompt = prompts[k] if prompts else None
        try:
            clip, text = query_fields(query, prompt, labels[k] if labels else None, clip_from, text_from)
            samples.append(sample(clip_item(clip), text, group=prompt))  # a group: one prompt's samples
        except (ValueError, TypeError) as err:  # a query that names no clip: that sample fails alone
            samples.append(sample({"error": f"query {k}: {err}"}))
    return reward.score(samples)


def openrlhf_failure_rule(on_failure, name: str = "on_failure") -> OnFailure:
    """``on_failure`` as a rule OpenRLHF can take: it makes a tensor of every reward, so ``none`` and ``nan`` (and
    what is no rule at all) are refused.

    Raises:
        ConfigError: naming ``name`` (the option it came from) and the value.
    """
    try:
        rule = OnFailure(on_failure)
    except ConfigError:
        rule = None
    if rule is None or rule.rule in ("none", "nan"):
        raise ConfigError(
            f"{name} {on_failure!r}: give neutral or a finite number (OpenRLHF makes a tensor of every reward)"
        )
    return rule


def openrlhf_failing_as(reward: Reward, on_failure=None) -> Reward:
    """``reward`` under the failure rule OpenRLHF can take (default ``neutral``, `openrlhf_failure_rule`)."""
    return failing_as(reward, openrlhf_failure_rule("neutral" if on_failure is None else on_failure).rule, "neutral")


def openrlhf_reward_func(
    reward: Reward, clip_from: str = "query", text_from: str = "prompt", on_failure=None
) -> Callable:
    """OpenRLHF's ``--reward.remote_url`` Python file, ``reward_func(queries, prompts, labels, **kw) ->
    {"rewards", "scores", "extra_logs"}`` of tensors (OpenRLHF @ v0.11.2, ``openrlhf/utils/agent.py``,
    ``_fetch_rewards_via_func``; ``samples_generator.py`` makes ``torch.tensor([reward])`` of each). Options as
    `query_fields`; default ``neutral``."""
    reward = openrlhf_failing_as(reward, on_failure)

    def reward_func(queries: Sequence[str], prompts=None, labels=None, **_) -> dict:
        import torch

        batch = openrlhf_rewards(reward, queries, prompts, labels, clip_from, text_from)
        rewards = torch.tensor([float(r) for r in batch.rewards])
        logs = {name: torch.tensor(values, dtype=torch.float32) for name, values in batch.columns().items()}
        return {"rewards": rewards, "scores": rewards, "extra_logs": logs}

    return reward_func


# -- Flow-GRPO and Flow-Factory ------------------------------------------------------------------------------------


def flow_grpo_reward(reward: Reward, fps: float | None = None, on_failure=None) -> Callable:
    """A Flow-GRPO score function, ``fn(videos, prompts, metadata) -> (scores, info)``: register it in
    ``multi_score``'s table and name it in ``config.reward_fn`` (yifan123/flow_grpo @ ac4c86e8,
    ``flow_grpo/rewards.py``: each score function's scores are weighted into ``"avg"``, which
    ``scripts/train_sd3.py`` turns into a tensor and ``flow_grpo/stat_tracking.py`` normalises per prompt).
    ``videos`` a list of clips or a batched array (frames (B, T, C, H, W) or (B, T, H, W, C) in [0, 1], or uint8);
    ``metadata`` per-sample dicts that may hold ``audio``, ``audio_sample_rate`` and ``utterance``. Scores a float32
    array (a failed clip neutral by default: Flow-GRPO has no way to skip a sample), info each term's array and
    ``failed``."""
    reward = failing_as(reward, on_failure, "neutral")

    def reward_fn(videos, prompts=None, metadata=None, **_):
        meta = [m or {} for m in metadata] if metadata is not None else None  # a None entry: nothing to add
        audio = [m.get("audio") for m in meta] if meta and any(m.get("audio") is not None for m in meta) else None
        items = batch_items(videos, fps, audio, [m.get("audio_sample_rate") for m in meta] if meta else None)
        same_lengths(videos=items, prompts=prompts, metadata=meta)
        meta = meta or [{}] * len(items)
        texts = list(prompts) if prompts is not None else [None] * len(items)
        batch = reward.score([sample(i, t, m.get("utterance"), t) for i, t, m in zip(items, texts, meta)])
        info = {name: np.asarray(values, np.float32) for name, values in batch.columns().items()}
        return np.asarray(batch.rewards, np.float32), info

    return reward_fn
