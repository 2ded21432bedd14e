"""Training examples: the judge's own prompt with the answer appended, loss on the answer token only."""

from __future__ import annotations

from dataclasses import replace

import torch

from ..data import PairDataset
from ..judges import Judge, JudgeSample
from ..judges.adapters import PreparedSample
from ..prompts import ANSWERS

IGNORE = -100


def answer_suffix(family_end: str = "<|im_end|>\n") -> dict[int, str]:
    return {label: answer + family_end for label, answer in ANSWERS.items()}


class AnswerCollator:
    """Builds labelled examples from (pair record, clip) and pads them into batches.

    The prompt is rendered by the same function the scorer uses, with the answer ("Yes" or
    "No") appended; every label is ignored except the answer token, so the loss falls on
    that single token whatever the padding side.
    """

    def __init__(self, judge: Judge, padding_side: str = "right"):
        if padding_side not in ("left", "right"):
            raise ValueError(f"padding_side must be left or right, not {padding_side!r}")
        self.judge, self.padding_side = judge, padding_side
        tok = judge.adapter.tokenizer
        self.suffix_length = {
            label: len(tok(text, add_special_tokens=False)["input_ids"]) for label, text in answer_suffix().items()
        }
        self.answer_id = {label: tok(ANSWERS[label], add_special_tokens=False)["input_ids"][0] for label in ANSWERS}

    def example(self, record: dict, clip) -> PreparedSample:
        sample = self.judge.sample(clip, record.get("text"), record.get("utterance"))
        return self.labelled(sample, int(record["label"]), f"pair {record['id']}")

    def labelled(self, sample: JudgeSample, label: int, name: str = "sample") -> PreparedSample:
        """``sample`` prepared with the answer ``label`` asks for, supervised on that answer token only."""
        prepared = self.judge.prepare(sample, answer=ANSWERS[label])
        position = prepared.length - self.suffix_length[label]
        if prepared.input_ids[position] != self.answer_id[label]:
            raise ValueError(f"{name}: the answer is not one token after the prompt")
        labels = [IGNORE] * prepared.length
        labels[position] = self.answer_id[label]
        return replace(prepared, labels=labels)

    def __call__(self, examples: list[PreparedSample]) -> dict[str, torch.Tensor]:
        batch = self.judge.adapter.collate(examples, self.padding_side)
        return self.judge.adapter.forward_kwargs(batch)


class TrainingExamples:
    """The labelled examples of a pair dataset, built when first asked for (in DataLoader workers if any).

    ``cache`` keeps each example in memory after it is built, so later epochs skip decoding,
    negatives and processing. Nothing changes but the time: a negative is a pure function of its
    recipe's stored parameters, so a rebuilt example equals the cached one. The cost is memory,
    about one example's media per pair (1.4 MB for the tiny AV judge's 4 s clips).

    ``redraw_seed`` makes every epoch after the first draw each audio negative's parameters anew
    (`PairDataset.redrawn`, seeded by (redraw_seed, epoch, index)): the same pairs, more distinct
    negatives, which a small dataset's fixed ones would let the judge memorise. `set_epoch` says which
    epoch is being built; redrawn examples are never cached.
    """

    def __init__(
        self, pairs: PairDataset, collator: AnswerCollator, cache: bool = False, redraw_seed: int | None = None
    ):
        self.pairs, self.collator, self.cache, self.redraw_seed = pairs, collator, cache, redraw_seed
        self.epoch = 0
        self._built: dict[int, PreparedSample] = {}

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, index: int) -> PreparedSample:
        if self.redraw_seed is not None and self.epoch > 0:
            redrawn = self.pairs.redrawn(index, [self.redraw_seed, self.epoch, index])
            if redrawn is not None:
                return self.collator.example(*redrawn)
        if index in self._built:
            return self._built[index]
        example = self.collator.example(*self.pairs[index])
        if self.cache:
            self._built[index] = example
        return example
