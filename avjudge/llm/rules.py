"""The offline rule backend: minimal, category-preserving swaps from lexicons.

It reads what to change from ``request.meta`` (the original text and the lexicon
categories of the target dimension) and answers in the same JSON as an LLM would, so the
quality control downstream treats both alike. Deterministic for a given request seed.

Given a ``vocabulary`` (the corpus's own texts), it swaps only to phrases those texts use, and
only where every pair of neighbouring words the swap leaves is one those texts use too: a word
that no caption of the corpus has ("gray"), or a word next to one it never follows ("a light blue
sky below dark grass", where every caption's sky is above its grass), gives a negative away by its
text alone, and a judge trained on such pairs learns to read instead of to look (``avjudge data
audit``, a classifier of words and word pairs, measures it).
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .base import ChatRequest
from .lexicons import LEXICONS

_SENTENCE = re.compile(r"[^.!?]+[.!?]?")
_WORD = re.compile(r"[\w'-]+")
_VOWEL_SOUND = re.compile(r"^(?:[aeio]|u(?!ni|se|sa))", re.I)


@functools.lru_cache(maxsize=None)
def _pattern(phrases: tuple[str, ...]) -> re.Pattern:
    """One alternation per category, longest phrases first so the longest match wins."""
    ordered = sorted(phrases, key=len, reverse=True)
    return re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(p) for p in ordered) + r")(?![\w-])", re.I)


def _occurrences(text: str, phrases: tuple[str, ...], start: int = 0, end: int | None = None):
    end = len(text) if end is None else end
    canonical = {p.lower(): p for p in phrases}
    for m in _pattern(tuple(phrases)).finditer(text, start, end):
        yield m.start(), m.end(), canonical[m.group().lower()]


def _match_case(template: str, word: str) -> str:
    return word[0].upper() + word[1:] if template[:1].isupper() else word


def _fix_article(text: str, start: int, new_word: str) -> tuple[str, int]:
    """Make 'a'/'an' just before position ``start`` agree with ``new_word``."""
    m = re.search(r"\b(a|an|A|An)\s+$", text[:start])
    if not m:
        return text, 0
    want = "an" if _VOWEL_SOUND.match(new_word) else "a"
    want = _match_case(m.group(1), want)
    return text[: m.start(1)] + want + text[m.end(1) :], len(want) - len(m.group(1))


# lexicon categories whose phrases name a place relative to something else, edited whole or not at all
RELATIONS = ("spatial", "position")

# "one" takes a singular noun: swapped with another number it leaves "one beats" or "two shape is",
# a grammar slip that gives the negative away by its text alone
_SINGULAR = frozenset({"one"})


def _replacements(phrase: str, phrases: tuple[str, ...]) -> list[str]:
    """The category's other phrases that fit where ``phrase`` stands (same grammatical number)."""
    singular = phrase.lower() in _SINGULAR
    return [w for w in phrases if w.lower() != phrase.lower() and (w.lower() in _SINGULAR) == singular]


def word_pairs(text: str) -> set[tuple[str, str]]:
    """Each pair of neighbouring words of ``text``, lower-cased, punctuation aside."""
    words = _WORD.findall(text.lower())
    return set(zip(words, words[1:]))


@dataclass(frozen=True)
class CorpusUsage:
    """How a corpus's own texts use words: its pairs of neighbouring words, and how often each lexicon phrase
    occurs (lower-cased). An edit that makes a pair no text has, or draws its new phrase more evenly than the texts
    do ("five times" as often as "twice"), can be told from the words alone."""

    pairs: frozenset
    phrase_counts: Counter

    @classmethod
    def of(cls, texts: list[str], lexicons: dict[str, tuple[str, ...]] = LEXICONS) -> CorpusUsage:
        corpus = "\n".join(texts)
        return cls(
            frozenset().union(*map(word_pairs, texts)),
            Counter(phrase.lower() for phrases in lexicons.values() for _, _, phrase in _occurrences(corpus, phrases)),
        )

    def fits(self, original: str, edited: str) -> bool:
        """Whether every pair of neighbouring words that ``edited`` has and ``original`` has not is one of the
        corpus's."""
        return word_pairs(edited) - word_pairs(original) <= self.pairs


def _pick(edits: list[tuple], rng: np.random.Generator, weights: list[float] | None = None) -> tuple | None:
    """One of ``edits``, with probability in proportion to ``weights`` (uniform if None); None if none can be."""
    if weights is not None:
        edits, weights = [e for e, w in zip(edits, weights) if w > 0], [w for w in weights if w > 0]
    if not edits:
        return None
    p = None if weights is None else np.asarray(weights, float) / np.sum(weights)
    return edits[int(rng.choice(len(edits), p=p))]


