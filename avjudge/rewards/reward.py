"""Judges and metrics as rewards for RLHF of audio-video generators.

``AVReward`` scores each generated clip through the scoring core (decoded once for every term) and returns the
weighted mean. Terms are judges, signal metrics or plain callables ``metric(clip) -> float``. With ``use_delta`` a
judge contributes delta = log P(Yes) - log P(No), which keeps a useful slope where the probability saturates. A clip
that fails gets ``None`` (TRL treats it as missing), never 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence, Union

import numpy as np

from ..judges import Judge
from ..media import DecodeNeeds, MediaClip
from ..metrics import Metric
from ..scoring import FunctionScorer, JudgeScorer, MetricScorer, Scoring, captions_of

ClipFunction = Callable[[MediaClip], float]


@dataclass
class RewardTerm:
    """One term of a reward: a judge, a metric (``output``: which of its outputs; default its first) or a callable
    ``metric(clip) -> float`` (reading what ``needs`` says: default the file's own frames), and its weight."""

    scorer: Union[Judge, Metric, ClipFunction]
    weight: float = 1.0
    output: str | None = None
    needs: DecodeNeeds | None = None


def _media_item(media) -> dict:
    """A core item's media: a file, encoded bytes, or a clip in memory."""
    if isinstance(media, MediaClip):
        return {"media": media}
    return {"video": media if isinstance(media, bytes) else str(media)}


class AVReward:
    """A reward for RL fine-tuning of audio-video generators: the weighted mean of judges and clip metrics.

    Each clip (a file, its bytes, or a `MediaClip` in memory) is decoded once for every term. Call it as a TRL
    ``GRPOTrainer`` reward function, or use `ddpo` for DDPO / Flow-GRPO trainers.

    Args:
        terms: name -> a `RewardTerm`, a `Judge`, a `Metric` or a callable ``metric(clip) -> float`` (weight 1).
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
        terms: dict[str, RewardTerm | Judge | Metric | ClipFunction],
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
        self.scoring = Scoring([self._scorer(name, term) for name, term in self.terms.items()])
        self.__name__ = "avjudge_" + "+".join(self.terms)  # TRL logs reward functions by name

    def _scorer(self, name: str, term: RewardTerm):
        if isinstance(term.scorer, Judge):
            return JudgeScorer(term.scorer, name)
        if isinstance(term.scorer, Metric):
            return MetricScorer(term.scorer, name)
        return FunctionScorer(name, term.scorer, term.needs)

    def _value(self, term: RewardTerm, values: dict) -> float:
        if isinstance(term.scorer, Judge):
            return values["delta" if self.use_delta else "score"]
        return values[term.output] if term.output else next(iter(values.values()))

    def score(
        self,
        media: Sequence[str | Path | bytes | MediaClip],
        texts: Sequence[str] | None = None,
        utterances: Sequence[str | None] | None = None,
    ) -> tuple[list[float | None], dict[str, list]]:
        """Score clips with every term.

        Args:
            media: files, their encoded bytes, or decoded clips.
            texts: one text per clip, for judges that read text.
            utterances: one spoken line (or None) per clip, for the ``at`` judge.

        Returns:
            The combined reward per clip (None where a term failed: never 0), and
            ``{term: per-clip values, "errors": per-clip error or None}``.
        """
        items = [
            {
                **_media_item(m),
                "captions": captions_of(texts[k] if texts is not None else None, utterances[k] if utterances else None),
            }
            for k, m in enumerate(media)
        ]
        records = self.scoring.score(items)
        values: dict[str, list[float | None]] = {name: [] for name in self.terms}
        errors: list[str | None] = []
        for record in records:
            first_error = record.error
            for name, term in self.terms.items():
                outcome = record.outcome(name)
                values[name].append(self._value(term, outcome.values) if outcome.ok else None)
                if not outcome.ok and first_error is None:
                    first_error = f"{name}: {outcome.error}"
            errors.append(first_error)
        total = sum(t.weight for t in self.terms.values())
        combined: list[float | None] = []
        for i in range(len(records)):
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
