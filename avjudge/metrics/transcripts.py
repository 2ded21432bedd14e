"""Comparing a transcript with the words a prompt asked for: Whisper-style normalisation, edit-distance
alignment, WER / CER, and AVBench's speech-content components.

Normalisation (both texts): Unicode NFKC, lower case, text in brackets or parentheses removed
(Whisper's "[music]", "(laughs)"), every punctuation mark and symbol a space except an apostrophe
inside a word, English numbers written as words ("2" -> "two", "21" -> "twenty one"), runs of
spaces collapsed. Chinese, Japanese and Korean text is compared character by character (CER),
everything else word by word.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

_ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
# Function words: what a keyword is not (keyword completeness counts content words only).
STOPWORDS = frozenset(
    """a an the and or but if then so of to in on at by for with from as is are was were be been being
am do does did have has had i you he she it we they me him her us them my your his its our their this that these those
there here not no yes oh uh um ah okay ok just very too also can will would shall should could may might must""".split()
)


def number_words(n: int) -> str:
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else " " + _ONES[n % 10])
    for size, name in ((10**9, "billion"), (10**6, "million"), (1000, "thousand"), (100, "hundred")):
        if n >= size:
            rest = n % size
            return f"{number_words(n // size)} {name}" + ("" if rest == 0 else " " + number_words(rest))
    raise AssertionError(n)


def is_cjk(text: str) -> bool:
    return bool(_CJK.search(text))


def normalize(text: str, english_numbers: bool = True) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"[\[(][^\])]*[\])]", " ", text)
    text = "".join(c if c == "'" or unicodedata.category(c)[0] not in "PS" else " " for c in text)
    text = re.sub(r"(?<!\w)'|'(?!\w)", " ", text)  # quotes, not apostrophes inside words
    if english_numbers:
        text = re.sub(
            r"\d+", lambda m: f" {number_words(int(m.group()))} " if len(m.group()) <= 12 else m.group(), text
        )
    return " ".join(text.split())


def tokens(text: str) -> list[str]:
    """Normalised words, or characters for Chinese, Japanese and Korean."""
    if is_cjk(text):
        return [c for c in normalize(text, english_numbers=False) if not c.isspace()]
    return normalize(text).split()


@dataclass(frozen=True)
class Alignment:
    hits: int
    substitutions: int
    deletions: int  # reference tokens the hypothesis lacks
    insertions: int  # hypothesis tokens with no reference counterpart
    ref_length: int
    hyp_length: int

    @property
    def error_rate(self) -> float:
        """(S + D + I) / N over reference tokens (WER for words, CER for characters)."""
        errors = self.substitutions + self.deletions + self.insertions
        return errors / self.ref_length if self.ref_length else float(errors > 0)


def align(ref: list[str], hyp: list[str]) -> Alignment:
    """Levenshtein alignment; among paths with the fewest edits, the one with the most hits."""
    n, m = len(ref), len(hyp)
    # best[i][j] = (edits, -hits) of aligning ref[:i] with hyp[:j]; step[i][j] = the move that got there
    best = [[(0, 0)] * (m + 1) for _ in range(n + 1)]
    step = [[""] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        best[i][0], step[i][0] = (i, 0), "del"
    for j in range(1, m + 1):
        best[0][j], step[0][j] = (j, 0), "ins"
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            same = ref[i - 1] == hyp[j - 1]
            e, h = best[i - 1][j - 1]
            options = [
                ((e + (not same), h - same), "hit" if same else "sub"),
                ((best[i - 1][j][0] + 1, best[i - 1][j][1]), "del"),
                ((best[i][j - 1][0] + 1, best[i][j - 1][1]), "ins"),
            ]
            best[i][j], step[i][j] = min(options)
    counts = {"hit": 0, "sub": 0, "del": 0, "ins": 0}
    i, j = n, m
    while i or j:
        move = step[i][j]
        counts[move] += 1
        i, j = (i - 1, j - 1) if move in ("hit", "sub") else (i - 1, j) if move == "del" else (i, j - 1)
    return Alignment(counts["hit"], counts["sub"], counts["del"], counts["ins"], n, m)


def keyword_completeness(ref: list[str], hyp: list[str]) -> float:
    """Share of the reference's content words (as a multiset) that the hypothesis contains."""
    keywords = [t for t in ref if t not in STOPWORDS] or ref
    if not keywords:
        return 1.0
    available: dict[str, int] = {}
    for t in hyp:
        available[t] = available.get(t, 0) + 1
    found = 0
    for t in keywords:
        if available.get(t, 0):
            available[t] -= 1
            found += 1
    return found / len(keywords)


@dataclass(frozen=True)
class SpeechContentWeights:
    completeness: float = 0.5
    accuracy: float = 0.5


def speech_content(reference: str, transcript: str, weights: SpeechContentWeights = SpeechContentWeights()) -> dict:
    """AVBench's speech-content components and score (0-100), with WER and CER.

    completeness = keyword completeness; accuracy = max(0, 1 - WER) (CER for CJK);
    hallucination = inserted tokens / transcript tokens (extraneous content);
    score = 100 * (w_c * completeness + w_a * accuracy) * (1 - hallucination).
    AVBench does not publish its weights; these are avjudge's, set in SpeechContentWeights.
    """
    ref, hyp = tokens(reference), tokens(transcript)
    alignment = align(ref, hyp)
    cer = align(list("".join(ref)), list("".join(hyp))).error_rate
    accuracy = max(0.0, 1.0 - alignment.error_rate)
    hallucination = alignment.insertions / len(hyp) if hyp else 0.0
    completeness = keyword_completeness(ref, hyp)
    total = weights.completeness + weights.accuracy
    score = 100.0 * (weights.completeness * completeness + weights.accuracy * accuracy) / total * (1 - hallucination)
    return {
        "sc_score": score,
        "sc_completeness": completeness,
        "sc_accuracy": accuracy,
        "sc_hallucination": hallucination,
        "sc_wer": None if is_cjk(reference) else alignment.error_rate,
        "sc_cer": cer,
    }