def swap_in_category(
    text: str,
    categories: list[str],
    rng: np.random.Generator,
    lexicons: dict[str, tuple[str, ...]] = LEXICONS,
    usage: CorpusUsage | None = None,
) -> tuple[str, str] | None:
    """Replace a phrase of a category with another phrase of the same category, at every place the text
    uses it: a caption that calls an object "purple" once and "cyan" twice contradicts itself, and that
    gives the negative away without looking at the clip. With the corpus's ``usage``, a swap that makes a pair of
    neighbouring words no text of it has is not made, and the new phrase is drawn as often as the corpus uses it."""
    found = [(s, e, p, c) for c in categories if c in lexicons for s, e, p in _occurrences(text, lexicons[c])]
    # prefer the longest match at each position ("to the left of" over "left")
    found = [f for f in found if not any(o[0] <= f[0] and f[1] <= o[1] and o != f for o in found)]
    # a word inside a relation another dimension edits ("right" in "to the right of") states where something is,
    # not where it goes: swapped, it leaves "to the downward of", or a spatial edit filed under motion
    relations = [
        (s, e)
        for c in RELATIONS
        if c in lexicons and c not in categories
        for s, e, _ in _occurrences(text, lexicons[c])
    ]
    found = [f for f in found if not any(s <= f[0] and f[1] <= e for s, e in relations)]
    edits, weights, options_of = [], [], {}
    for start, end, phrase, category in found:
        if (phrase, category) not in options_of:  # the edited texts of a phrase, made once for all its mentions
            mentions = [f for f in found if f[2:] == (phrase, category)]
            options = [(new, _replaced(text, mentions, new)) for new in _replacements(phrase, lexicons[category])]
            if usage is not None:
                options = [(new, edited) for new, edited in options if usage.fits(text, edited)]
            counts = [1 if usage is None else usage.phrase_counts[new.lower()] for new, _ in options]
            options_of[phrase, category] = options, [count / sum(counts) for count in counts]
        options, shares = options_of[phrase, category]
        # every mention as likely as another (so no category gains by being named more often); its new phrase as
        # often as the corpus uses it
        edits += [(text[start:end], new, edited) for new, edited in options]
        weights += shares
    edit = _pick(edits, rng, weights)
    if edit is None:
        return None
    old, new, edited = edit
    return edited, f"Changed '{old}' to '{new}'"


def _replaced(text: str, mentions: list[tuple[int, int, str, str]], new: str) -> str:
    """``text`` with each of ``mentions`` ((start, end, ...) of one phrase) replaced by ``new``, articles agreeing."""
    for start, end, *_ in sorted(mentions, reverse=True):
        word = _match_case(text[start:end], new)
        text, shift = _fix_article(text, start, word)
        text = text[: start + shift] + word + text[end + shift :]
    return text


def swap_order(
    text: str,
    categories: list[str],
    rng: np.random.Generator,
    lexicons: dict[str, tuple[str, ...]] = LEXICONS,
    usage: CorpusUsage | None = None,
) -> tuple[str, str] | None:
    """Exchange two different phrases of one category inside a sentence that states an order; with the corpus's
    ``usage``, not where that makes a pair of neighbouring words no text of it has."""
    sentences = [m for m in _SENTENCE.finditer(text) if re.search(r"\b(then|before|after|first)\b", m.group(), re.I)]
    options = []
    for m in sentences:
        for c in categories:
            hits = sorted(_occurrences(text, lexicons.get(c, ()), m.start(), m.end()))
            pairs = [
                (a, b)
                for i, a in enumerate(hits)
                for b in hits[i + 1 :]
                if a[2].lower() != b[2].lower() and a[1] <= b[0]
            ]
            options += pairs
    edits = [
        (
            text[s1:e1],
            text[s2:e2],
            text[:s1]
            + _match_case(text[s1:e1], text[s2:e2].lower())
            + text[e1:s2]
            + _match_case(text[s2:e2], text[s1:e1].lower())
            + text[e2:],
        )
        for (s1, e1, _), (s2, e2, _) in options
    ]
    edit = _pick([edit for edit in edits if usage is None or usage.fits(text, edit[2])], rng)
    if edit is None:
        return None
    first, second, swapped = edit
    return swapped, f"Swapped the order of '{first}' and '{second}'"


def closed_lexicons(
    texts: Iterable[str], lexicons: dict[str, tuple[str, ...]] = LEXICONS
) -> dict[str, tuple[str, ...]]:
    """Each category cut to the phrases that occur in ``texts``; a category left with fewer than two
    phrases has nothing to swap to and is dropped."""
    corpus = "\n".join(texts)
    closed = {
        category: tuple(sorted({phrase for _, _, phrase in _occurrences(corpus, phrases)}, key=phrases.index))
        for category, phrases in lexicons.items()
    }
    return {category: phrases for category, phrases in closed.items() if len(phrases) >= 2}


class RuleBackend:
    """meta: {"original": str, "categories": [...], "mode": "swap" | "order"}.

    ``vocabulary``: texts of the corpus (its captions); swaps then only use phrases that occur in them, as often as
    they occur, and make only pairs of neighbouring words that occur in them (`CorpusUsage`)."""

    name = "rules"

    def __init__(self, vocabulary: Iterable[str] | None = None):
        texts = None if vocabulary is None else list(vocabulary)
        self.lexicons = LEXICONS if texts is None else closed_lexicons(texts)
        self.usage = None if texts is None else CorpusUsage.of(texts)

    def complete(self, request: ChatRequest) -> str:
        meta = request.meta
        rng = np.random.default_rng(request.seed)
        edit = (swap_order if meta.get("mode") == "order" else swap_in_category)(
            meta["original"], list(meta.get("categories", ())), rng, self.lexicons, self.usage
        )
        if edit is None:
            return json.dumps(
                {
                    "modified_description": meta["original"],
                    "modification_detail": "no word of the target dimension could be changed",
                }
            )
        return json.dumps({"modified_description": edit[0], "modification_detail": edit[1]})
