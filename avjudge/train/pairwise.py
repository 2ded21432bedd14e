"""Pairwise training (``objective: bt`` or ``btt``): a judge learns from each source's positive against each of its
negatives as a preference, its Yes / No log-odds δ as the reward, beside the single-token SFT.

An example is a preference pair (the positive and one negative of the same source, each prompted as the scorer
prompts it, no answer); the loss is Bradley–Terry's, −log σ(δ_chosen − δ_rejected), or with ``btt`` Rao and Kupper's
with tie width k, VideoAlign's ``btt``: −log σ(Δ − log k) for a win, and for a negative marked a tie with its source
(a recipe's ``ties``: below its strategy's noticeable size) −log σ(Δ − log k) − log σ(−Δ − log k) − log(k² − 1).
``bt`` has no ties: it leaves tie pairs out. δ is read from the logits after each prompt, as
`avjudge.judges.YesNoHead` reads it, so the trained judge scores as any other. The Trainer, its DeepSpeed, LoRA and
processes are SFT's.
"""

from __future__ import annotations

import math

import torch

from ..data import PairDataset
from ..judges import Judge
from ..judges.adapters import PreparedSample


def preference_indices(records: list[dict], ties: bool = True) -> list[tuple[int, int]]:
    """(positive, negative) record indices: each negative with a positive of its source, in turn; without ``ties``,
    no negative marked a tie."""
    positives: dict = {}
    for k, r in enumerate(records):
        if r["label"]:
            positives.setdefault(r["source_id"], []).append(k)
    pairs, used = [], {}
    for k, r in enumerate(records):
        mine = positives.get(r["source_id"])
        if r["label"] or not mine or (r.get("tie") and not ties):
            continue
        turn = used.get(r["source_id"], 0)
        pairs.append((mine[turn % len(mine)], k))
        used[r["source_id"]] = turn + 1
    return pairs


class PreferenceExamples:
    """The preference pairs of a pair dataset, each as (chosen, rejected) prepared prompts, built when first asked
    for; ``cache`` keeps built ones and ``redraw_seed`` draws each negative anew every epoch after the first, as
    `avjudge.train.collator.TrainingExamples` does for SFT."""

    def __init__(
        self,
        pairs: PairDataset,
        judge: Judge,
        cache: bool = False,
        redraw_seed: int | None = None,
        ties: bool = True,
    ):
        self.pairs, self.judge, self.cache, self.redraw_seed = pairs, judge, cache, redraw_seed
        self.indices = preference_indices(pairs.records, ties)
        if not self.indices:
            raise ValueError("no source has both a positive and a negative pair: nothing to prefer")
        self.epoch = 0
        self._built: dict[int, dict] = {}

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.indices)

    def _prompt(self, record: dict, clip) -> PreparedSample:
        return self.judge.prepare(self.judge.sample(clip, record.get("text"), record.get("utterance")))

    def _example(self, chosen: tuple, rejected: tuple) -> dict:
        tie = bool(rejected[0].get("tie"))
        return {"chosen": self._prompt(*chosen), "rejected": self._prompt(*rejected), "tie": tie}

    def __getitem__(self, index: int) -> dict:
        chosen, rejected = self.indices[index]
        if self.redraw_seed is not None and self.epoch > 0:
            redrawn = self.pairs.redrawn(rejected, [self.redraw_seed, self.epoch, index])
            if redrawn is not None:
                return self._example(self.pairs[chosen], redrawn)
        if index in self._built:
            return self._built[index]
        example = self._example(self.pairs[chosen], self.pairs[rejected])
        if self.cache:
            self._built[index] = example
        return example


class PreferenceCollator:
    """A batch of preference pairs: the chosen prompts, then the rejected ones, left-padded so each prompt ends at
    the last position; ``pairs`` says where the two halves meet."""

    def __init__(self, judge: Judge):
        self.judge = judge

    def __call__(self, examples: list[dict]) -> dict:
        prompts = [e["chosen"] for e in examples] + [e["rejected"] for e in examples]
        batch = self.judge.adapter.forward_kwargs(self.judge.adapter.collate(prompts, "left"))
        return {**batch, "pairs": len(examples), "ties": torch.tensor([e["tie"] for e in examples])}


def preference_loss(delta: torch.Tensor, pairs: int, tie_width: float = 1.0, ties=None) -> torch.Tensor:
    """The pairs' mean negative log-likelihood under Rao–Kupper with tie width k: −log σ(Δ − log k) for a win
    (Δ = δ_chosen − δ_rejected; k = 1: Bradley–Terry), and for a pair marked a tie (``ties``)
    −log σ(Δ − log k) − log σ(−Δ − log k) − log(k² − 1)."""
    width = math.log(tie_width)
    diff = delta[:pairs] - delta[pairs:]
    win = torch.nn.functional.logsigmoid(diff - width)
    if ties is None or not bool(ties.any()):
        return -win.mean()
    if tie_width <= 1:
        raise ValueError("a tie needs a tie width above 1 (objective btt)")
    tie = win + torch.nn.functional.logsigmoid(-diff - width) + math.log(tie_width**2 - 1)
    return -torch.where(ties.to(diff.device), tie, win).mean()


def preference_trainer(judge: Judge, tie_width: float = 1.0):
    """A transformers ``Trainer`` class whose loss is `preference_loss` of the judge's log-odds."""
    from transformers import Trainer

    head = judge.head

    class PreferenceTrainer(Trainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            inputs = dict(inputs)
            pairs, ties = inputs.pop("pairs"), inputs.pop("ties")
            outputs = model(**inputs, use_cache=False)
            log_yes, log_no = head.log_probs(outputs.logits[:, -1])
            loss = preference_loss(log_yes - log_no, pairs, tie_width, ties)
            return (loss, outputs) if return_outputs else loss

    return PreferenceTrainer
