"""Turn a stored pair record into a judge sample: decode its source, apply its negative recipe."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..config import ConfigError
from ..jsonl import read_jsonl
from ..media import MediaClip, decode
from ..perturb import STRATEGIES, Context, PerturbError, SourcePool, get_strategy
from ..perturb.base import Strategy

NEEDS = {"av": (True, True), "vt": (True, False), "at": (False, True)}


def load_pairs(dataset: str | Path, task: str, split: str, limit: int | None = None) -> list[dict]:
    """The pair records of ``task`` in ``split`` of a folder made by `avjudge data build`; ``limit``: at most
    that many, a fixed random subset in stored order."""
    path = Path(dataset) / "pairs" / task / f"{split}.jsonl"
    if not path.exists():
        raise ConfigError(f"{path}: no {task} pairs for split {split!r}; build them with `avjudge data build`")
    records = list(read_jsonl(path))
    if limit is not None and len(records) > limit:
        rng = np.random.default_rng(0)
        records = [records[i] for i in sorted(rng.choice(len(records), limit, replace=False))]
    return records


class PairDataset:
    """Map-style dataset of pair records (usable with a torch DataLoader): item -> (record, clip).

    ``strategies`` (name -> the strategy as the dataset's recipe configured it) lets `redrawn` draw a negative's
    parameters anew; its partners then come from ``pool``, which should hold the records' own split only.
    """

    def __init__(self, records: list[dict], pool: SourcePool, sample_rate: int = 16000, fps: float | None = None,
                 root: Path | None = None, strategies: dict[str, Strategy] | None = None):
        self.records, self.pool, self.sample_rate, self.fps, self.root = records, pool, sample_rate, fps, root
        self.strategies = strategies or {}

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index: int) -> tuple[dict, MediaClip]:
        record = self.records[index]
        return record, pair_clip(record, self.pool, self.sample_rate, self.fps, self.root)

    def redrawn(self, index: int, seed: list[int]) -> tuple[dict, MediaClip] | None:
        """Item ``index`` with its negative's parameters drawn anew (``seed``: the draw's numpy seed); None where
        there is nothing to redraw: a positive, a caption edit, a materialised negative, a strategy not given, or
        one that cannot draw here (as the build, which then tried another strategy)."""
        record = self.records[index]
        strategy = self.strategies.get(record["strategy"])
        if record["label"] or strategy is None or (record.get("media") or {}).get("audio"):
            return None
        context = Context(record=self.pool.records[record["source_id"]], pool=self.pool)
        try:
            params = strategy.sample(np.random.default_rng(seed), None, context)
        except PerturbError:
            return None
        record = {**record, "params": params}
        return record, pair_clip(record, self.pool, self.sample_rate, self.fps, self.root)


def pair_clip(record: dict, pool: SourcePool, sample_rate: int = 16000, fps: float | None = None,
              root: Path | None = None) -> MediaClip:
    """The clip a pair shows its judge: materialised audio if stored, else the recipe applied now."""
    source = pool.records[record["source_id"]]
    needs_video, needs_audio = NEEDS[record["dimension"]]
    clip = decode(source["video"], video=needs_video, audio=needs_audio, fps=fps,
                  sample_rate=sample_rate if needs_audio else None, channels=1 if needs_audio else None)
    audio_file = (record.get("media") or {}).get("audio")
    if audio_file:
        path = Path(audio_file) if root is None or Path(audio_file).is_absolute() else root / audio_file
        return clip.replace(audio=decode(path, video=False).audio)
    if record["strategy"] in STRATEGIES:
        return get_strategy(record["strategy"]).apply(clip, record["params"], Context(record=source, pool=pool))
    return clip
