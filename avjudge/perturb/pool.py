"""Other clips a strategy may borrow from: random or caption-nearest audio, voices, texts."""
from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import Path

import numpy as np

from ..media import decode, remix
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


class SourcePool:
    """Source records (``id``, ``video`` path, ``captions``) with cached audio decoding."""

    def __init__(self, records: list[dict], cache_size: int = 64):
        if not records:
            raise PerturbError("the source pool is empty")
        self.records = {r["id"]: r for r in records}
        self.ids = list(self.records)
        self._audio: OrderedDict[tuple, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._index = None

    def audio(self, source_id: str, sample_rate: int, channels: int) -> np.ndarray:
        key = (source_id, sample_rate, channels)
        if key not in self._audio:
            record = self.records[source_id]
            clip = decode(Path(record["video"]), video=False, sample_rate=sample_rate, compute_hash=False)
            self._audio[key] = remix(clip.audio, [], channels) if clip.channels != channels else clip.audio
            if len(self._audio) > self._cache_size:
                self._audio.popitem(last=False)
        self._audio.move_to_end(key)
        return self._audio[key]

    def random_other(self, rng: np.random.Generator, exclude: str | None) -> str:
        others = [i for i in self.ids if i != exclude]
        if not others:
            raise PerturbError("the pool holds no other clip")
        return others[int(rng.integers(len(others)))]

    def nearest(self, source_id: str, rng: np.random.Generator, k: int = 3) -> str:
        """One of the k clips whose audio caption is most similar (never an identical caption)."""
        if self._index is None:
            texts = [(self.records[i].get("captions") or {}).get("audio", "") for i in self.ids]
            self._index = _tfidf(texts)
        row = self.ids.index(source_id)
        sims = self._index @ self._index[row]
        own = (self.records[source_id].get("captions") or {}).get("audio", "")
        candidates = [j for j in np.argsort(-sims)
                      if self.ids[j] != source_id and (self.records[self.ids[j]].get("captions") or {}).get("audio") != own]
        if not candidates:
            raise PerturbError("no clip with a different audio caption in the pool")
        return self.ids[int(candidates[int(rng.integers(min(k, len(candidates))))])]

    def utterances(self, exclude: str | None = None) -> list[tuple[str, str]]:
        return [(i, (r.get("captions") or {}).get("utterance") or "") for i, r in self.records.items()
                if i != exclude and (r.get("captions") or {}).get("utterance")]
