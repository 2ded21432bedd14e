"""The offline rule backend: minimal, category-preserving swaps from lexicons.

It reads what to change from ``request.meta`` (the original text and the lexicon
categories of the target dimension) and answers in the same JSON as an LLM would, so the
quality control downstream treats both alike. Deterministic for a given request seed.

Given a ``vocabulary`` (the corpus's own texts), it swaps only to phrases those texts use: a
word that no caption of the corpus has gives a negative away by its text alone, and a judge
trained on such pairs learns to read instead of to look (``avjudge data audit`` measures it).
"""
from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable

import numpy as np

from .base import ChatRequest
from .lexicons import LEXICONS

_SENTENCE = re.compile(r"[^.!?]+[.!?]?")
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
    return text[:m.start(1)] + want + text[m.end(1):], len(want) - len(m.group(1))


# lexicon categories whose phrases name a place relative to something else, edited whole or not at all
RELATIONS = ("spatial", "position")

# "one" takes a singular noun: swapped with another number it leaves "one beats" or "two shape is",
# a grammar slip that gives the negative away by its text alone
_SINGULAR = frozenset({"one"})


def _replacements(phrase: str, phrases: tuple[str, ...]) -> list[str]:
    """The category's other phrases that fit where ``phrase`` stands (same grammatical number)."""
    singular = phrase.lower() in _SINGULAR
    return [w for w in phrases if w.lower() != phrase.lower() and (w.lower() in _SINGULAR) == singular]


def swap_in_category(text: str, categories: list[str], rng: np.random.Generator,
                     lexicons: dict[str, tuple[str, ...]] = LEXICONS) -> tuple[str, str] | None:
    """Replace a phrase of a category with another phrase of the same category, at every place the text
    uses it: a caption that calls an object "purple" once and "cyan" twice contradicts itself, and that
    gives the negative away without looking at the clip."""
    found = [(s, e, p, c) for c in categories if c in lexicons for s, e, p in _occurrences(text, lexicons[c])]
    # prefer the longest match at each position ("to the left of" over "left")
    found = [f for f in found if not any(o[0] <= f[0] and f[1] <= o[1] and o != f for o in found)]
    # a word inside a relation another dimension edits ("right" in "to the right of") states where something is,
    # not where it goes: swapped, it leaves "to the downward of", or a spatial edit filed under motion
    relations = [(s, e) for c in RELATIONS if c in lexicons and c not in categories
                 for s, e, _ in _occurrences(text, lexicons[c])]
    found = [f for f in found if not any(s <= f[0] and f[1] <= e for s, e in relations)]
    found = [f for f in found if _replacements(f[2], lexicons[f[3]])]
    if not found:
        return None
    start, end, phrase, category = found[int(rng.integers(len(found)))]
    options = _replacements(phrase, lexicons[category])
    new, old = options[int(rng.integers(len(options)))], text[start:end]
    for start, end, _, _ in sorted((f for f in found if f[2:] == (phrase, category)), reverse=True):
        word = _match_case(text[start:end], new)
        text, shift = _fix_article(text, start, word)
        text = text[:start + shift] + word + text[end + shift:]
    return text, f"Changed '{old}' to '{new}'"


def swap_order(text: str, categories: list[str], rng: np.random.Generator,
               lexicons: dict[str, tuple[str, ...]] = LEXICONS) -> tuple[str, str] | None:
    """Exchange two different phrases of one category inside a sentence that states an order."""
    sentences = [m for m in _SENTENCE.finditer(text) if re.search(r"\b(then|before|after|first)\b", m.group(), re.I)]
    options = []
    for m in sentences:
        for c in categories:
            hits = sorted(_occurrences(text, lexicons.get(c, ()), m.start(), m.end()))
            pairs = [(a, b) for i, a in enumerate(hits) for b in hits[i + 1:]
                     if a[2].lower() != b[2].lower() and a[1] <= b[0]]
            options += pairs
    if not options:
        return None
    (s1, e1, _), (s2, e2, _) = options[int(rng.integers(len(options)))]
    first, second = text[s1:e1], text[s2:e2]
    swapped = text[:s1] + _match_case(first, second.lower()) + text[e1:s2] + _match_case(second, first.lower()) + text[e2:]
    return swapped, f"Swapped the order of '{first}' and '{second}'"


def closed_lexicons(texts: Iterable[str], lexicons: dict[str, tuple[str, ...]] = LEXICONS) -> dict[str, tuple[str, ...]]:
    """Each category cut to the phrases that occur in ``texts``; a category left with fewer than two
    phrases has nothing to swap to and is dropped."""
    corpus = "\n".join(texts)
    closed = {category: tuple(sorted({phrase for _, _, phrase in _occurrences(corpus, phrases)},
                                     key=phrases.index))
              for category, phrases in lexicons.items()}
    return {category: phrases for category, phrases in closed.items() if len(phrases) >= 2}


class RuleBackend:
    """meta: {"original": str, "categories": [...], "mode": "swap" | "order"}.

    ``vocabulary``: texts of the corpus (its captions); swaps then only use phrases that occur in them."""

    name = "rules"

    def __init__(self, vocabulary: Iterable[str] | None = None):
        self.lexicons = LEXICONS if vocabulary is None else closed_lexicons(vocabulary)

    def complete(self, request: ChatRequest) -> str:
        meta = request.meta
        rng = np.random.default_rng(request.seed)
        edit = (swap_order if meta.get("mode") == "order" else swap_in_category)(
            meta["original"], list(meta.get("categories", ())), rng, self.lexicons)
        if edit is None:
            return json.dumps({"modified_description": meta["original"],
                               "modification_detail": "no word of the target dimension was found"})
        return json.dumps({"modified_description": edit[0], "modification_detail": edit[1]})
