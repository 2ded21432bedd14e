"""Continuous scores from next-token logits: S = P(Yes) / (P(Yes) + P(No)).

Each answer is a set of token variants ("Yes", " Yes", "yes", ...) whose probabilities are
summed (logsumexp of log-probabilities). delta = log P(Yes) - log P(No) is the same as
logit_yes - logit_no for single tokens, and S = sigmoid(delta / temperature).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch

YES_VARIANTS = ("Yes", " Yes", "yes", " yes", "YES")
NO_VARIANTS = ("No", " No", "no", " no", "NO")


@dataclass(frozen=True)
class ScoreResult:
    """One judged sample; an unscorable sample has ``error`` set and every number None (never 0).

    Attributes:
        score: S = P(Yes) / (P(Yes) + P(No)), in [0, 1].
        delta: log P(Yes) - log P(No) (divided by the temperature); S = sigmoid(delta).
        mass: P(Yes) + P(No): how much probability the model puts on the two answers at all.
        yes_prob: P(Yes), the answer variants' probabilities summed; ``no_prob`` likewise.
        error: why the sample could not be scored, or None.
    """

    score: float | None
    delta: float | None = None
    mass: float | None = None
    yes_prob: float | None = None
    no_prob: float | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def failed(cls, error: str) -> "ScoreResult":
        return cls(score=None, error=error)


def answer_token_ids(tokenizer, variants: tuple[str, ...]) -> list[int]:
    """Ids of the variants the tokenizer encodes as one token (others cannot be a next token)."""
    ids = []
    for text in variants:
        encoded = tokenizer(text, add_special_tokens=False)["input_ids"]
        if len(encoded) == 1 and encoded[0] not in ids:
            ids.append(encoded[0])
    if not ids:
        raise ValueError(f"none of {variants} is a single token for this tokenizer")
    return ids


@dataclass(frozen=True)
class YesNoHead:
    yes_ids: tuple[int, ...]
    no_ids: tuple[int, ...]
    temperature: float = 1.0

    @classmethod
    def from_tokenizer(cls, tokenizer, yes=YES_VARIANTS, no=NO_VARIANTS, temperature: float = 1.0) -> "YesNoHead":
        yes_ids, no_ids = answer_token_ids(tokenizer, tuple(yes)), answer_token_ids(tokenizer, tuple(no))
        if set(yes_ids) & set(no_ids):
            raise ValueError("a token cannot be both a Yes and a No answer")
        return cls(tuple(yes_ids), tuple(no_ids), temperature)

    def log_probs(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(log P(Yes), log P(No)) per row of (B, V) logits; differentiable."""
        logp = torch.log_softmax(logits.float(), dim=-1)
        yes = torch.logsumexp(logp[:, list(self.yes_ids)], dim=-1)
        no = torch.logsumexp(logp[:, list(self.no_ids)], dim=-1)
        return yes, no

    def score_tensor(self, logits: torch.Tensor) -> torch.Tensor:
        yes, no = self.log_probs(logits)
        return torch.sigmoid((yes - no) / self.temperature)

    @staticmethod
    def failed(error: str) -> ScoreResult:
        return ScoreResult.failed(error)

    def results(self, logits: torch.Tensor) -> list[ScoreResult]:
        with torch.no_grad():
            yes, no = self.log_probs(logits)
        return [self.result(y, n) for y, n in zip(yes.tolist(), no.tolist())]

    def result(self, log_yes: float, log_no: float) -> ScoreResult:
        """One sample's result from log P(Yes) and log P(No): S = sigmoid((log P(Yes) - log P(No)) / temperature)."""
        delta = log_yes - log_no
        if not math.isfinite(delta):  # a NaN weight, or an answer with no probability at all: never a number
            return ScoreResult.failed(f"non-finite log-odds (log P(Yes) {log_yes}, log P(No) {log_no})")
        x = delta / self.temperature
        score = 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))  # no overflow either way
        p_yes, p_no = math.exp(log_yes), math.exp(log_no)
        return ScoreResult(score=score, delta=delta, mass=p_yes + p_no, yes_prob=p_yes, no_prob=p_no)


@dataclass(frozen=True)
class ChoiceResult:
    """One multiple-choice answer: the probability of each option letter, renormalised over the letters (``probs``,
    letter -> P), and the share of the next-token probability the letters hold (``mass``). An unanswerable sample
    has ``error`` set and no probabilities."""

    probs: dict[str, float] | None
    mass: float | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def offered(self, n_options: int) -> dict[str, float]:
        """The probabilities of the first ``n_options`` letters, renormalised over them: a question with fewer
        options than the head's letters never gets a letter it did not offer."""
        kept = dict(list(self.probs.items())[:n_options])
        total = sum(kept.values())
        return {letter: p / total for letter, p in kept.items()}

    def answer(self, n_options: int) -> str:
        offered = self.offered(n_options)
        return max(offered, key=offered.__getitem__)

    @classmethod
    def failed(cls, error: str) -> "ChoiceResult":
        return cls(probs=None, error=error)


@dataclass(frozen=True)
class ChoiceHead:
    """Reads a multiple-choice answer from next-token logits: each letter's probability (its one-token variants
    summed, "A" and " A"), renormalised over the letters."""

    letters: tuple[str, ...]
    ids: tuple[tuple[int, ...], ...]  # per letter, its single-token variants

    @classmethod
    def from_tokenizer(cls, tokenizer, letters: tuple[str, ...]) -> "ChoiceHead":
        ids = tuple(tuple(answer_token_ids(tokenizer, (letter, f" {letter}"))) for letter in letters)
        flat = [i for group in ids for i in group]
        if len(flat) != len(set(flat)):
            raise ValueError("two option letters share a token")
        return cls(tuple(letters), ids)

    def log_probs(self, logits: torch.Tensor) -> torch.Tensor:
        """(B, letters) log-probabilities of each letter as the next token; differentiable."""
        logp = torch.log_softmax(logits.float(), dim=-1)
        return torch.stack([torch.logsumexp(logp[:, list(group)], dim=-1) for group in self.ids], dim=-1)

    @staticmethod
    def failed(error: str) -> ChoiceResult:
        return ChoiceResult.failed(error)

    def results(self, logits: torch.Tensor) -> list[ChoiceResult]:
        with torch.no_grad():
            logp = self.log_probs(logits)
            mass = logp.exp().sum(-1)
            probs = torch.softmax(logp, dim=-1)
        return [
            ChoiceResult(dict(zip(self.letters, row)), m)
            if all(map(math.isfinite, row)) and math.isfinite(m)
            else ChoiceResult.failed(f"non-finite option probabilities {row}")
            for row, m in zip(probs.tolist(), mass.tolist())
        ]
