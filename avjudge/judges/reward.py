"""Judges (and any clip metric) as rewards for RLHF of audio-video generators.

``AVReward`` decodes each generated clip once, scores it with every term and returns the
weighted mean. Terms are judges or plain callables ``metric(clip) -> float``. With
``use_delta`` a judge contributes delta = log P(Yes) - log P(No), which keeps a useful
slope where the probability saturates. A clip that fails gets ``None`` (TRL treats it as
missing), never 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence, Union

import numpy as np

from ..media import MediaClip, MediaError, decode
from .judge import Judge

Metric = Callable[[MediaClip], float]


@dataclass
class RewardTerm:
    """One term of a reward: a judge, or a callable ``metric(clip) -> float``, and its weight."""

    scorer: Union[Judge, Metric]
    weight: float = 1.0


class AVReward:
    """A reward for RL fine-tuning of audio-video generators: the weighted mean of judges and clip metrics.

    Each clip is decoded once for every term. Call it as a TRL ``GRPOTrainer`` reward function, or use `ddpo`
    for DDPO / Flow-GRPO trainers.

    Args:
        terms: name -> a `RewardTerm`, a `Judge` or a callable ``metric(clip) -> float`` (weight 1).
        use_delta: judges contribute delta = log P(Yes) - log P(No) instead of S, which keeps a slope where S
            saturates.
        media_key: the dataset column holding each clip's file (else the completions are the files).
        text_key: the column holding the text a ``vt`` / ``at`` judge checks (else the prompts).
        utterance_key: the column holding the spoken line an ``at`` judge checks, if any.

    Example:
        ```python
        reward = AVReward({"av": RewardTerm(Judge.load("av", "runs/av/final"), 2.0),
                           "vt": Judge.load("vt", "runs/vt/final")}, text_key="caption")
        trainer = GRPOTrainer(..., reward_funcs=[reward])
        ```
    """

    def __init__(
        self,
        terms: dict[str, RewardTerm | Judge | Metric],
        use_delta: bool = False,
        media_key: str = "video",
        text_key: str = "caption",
        utterance_key: str | None = None,
    ):
        if not terms:
            raise ValueError("a reward needs at least one term")
        self.terms = {name: t if isinstance(t, RewardTerm) else RewardTerm(t) for name, t in terms.items()}
        if sum(t.weight for t in self.terms.values()) <= 0:
            raise ValueError("term weights must sum to a positive number")
        self.use_delta = use_delta
        self.media_key, self.text_key, self.utterance_key = media_key, text_key, utterance_key
        self.__name__ = "avjudge_" + "+".join(self.terms)  # TRL logs reward functions by name

    def _judges(self):
        return [t.scorer for t in self.terms.values() if isinstance(t.scorer, Judge)]

    def _decode(self, item: str | Path | MediaClip) -> MediaClip:
        if isinstance(item, MediaClip):
            return item
        judges = self._judges()
        need_video = not judges or any(j.task.needs_video for j in judges)
        need_audio = any(j.task.needs_audio for j in judges)
        return decode(item, video=need_video, audio=need_audio)

    def score(
        self,
        media: Sequence[str | Path | MediaClip],
        texts: Sequence[str] | None = None,
        utterances: Sequence[str | None] | None = None,
    ) -> tuple[list[float | None], dict[str, list]]:
        """Score clips with every term.

        Args:
            media: files or decoded clips.
            texts: one text per clip, for judges that read text.
            utterances: one spoken line (or None) per clip, for the ``at`` judge.

        Returns:
            The combined reward per clip (None where a term failed: never 0), and
            ``{term: per-clip values, "errors": per-clip error or None}``.
        """
        clips: list[MediaClip | None] = []
        errors: list[str | None] = []
        for item in media:
            try:
                clips.append(self._decode(item))
                errors.append(None)
            except MediaError as err:
                clips.append(None)
                errors.append(str(err))
        ok = [i for i, c in enumerate(clips) if c is not None]
        values: dict[str, list[float | None]] = {}
        for name, term in self.terms.items():
            column: list[float | None] = [None] * len(clips)
            if isinstance(term.scorer, Judge):
                sub_texts = [texts[i] for i in ok] if texts is not None and term.scorer.task.needs_text else None
                sub_utts = [utterances[i] for i in ok] if utterances is not None else None
                for i, r in zip(ok, term.scorer.score([clips[i] for i in ok], sub_texts, sub_utts)):
                    column[i] = (r.delta if self.use_delta else r.score) if r.ok else None
                    if not r.ok:
                        errors[i] = errors[i] or f"{name}: {r.error}"
            else:
                for i in ok:
                    try:
                        column[i] = float(term.scorer(clips[i]))
                    except (MediaError, ValueError) as err:
                        errors[i] = errors[i] or f"{name}: {err}"
            values[name] = column
        total = sum(t.weight for t in self.terms.values())
        combined: list[float | None] = []
        for i in range(len(clips)):
            parts = [values[name][i] for name in self.terms]
            if any(p is None for p in parts):
                combined.append(None)
            else:
                combined.append(sum(t.weight * p for t, p in zip(self.terms.values(), parts)) / total)
        return combined, {**values, "errors": errors}

    def __call__(self, prompts=None, completions=None, **kwargs) -> list[float | None]:
        """TRL ``GRPOTrainer`` reward: media from the ``media_key`` column, else the completions
        (each a path); text from ``text_key``, else the prompts."""
        media = kwargs.get(self.media_key) or completions
        if media is None:
            raise ValueError(f"no media: pass a {self.media_key!r} column or completions that are file paths")
        texts = kwargs.get(self.text_key) or prompts
        utterances = kwargs.get(self.utterance_key) if self.utterance_key else None
        return self.score(list(media), texts, utterances)[0]

    def ddpo(self, videos, prompts, metadata=None) -> tuple[np.ndarray, dict]:
        """DDPO / Flow-GRPO style: ``fn(videos, prompts, metadata) -> (scores, info)``; failures are NaN."""
        utterances = [m.get("utterance") for m in metadata] if metadata else None
        combined, info = self.score(list(videos), list(prompts) if prompts is not None else None, utterances)
        return np.array([np.nan if c is None else c for c in combined], np.float32), info
