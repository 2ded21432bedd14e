"""Other clips a strategy may borrow from: random or caption-nearest audio, voices, texts."""

from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import Path

import numpy as np

from ..media import MediaError, decode, probe, remix
from .base import PerturbError

_WORD = re.compile(r"[a-z]+")


def _tfidf(texts: list[str]) -> np.ndarray:
    docs = [_WORD.findall(t.lower()) for t in texts]
    vocab = {w: i for i, w in enumerate(sorted({w for d in docs for w in d}))}
    tf = np.zeros((len(docs), max(len(vocab), 1)))
    for row, words in enumerate(docs):
        for w in words:
            tf[row, vocab[w]] += 1
    idf = np.log((1 + len(docs)) / (1 + (tf > 0).sum(axis=0))) + 1
    mat = tf * idf
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    return mat / np.where(norms == 0, 1, norms)


def declared_duration(record: dict) -> float | None:
    """A source record's length in seconds as its manifest gives it (``duration``, or ``meta.duration``; a world
    manifest has it), None where it gives none."""
    return record.get("duration") or (record.get("meta") or {}).get("duration")


class SourcePool:
    """Source records (``id``, ``video`` path, ``captions``) with cached audio decoding."""

    def __init__(self, records: list[dict], cache_size: int = 64):
        if not records:
            raise PerturbError("the source pool is empty")
        self.records = {r["id"]: r for r in records}
        self.ids = list(self.records)
        self.index = {source_id: i for i, source_id in enumerate(self.ids)}
        self._audio: OrderedDict[tuple, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._tfidf = None
        self._caption_group = None
        self._durations: dict[str, float] = {}
        self._utterances = [
            (i, (r.get("captions") or {}).get("utterance") or "")
            for i, r in self.records.items()
            if (r.get("captions") or {}).get("utterance")
        ]

    def audio(self, source_id: str, sample_rate: int, channels: int) -> np.ndarray:
        key = (source_id, sample_rate, channels)
        if key not in self._audio:
            record = self.records[source_id]
            clip = decode(Path(record["video"]), video=False, sample_rate=sample_rate)
            self._audio[key] = remix(clip.audio, [], channels) if clip.channels != channels else clip.audio
            if len(self._audio) > self._cache_size:
                self._audio.popitem(last=False)
        self._audio.move_to_end(key)
        return self._audio[key]

    def duration(self, source_id: str) -> float:
        """The source's length in seconds: its record's ``duration`` (a world manifest has it), else probed once."""
        if source_id not in self._durations:
            record = self.records[source_id]
            seconds = declared_duration(record)
            if not seconds:
                try:
                    seconds = probe(record["video"]).duration
                except MediaError as err:
                    raise PerturbError(str(err)) from err
                if not seconds:
                    raise PerturbError(f"{record['video']}: its container does not say how long it is")
            self._durations[source_id] = float(seconds)
        return self._durations[source_id]

    def random_other(self, rng: np.random.Generator, exclude: str | None) -> str:
        skip = self.index.get(exclude)
        n = len(self.ids) - (skip is not None)
        if n < 1:
            raise PerturbError("the pool holds no other clip")
        j = int(rng.integers(n))
        return self.ids[j + 1 if skip is not None and j >= skip else j]

    def nearest(self, source_id: str, rng: np.random.Generator, k: int = 3) -> str:
        """One of the k clips whose audio caption is most similar (never an identical caption)."""
        if self._tfidf is None:
            texts = [(self.records[i].get("captions") or {}).get("audio", "") for i in self.ids]
            self._tfidf = _tfidf(texts)
            groups: dict[str, int] = {}
            self._caption_group = np.array([groups.setdefault(t, len(groups)) for t in texts])
        if source_id not in self.index:
            raise PerturbError(f"{source_id} is not in the pool: the most similar sound needs the clip's own audio "
                               "caption; give a pool that holds it")  # fmt: skip
        row = self.index[source_id]
        sims = self._tfidf @ self._tfidf[row]
        sims[self._caption_group == self._caption_group[row]] = -np.inf  # itself and identical captions
        if not np.isfinite(sims).any():
            raise PerturbError("no clip with a different audio caption in the pool")
        best = []
        for _ in range(min(k, int(np.isfinite(sims).sum()))):  # k is small: k passes of argmax
            j = int(np.argmax(sims))
            best.append(j)
            sims[j] = -np.inf
        return self.ids[best[int(rng.integers(len(best)))]]

    def utterances(self, exclude: str | None = None) -> list[tuple[str, str]]:
        return [u for u in self._utterances if u[0] != exclude]
