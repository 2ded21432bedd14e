"""Rewards in each RL trainer's own shape, from the reward server (a `client.RewardClient`) or from judges loaded in
the trainer's process (a `service.ScoreService`): anything with ``score_records(items) -> results``.

Generated clips are files (the trainer writes each sample before rewarding it); the text a ``vt`` / ``at`` judge
checks is the prompt. A clip that cannot be scored is never given a reward of 0: TRL gets None (it leaves the
sample out of its group's baseline), the others NaN, with the error beside it.

- TRL ``GRPOTrainer``: ``reward_funcs=[trl_reward(scorer, "av")]``.
- verl: ``compute_score = verl_compute_score(scorer, "av")`` (``solution_str``: the clip; ``ground_truth`` or
  ``extra_info["prompt"]``: the text).
- OpenRLHF, a ``.py`` reward function: ``reward_func = openrlhf_reward_func(scorer, "av")``; or point
  ``--reward.remote_url`` at the server's ``/get_reward``.
- Flow-GRPO / DDPO: ``fn = flow_grpo_reward(scorer, "av")``, ``fn(videos, prompts, metadata) -> (scores, info)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol


class Scorer(Protocol):
    def score_records(self, records: Sequence[dict]) -> list[dict]: ...


def _items(judge: str, clips: Sequence, texts: Sequence | None) -> list[dict]:
    return [
        {"id": str(k), "judge": judge, "video": str(clip), "text": None if texts is None else texts[k]}
        for k, clip in enumerate(clips)
    ]


def _rewards(scorer: Scorer, judge: str, clips: Sequence, texts: Sequence | None, use_delta: bool) -> list[dict]:
    results = scorer.score_records(_items(judge, clips, texts))
    for r in results:
        r["reward"] = None if r["error"] else (r["delta"] if use_delta else r["score"])
    return results


def trl_reward(scorer: Scorer, judge: str, media_key: str = "video", use_delta: bool = False) -> Callable:
    """TRL: ``f(prompts, completions, **columns) -> list[float | None]``; clips from the ``media_key`` column, else
    the completions (paths), texts from the prompts."""

    def reward(prompts=None, completions=None, **columns) -> list[float | None]:
        clips = columns.get(media_key) or completions
        if clips is None:
            raise ValueError(f"no clips: give a {media_key!r} column or completions that are file paths")
        return [r["reward"] for r in _rewards(scorer, judge, list(clips), prompts, use_delta)]

    reward.__name__ = f"avjudge_{judge}"  # TRL logs reward functions by name
    return reward


def verl_compute_score(scorer: Scorer, judge: str, use_delta: bool = False) -> Callable:
    """verl: ``compute_score(data_source, solution_str, ground_truth, extra_info=None) -> {"score", ...}``."""

    def compute_score(data_source, solution_str, ground_truth=None, extra_info=None, **_) -> dict:
        text = (extra_info or {}).get("prompt", ground_truth)
        (r,) = _rewards(scorer, judge, [solution_str], [text], use_delta)
        return {"score": math.nan if r["reward"] is None else r["reward"], "p_yes": r["p_yes"], "error": r["error"]}

    return compute_score


def openrlhf_reward_func(scorer: Scorer, judge: str, use_delta: bool = False) -> Callable:
    """OpenRLHF's file mode: ``reward_func(queries, prompts, labels, **kw) -> {"rewards", "scores", "extra_logs"}``
    (tensors); each query is the generated clip's path."""

    def reward_func(queries, prompts=None, labels=None, **_) -> dict:
        import torch

        results = _rewards(scorer, judge, list(queries), list(prompts) if prompts else None, use_delta)
        rewards = torch.tensor([math.nan if r["reward"] is None else r["reward"] for r in results])
        failed = torch.tensor([float(r["error"] is not None) for r in results])
        return {"rewards": rewards, "scores": rewards, "extra_logs": {"failed": failed}}

    return reward_func


def flow_grpo_reward(scorer: Scorer, judge: str, use_delta: bool = False) -> Callable:
    """Flow-GRPO / DDPO: ``fn(videos, prompts, metadata) -> (scores, info)``, scores a float32 array (NaN where a
    clip failed), info the per-clip probabilities and errors."""

    def reward_fn(videos, prompts=None, metadata=None, **_):
        import numpy as np

        results = _rewards(scorer, judge, list(videos), list(prompts) if prompts is not None else None, use_delta)
        scores = np.array([np.nan if r["reward"] is None else r["reward"] for r in results], np.float32)
        return scores, {"p_yes": [r["p_yes"] for r in results], "errors": [r["error"] for r in results]}

    return reward_fn
