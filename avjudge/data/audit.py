"""How much a pair dataset's text gives away on its own.

A VT or AT negative whose caption edit a judge can spot without looking at (or listening to) the clip —
a word the positives never use, a count no clip has — teaches the judge to read captions instead of
media. `text_leak` measures it: a logistic regression on which words and word pairs each training pair's
question holds (caption and spoken line), and nothing else, scored on the held-out pairs. AUROC 0.5 means
the text alone says nothing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from ..config import ConfigError
from ..prompts import render_query
from ..prompts import task as judge_task
from ..stats import auroc, per_negative_type
from .pairs import load_pairs


def word_grams(text: str) -> set[str]:
    """The lower-cased words of ``text`` (full stops and commas as words of their own) and adjacent pairs."""
    words = text.lower().replace(".", " . ").replace(",", " , ").split()
    return set(words) | {" ".join(pair) for pair in zip(words, words[1:])}


def gram_index(texts: list[str]) -> dict[str, int]:
    """A column for each word gram ``texts`` use, in sorted order."""
    return {g: i for i, g in enumerate(sorted(set().union(*(word_grams(text) for text in texts))))}


def gram_features(texts: list[str], index: dict[str, int]) -> torch.Tensor:
    """1 where a text holds the column's word gram, else 0; grams outside ``index`` are ignored."""
    x = torch.zeros(len(texts), len(index))
    for row, text in enumerate(texts):
        x[row, [index[g] for g in word_grams(text) if g in index]] = 1.0
    return x


def text_only_scores(train: list[tuple[int, str]], test: list[str], l2: float = 1e-3) -> np.ndarray:
    """P(match) for each ``test`` text from an L2-regularised logistic regression on its word grams, fitted
    on ``train`` (label, text) pairs; grams never seen in training are ignored."""
    index = gram_index([text for _, text in train])
    x, y = gram_features([text for _, text in train], index), torch.tensor([float(label) for label, _ in train])
    model = torch.nn.Linear(len(index), 1)
    optimiser = torch.optim.LBFGS(model.parameters(), max_iter=500)

    def closure():
        optimiser.zero_grad()
        loss = (
            torch.nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
            + l2 * model.weight.pow(2).sum()
        )
        loss.backward()
        return loss

    optimiser.step(closure)
    with torch.no_grad():
        return torch.sigmoid(model(gram_features(test, index)).squeeze(1)).numpy()


def text_only_held_out(
    dataset: str | Path, task: str, train_split: str = "train", eval_split: str = "test"
) -> tuple[list[dict], np.ndarray]:
    """(``eval_split``'s pair records, the text-only classifier's score of each), the classifier fitted on
    ``train_split``'s pairs of ``task`` in a folder made by `avjudge data build`."""
    if not judge_task(task).needs_text:
        raise ConfigError(f"the {task} judge reads no text, so its pairs cannot leak through it; audit vt or at")
    train, held_out = load_pairs(dataset, task, train_split), load_pairs(dataset, task, eval_split)

    def question(record: dict) -> str:  # every word the judge reads: the caption and any spoken line
        return render_query(task, record["text"], record.get("utterance"))

    return held_out, text_only_scores([(r["label"], question(r)) for r in train], [question(r) for r in held_out])


def text_leak(dataset: str | Path, task: str, train_split: str = "train", eval_split: str = "test") -> dict:
    """{"overall": AUROC, "per_type": {negative type: AUROC against all held-out positives}, "pairs": n} of
    the text-only classifier on ``task``'s pairs in a folder made by `avjudge data build`."""
    held_out, scores = text_only_held_out(dataset, task, train_split, eval_split)
    labels = np.array([r["label"] for r in held_out])
    return {
        "overall": auroc(scores, labels),
        "pairs": len(held_out),
        "per_type": per_negative_type(scores, labels, [r["negative_type"] for r in held_out], auroc),
    }
