"""AVI-Bench's task metrics (Appendix G of the paper), each from a model's raw answers and the release's gold.

Item metrics say whether one answer is right (multiple choice, AVSQA's option sets); double confirmation works on
them. Corpus metrics give a task's score from all its answers at once (counting, localisation, retrieval,
grounding, captioning), since their RMSE, repeat and confidence terms are taken over the whole task. Every score is
in [0, 1].

Where the paper and its authors' code differ, the paper is followed and the docs say so (benchmarks: AVI-Bench).
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ....registry import Registry
from ...base import SuiteError

# ---- reading an answer ---------------------------------------------------------------------------------------------


def _plain(text: str) -> str:
    """Lower case, punctuation dropped: how the authors' scorer compares words."""
    return re.sub(r"[^\w\s]", "", text.lower())


def literal(response: str | None) -> Any:
    """The Python or JSON literal a structured answer holds (``answer={...}``, fenced or not); None if there is none.
    Only literals are read (``ast.literal_eval``), never code."""
    text = (response or "").replace("```json", "").replace("```python", "").replace("```", "").strip()
    text = re.sub(r"^\s*answer\s*=\s*", "", text, flags=re.IGNORECASE)
    for candidate in (text, *re.findall(r"\{.*\}|\[.*\]", text, flags=re.DOTALL)):
        try:
            return ast.literal_eval(candidate.replace("null", "None").replace("true", "True").replace("false", "False"))
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return None


def counting_score(rmse: float, k: float) -> float:
    """Eq. 17: 1 - tanh(k RMSE), in (0, 1]."""
    return 1.0 - math.tanh(k * rmse)


def _rmse(errors: Sequence[float]) -> float:
    return math.sqrt(sum(e * e for e in errors) / len(errors)) if errors else 0.0


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _f1(predicted: set, true: set) -> float:
    hits = len(predicted & true)
    return 2 * hits / (len(predicted) + len(true)) if predicted or true else 1.0


# ---- item metrics --------------------------------------------------------------------------------------------------


def full_match(response: str | None, gold: Any, choices: Sequence[str]) -> bool:
    """Multiple choice and yes/no (ASQA, VSQA, AVM, AVH, VAH, AVQA): the option named earliest in the answer, as a
    whole word, must be the gold option; a numeric gold (AVQA's counts) is matched by the answer's first number."""
    if not isinstance(gold, (str, int)) or isinstance(gold, bool):
        raise SuiteError(f"a multiple-choice gold answer is a text or a number, not {gold!r}")
    answer, gold_text = _plain(response or "").strip(), _plain(str(gold)).strip()
    named = []
    for option in choices:
        found = re.search(rf"\b{re.escape(_plain(option).strip())}\b", answer) if _plain(option).strip() else None
        if found:
            named.append((found.start(), _plain(option).strip()))
    if named:
        answer = min(named)[1]
    if answer == gold_text:
        return True
    number = re.search(r"\d+", answer)
    return gold_text.isdigit() and number is not None and number.group(0) == gold_text


def _option_set(text: str) -> list[str]:
    return sorted(part.strip() for part in text.replace("*", "").replace("#", "").lower().strip().split(";"))


def set_match(response: str | None, gold: Any, choices: Sequence[str] = ()) -> bool:
    """AVSQA: the ``;``-separated options of the answer (between ``#`` marks or not) must be exactly the gold set,
    in any order."""
    if not isinstance(gold, str) or not gold.strip():
        raise SuiteError(f"an AVSQA gold answer is a ';'-separated text of options, not {gold!r}")
    return _option_set(response or "") == _option_set(gold)


# ---- corpus metrics ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Counting:
    """AMIC and VMIC (G.1.1, G.1.2): semantic F1 (audio) or recall (visual, over the gold categories) of the
    categories named, and a counting score from the RMSE of the per-item mean count errors (a gold category not
    named costs ``missing``; an item's error is capped at ``cap``). An answer that holds no category-count mapping
    scores 0 semantically and errs by its gold counts. The counting score is 0 when the semantic score is."""

    recall_only: bool
    missing: float
    k: float = 0.3
    cap: float = 20.0
    saturates_at: int | None = None  # VMIC: counts both at or above this agree (its labels stop counting there)

    def __call__(self, items: Sequence[tuple[str | None, Any]]) -> dict:
        semantic, errors = [], []
        for response, gold in items:
            if not isinstance(gold, dict) or not gold:
                raise SuiteError(f"a counting gold answer maps categories to counts, not {gold!r}")
            answer = literal(response)
            counts = _counts(answer)
            if counts is None:
                semantic.append(0.0)
                errors.append(min(_mean([float(n) for n in gold.values()]), self.cap))
                continue
            named, true = set(counts), set(gold)
            semantic.append(len(named & true) / len(true) if self.recall_only else _f1(named, true))
            errors.append(min(_mean([self._error(counts.get(c), float(n)) for c, n in gold.items()]), self.cap))
        s_semantic = _mean(semantic)
        rmse = _rmse(errors)
        s_counting = counting_score(rmse, self.k) if s_semantic > 0 else 0.0
        return {"score": (s_semantic + s_counting) / 2, "semantic": s_semantic, "counting": s_counting, "rmse": rmse}

    def _error(self, predicted: float | None, true: float) -> float:
        if predicted is None:
            return self.missing
        if self.saturates_at is not None and predicted >= self.saturates_at and true >= self.saturates_at:
            return 0.0
        return abs(predicted - true)


