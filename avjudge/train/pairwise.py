"""Pairwise training (``objective: bt`` or ``btt``): a judge learns from each source's positive against each of its
negatives as a preference, its Yes / No log-odds δ as the reward, beside the single-token SFT.

An example is a preference pair (the positive and one negative of the same source, each prompted as the scorer
prompts it, no answer); the loss is Bradley–Terry's, −log σ(δ_chosen − δ_rejected), or with ``btt`` the Rao–Kupper
loss of a win with tie width k (VideoAlign's ``btt``: −log σ(Δ − log k); its tie term needs tie labels, which pair
datasets do not give). δ is read from the logits after each prompt, as `avjudge.judges.YesNoHead` reads it, so the
trained judge scores as any other. The Trainer, its DeepSpeed, LoRA and processes are SFT's.
"""

from __future__ import annotations

import math

import torch

from ..data import PairDataset
from ..judges import Judge
from ..judges.adapters import PreparedSample


def preference_indices(records: list[dict]) -> list[tuple[int, int]]:
    """(positive, negative) record indices: each negative with a positive of its source, in turn."""
    positives: dict = {}
    for k, r in enumerate(records):
        if r["label"]:
            positives.setdefault(r["source_id"], []).append(k)
    pairs, used = [], {}
    for k, r in enumerate(records):
        mine = positives.get(r["source_id"])
        if r["label"] or not mine:
            continue
        turn = used.get(r["source_id"], 0)
        pairs.append((mine[turn % len(mine)], k))
        used[r["source_id"]] = turn + 1
    return pairs


class PreferenceExamples:
    """The preference pairs of a pair dataset, each as (chosen, rejected) prepared prompts, built when first asked
    for; ``cache`` keeps built ones and ``redraw_seed`` draws each negative anew every epoch after the first, as
    `avjudge.train.collator.TrainingExamples` does for SFT."""

    def __init__(self, pairs: PairDataset, judge: Judge, cache: bool = False, redraw_seed: int | None = None):
        self.pairs, self.judge, self.cache, self.redraw_seed = pairs, judge, cache, redraw_seed
        self.indices = preference_indices(pairs.records)
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

    def __getitem__(self, index: int) -> dict:
        chosen, rejected = self.indices[index]
        if self.redraw_seed is not None and self.epoch > 0:
            redrawn = self.pairs.redrawn(rejected, [self.redraw_seed, self.epoch, index])
            if redrawn is not None:
                return {"chosen": self._prompt(*self.pairs[chosen]), "rejected": self._prompt(*redrawn)}
        if index in self._built:
            return self._built[index]
        example = {"chosen": self._prompt(*self.pairs[chosen]), "rejected": self._prompt(*self.pairs[rejected])}
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
        return {**batch, "pairs": len(examples)}


def preference_loss(delta: torch.Tensor, pairs: int, tie_width: float = 1.0) -> torch.Tensor:
    """−log σ(δ_chosen − δ_rejected − log k), averaged over the pairs (k = 1: Bradley–Terry)."""
    margin = delta[:pairs] - delta[pairs:] - math.log(tie_width)
    return -torch.nn.functional.logsigmoid(margin).mean()


def preference_trainer(judge: Judge, tie_width: float = 1.0):
    """A transformers ``Trainer`` class whose loss is `preference_loss` of the judge's log-odds."""
    from transformers import Trainer

    head = judge.head

    class PreferenceTrainer(Trainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            inputs = dict(inputs)
            pairs = inputs.pop("pairs")
            outputs = model(**inputs, use_cache=False)
            log_yes, log_no = head.log_probs(outputs.logits[:, -1])
            loss = preference_loss(log_yes - log_no, pairs, tie_width)
            return (loss, outputs) if return_outputs else loss

    return PreferenceTrainer
