"""``AVReward``, the reward of avjudge 0.1, kept for one release as a `Reward` that warns: a failed clip gets None
(NaN in `ddpo`), as it did."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..config import ConfigError
from ..media import MediaClip
from .inputs import clip_item
from .reward import Reward, RewardTerm, sample

REMOVED_IN = "0.3"


class AVReward(Reward):
    """Deprecated: `avjudge.rewards.Reward` with `avjudge.rewards.adapters` (``trl_reward``, ``flow_grpo_reward``)."""

    def __init__(
        self,
        terms: dict,
        use_delta: bool = False,
        media_key: str = "video",
        text_key: str = "caption",
        utterance_key: str | None = None,
    ):
        warnings.warn(
            f"AVReward is deprecated and goes in avjudge {REMOVED_IN}: use avjudge.rewards.Reward with an adapter of "
            "avjudge.rewards.adapters (trl_reward, flow_grpo_reward)",
            DeprecationWarning,
            stacklevel=2,
        )
        super().__init__(terms, on_failure="none", use_delta=use_delta)
        self.media_key, self.text_key, self.utterance_key = media_key, text_key, utterance_key
        self.__name__ = "avjudge_" + "+".join(self.terms)  # TRL logs reward functions by name

    def score(
        self,
        media: Sequence[str | Path | bytes | MediaClip],
        texts: Sequence[str] | None = None,
        utterances: Sequence[str | None] | None = None,
    ) -> tuple[list[float | None], dict[str, list]]:
        """The combined reward per clip (None where a term failed) and ``{term: values, "errors": [...]}``."""
        samples = [
            sample(clip_item(m), texts[k] if texts is not None else None, utterances[k] if utterances else None)
            for k, m in enumerate(media)
        ]
        batch = super().score(samples)
        return batch.rewards, {**batch.terms, "errors": batch.errors}

    def __call__(self, prompts=None, completions=None, **kwargs) -> list[float | None]:
        media = kwargs.get(self.media_key) or completions
        if media is None:
            raise ValueError(f"no media: pass a {self.media_key!r} column or completions that are file paths")
        utterances = kwargs.get(self.utterance_key) if self.utterance_key else None
        return self.score(list(media), self._texts(prompts, completions, kwargs), utterances)[0]

    def _texts(self, prompts, completions, columns: dict):
        """What ``text_key`` names: the prompts or the completions (as `trl_reward`'s ``text_from``), or a column;
        only the old default, ``caption``, falls back to the prompts where the column is missing."""
        named = {"prompt": prompts, "prompts": prompts, "completion": completions, "completions": completions}
        if self.text_key in named:
            return named[self.text_key]
        if columns.get(self.text_key) is not None:
            return columns[self.text_key]
        if self.text_key == "caption":
            return prompts
        raise ConfigError(
            f"AVReward(text_key={self.text_key!r}): no such column; give prompts, completions or a column"
        )

    def ddpo(self, videos, prompts, metadata=None) -> tuple[np.ndarray, dict]:
        utterances = [m.get("utterance") for m in metadata] if metadata else None
        combined, info = self.score(list(videos), list(prompts) if prompts is not None else None, utterances)
        return np.array([np.nan if c is None else c for c in combined], np.float32), info


__all__ = ["AVReward", "RewardTerm"]