def _counts(answer: Any) -> dict[str, float] | None:
    if not isinstance(answer, dict):
        return None
    try:
        return {str(c).strip().lower(): float(n) for c, n in answer.items()}
    except (TypeError, ValueError):
        return None


def iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two [x1, y1, x2, y2] boxes (0 for an empty union)."""
    width = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    height = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = width * height
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def corners(box: Sequence[float]) -> list[float]:
    """A gold [x, y, w, h] box as [x1, y1, x2, y2] (Eq. 21)."""
    x, y, w, h = (float(v) for v in box)
    return [x, y, x + w, y + h]


def to_pixels(box: Any, size: tuple[float, float]) -> list[float] | None:
    """A predicted [x1, y1, x2, y2] box in pixels: asked normalised to [0, 1] (Eq. 22); a box on Qwen's 0-1000
    grid is read as such, one already in pixels as it is (the authors' scorer does the same). None if it is not
    four numbers."""
    try:
        values = [float(v) for v in (literal(box) if isinstance(box, str) else box)]
    except (TypeError, ValueError):
        return None
    if len(values) != 4:
        return None
    largest = max(abs(v) for v in values)
    if 1.5 < largest <= 1001:
        values = [v / 1000 for v in values]
    elif largest > 1001:
        return values
    w, h = size
    return [values[0] * w, values[1] * h, values[2] * w, values[3] * h]


def _gold_boxes(gold: Any, what: str) -> tuple[dict, tuple[float, float]]:
    if not isinstance(gold, dict) or not isinstance(gold.get("bbox"), dict) or len(gold.get("original_wh") or ()) != 2:
        raise SuiteError(f"an {what} gold answer is {{'bbox': {{...}}, 'original_wh': [W, H]}}, not {gold!r}")
    width, height = (float(v) for v in gold["original_wh"])
    return gold["bbox"], (width, height)


def _category(name: str) -> str:
    """An instance's category: ``person_1`` -> ``person``."""
    head, _, tail = str(name).rpartition("_")
    return (head if head and tail.isdigit() else str(name)).lower()


@dataclass(frozen=True)
class Instances:
    """AVL (G.1.3): each gold box is matched greedily to the unmatched predicted box of its category with the
    highest IoU (none if that IoU is 0); per-item mIoU over the gold boxes, the instance score from the RMSE of the
    unmatched counts (Eq. 17 with ``k``; 0 when no item names a right category), and ``alpha`` mIoU + (1 - alpha)
    instance score."""

    alpha: float = 0.7
    k: float = 1.0

    def __call__(self, items: Sequence[tuple[str | None, Any]]) -> dict:
        mious, unmatched, semantic = [], [], []
        for response, gold in items:
            boxes, size = _gold_boxes(gold, "AVL")
            answer = literal(response)
            predicted = answer if isinstance(answer, dict) else {}
            used, total = set(), 0.0
            for key, box in boxes.items():
                best, best_key = 0.0, None
                for pred_key, pred_box in predicted.items():
                    pixels = to_pixels(pred_box, size)
                    if pred_key in used or _category(pred_key) != _category(key) or pixels is None:
                        continue
                    overlap = iou(corners(box), pixels)
                    if overlap > best:
                        best, best_key = overlap, pred_key
                if best_key is not None:
                    used.add(best_key)
                    total += best
            mious.append(total / len(boxes) if boxes else 0.0)
            unmatched.append(len(boxes) - len(used))
            semantic.append(_f1({_category(k) for k in predicted}, {_category(k) for k in boxes}))
        miou = _mean(mious)
        instance = counting_score(_rmse(unmatched), self.k) if _mean(semantic) > 0 else 0.0
        return {"score": self.alpha * miou + (1 - self.alpha) * instance, "miou": miou, "instance": instance}


def indices(response: str | None) -> list[int]:
    """The candidate indices an answer names, in its order, each once."""
    seen: list[int] = []
    for token in re.findall(r"\d+", response or ""):
        if int(token) not in seen:
            seen.append(int(token))
    return seen


@dataclass(frozen=True)
class Retrieval:
    """VAR and AVR (G.1.4): mean R@1, R@3 and set F1, each scaled by the mean confidence (``low_confidence`` for
    an answer naming more than ``most`` candidates) and by the repeat penalty 1 - (max(tau, r) - tau), r being the
    share of answers that repeat an earlier answer's set; the score is ((R@1 + R@3) / 2 + F1) / 2."""

    most: int = 6
    low_confidence: float = 0.3
    tau: float = 0.8

    def __call__(self, items: Sequence[tuple[str | None, Any]]) -> dict:
        r1, r3, f1, confidence, sets = [], [], [], [], set()
        for response, gold in items:
            if not isinstance(gold, list) or not all(isinstance(g, int) for g in gold):
                raise SuiteError(f"a retrieval gold answer is a list of candidate indices, not {gold!r}")
            named, true = indices(response), set(gold)
            r1.append(float(bool(set(named[:1]) & true)))
            r3.append(float(bool(set(named[:3]) & true)))
            f1.append(_f1(set(named), true))
            confidence.append(self.low_confidence if len(named) > self.most else 1.0)
            sets.add(frozenset(named))
        repeat = (len(items) - len(sets)) / len(items) if items else 0.0
        penalty = 1 - (max(self.tau, repeat) - self.tau)
        scale = _mean(confidence) * penalty
        parts = {"recall@1": _mean(r1) * scale, "recall@3": _mean(r3) * scale, "f1": _mean(f1) * scale}
        score = ((parts["recall@1"] + parts["recall@3"]) / 2 + parts["f1"]) / 2
        return {"score": score, **parts, "confidence": _mean(confidence), "repeat_penalty": penalty}


def frame_iou(items: Sequence[tuple[str | None, Any]]) -> dict:
    """AVLG (G.1.6): per frame, the IoU of the predicted box with the gold one (1 where both say none, 0 where one
    does); per clip their mean over the gold frames; the score is the mean over clips."""
    clips = []
    for response, gold in items:
        frames, size = _gold_boxes(gold, "AVLG")
        answer = literal(response)
        predicted = answer if isinstance(answer, dict) else {}
        total = 0.0
        for frame, box in frames.items():
            guess = predicted.get(frame)
            if box is None or guess is None:
                total += float(box is None and guess is None)
                continue
            pixels = to_pixels(guess, size)
            total += iou(corners(box), pixels) if pixels is not None else 0.0
        clips.append(total / len(frames) if frames else 0.0)
    return {"score": _mean(clips), "miou": _mean(clips)}


# ---- captioning: FENSE needs weights, so it sits behind an interface -----------------------------------------------

# (captions, each caption's reference captions) -> each caption's score in [0, 1]
CaptionScorer = Callable[[list[str], list[list[str]]], list[float]]
CAPTION_SCORERS = Registry("caption scorer", SuiteError, "register one in avjudge.omni.benchmarks.avibench.measures")


def fense(captions: list[str], references: list[list[str]]) -> list[float]:
    """FENSE (Zhou et al., 2022), as the paper scores AVC: needs ``aac-metrics`` and its downloaded weights
    (a sentence-BERT model and a fluency-error detector), which avjudge does not install."""
    try:
        from aac_metrics.functional import fense as aac_fense
    except ImportError as err:
        raise SuiteError(
            "AVC is scored by FENSE, which needs aac-metrics and its weights: pip install aac-metrics, then "
            "aac-metrics-download (or give AVC's score in the levels CSV)"
        ) from err
    _, per_caption = aac_fense(captions, references)
    return [float(v) for v in per_caption["fense"]]


CAPTION_SCORERS["fense"] = fense


@dataclass(frozen=True)
class Captioning:
    """AVC (G.1.5): the corpus mean of a caption scorer's per-caption scores against each item's references."""

    scorer: str = "fense"

    def __call__(self, items: Sequence[tuple[str | None, Any]]) -> dict:
        references = []
        for _, gold in items:
            refs = [gold] if isinstance(gold, str) else gold
            if not isinstance(refs, list) or not refs or not all(isinstance(r, str) for r in refs):
                raise SuiteError(f"a caption gold answer is a reference caption or a list of them, not {gold!r}")
            references.append(refs)
        captions = [response or "" for response, _ in items]
        scores = CAPTION_SCORERS.lookup(self.scorer)(captions, references) if items else []
        return {"score": _mean(scores), "scorer": self.scorer}
