"""Turn a stored pair record into a judge sample: decode its source, apply its negative recipe."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Mapping
from pathlib import Path

import numpy as np

from ..config import ConfigError
from ..jsonl import numbered_jsonl
from ..media import MediaClip, decode
from ..perturb import STRATEGIES, Context, PerturbError, SourcePool, get_strategy
from ..perturb.base import Bounds, Strategy
from ..perturb.pool import declared_duration
from .windows import placed_negative

NEEDS = {"av": (True, True), "vt": (True, False), "at": (False, True)}


POSITIVE, TEXT_EDIT = "positive", "text_edit"  # the strategies of a positive and of a caption edit (vt, at)
_WINDOW = {"start_s": Bounds(0.0), "duration_s": Bounds(0.0, above=True)}
WINDOW_ROUNDING_S = 1e-3  # a window the build placed at its source's end, in floating point


def load_pairs(
    dataset: str | Path, task: str, split: str, limit: int | None = None, sources: Collection[str] | None = None
) -> list[dict]:
    """The pair records of ``task`` in ``split`` of a folder made by `avjudge data build`, each checked
    (`check_pair`; ``sources``: the ids its records may name, where known); ``limit``: at most that many, a fixed
    random subset in stored order.

    Raises:
        ConfigError: no such file, or a record that is not a pair of this task, naming ``file:line`` and the field.
    """
    path = Path(dataset) / "pairs" / task / f"{split}.jsonl"
    if not path.exists():
        raise ConfigError(f"{path}: no {task} pairs for split {split!r}; build them with `avjudge data build`")
    try:
        records, lines = [], {}
        for line, record in numbered_jsonl(path, True):
            records.append(check_pair(record, task, f"{path}:{line}", sources))
            if record["id"] in lines:  # a pair's scores and evaluations are kept by id: a second one would replace it
                raise ConfigError(
                    f"{path}:{line}: id: {record['id']!r} is line {lines[record['id']]}'s too; correct the line or "
                    "rebuild with `avjudge data build`"
                )
            lines[record["id"]] = line
    except ConfigError:  # a record's, named
        raise
    except ValueError as err:  # a line that is not JSON, or not an object
        raise ConfigError(f"{err}; correct the line or rebuild with `avjudge data build`") from err
    if limit is not None and len(records) > limit:
        rng = np.random.default_rng(0)
        records = [records[i] for i in sorted(rng.choice(len(records), limit, replace=False))]
    return records


def check_pair(record: dict, task: str, where: str, sources: Collection[str] | None = None) -> dict:
    """``record``, checked as a pair of ``task``'s judge: what training, calibration and the audits read of it, so a
    hand-edited line is refused where it is read, not mid-run. ``sources``: the source ids it may name; a mapping of
    them to their manifest records also holds its window within its source's ``duration`` where one is given.

    Raises:
        ConfigError: naming ``where`` (``file:line``) and the field.
    """

    def refuse(name: str, problem: str):
        raise ConfigError(f"{where}: {name}: {problem}; correct the line or rebuild with `avjudge data build`")

    for name in ("id", "source_id", "strategy"):
        if not isinstance(record.get(name), str) or not record[name]:
            refuse(name, f"a pair names its {name} as a string, not {record.get(name)!r}")
    if record.get("dimension") != task:
        refuse("dimension", f"{record.get('dimension')!r} in the {task} pairs")
    label, strategy = record.get("label"), record["strategy"]
    if not isinstance(label, int) or label not in (0, 1):
        refuse("label", f"1 (a match) or 0 (a negative), not {label!r}")
    known = (POSITIVE, TEXT_EDIT, *STRATEGIES)
    if strategy not in known:
        refuse("strategy", f"{strategy!r} is none of {list(known)}")
    # a positive is the source itself, or it with an in-sync nuisance; a negative is made by a strategy or an edit
    positive = strategy == POSITIVE or (strategy in STRATEGIES and STRATEGIES.lookup(strategy).family == "nuisance")
    if bool(label) != positive:
        refuse("label", f"{label} for a pair made by {strategy!r}")
    params = record.get("params")
    if strategy in STRATEGIES:
        try:
            STRATEGIES.lookup(strategy).check_params(params)
        except PerturbError as err:
            refuse("params", str(err))
        unnoticed = STRATEGIES.lookup(strategy).unnoticed_reason(params)
        if unnoticed and not record.get("tie"):  # a recipe with ties: true marks such a negative a tie
            refuse("params", unnoticed)
    elif not isinstance(params, dict):
        refuse("params", f"a mapping, not {params!r}")
    media = record.get("media")
    if not isinstance(media, dict) or not isinstance(media.get("video"), str):
        refuse("media", f"a mapping with the source's video path, not {media!r}")
    if not isinstance(media.get("audio", ""), str):
        refuse("media.audio", f"a path, not {media['audio']!r}")
    for name in ("text", "utterance"):
        if not isinstance(record.get(name) or "", str):
            refuse(name, f"a string or null, not {record[name]!r}")
    if "tie" in record and not isinstance(record["tie"], bool):
        refuse("tie", f"true or false, not {record['tie']!r}")
    seed = record.get("seed", 0)  # a build writes the seed of its draws: a whole number or a list of them
    seeds = seed if isinstance(seed, list) and seed else [seed]
    if not all(isinstance(part, int) and not isinstance(part, bool) and part >= 0 for part in seeds):
        refuse("seed", f"a whole number 0 or more, or a list of them, not {seed!r}")
    window = record.get("window")
    if window is not None:
        if not isinstance(window, dict) or set(window) != set(_WINDOW):
            refuse("window", f"{{start_s, duration_s}} in seconds, not {window!r}")
        for name, bounds in _WINDOW.items():
            try:
                bounds.check(name, window[name])
            except PerturbError as err:
                refuse("window", str(err))
        source = sources.get(record["source_id"]) if isinstance(sources, Mapping) else None
        length = declared_duration(source) if source else None
        if length is not None and window["start_s"] + window["duration_s"] > length + WINDOW_ROUNDING_S:
            refuse(
                "window", f"it ends at {window['start_s'] + window['duration_s']:.3f} s, past its source's {length:g} s"
            )
    if sources is not None:
        named = [record["source_id"], *([params["source"]] if "source" in params else []), *params.get("sources", [])]
        unknown = [source for source in named if source not in sources]
        if unknown:
            refuse(
                "source_id" if unknown[0] == record["source_id"] else "params",
                f"no source {unknown[0]!r} in the dataset",
            )
    return record


def _decode_source(
    path: str, video: bool, audio: bool, fps: float | None, sample_rate: int, max_pixels: int | None = None
) -> MediaClip:
    return decode(
        path,
        video=video,
        audio=audio,
        fps=fps,
        sample_rate=sample_rate if audio else None,
        channels=1 if audio else None,
        max_pixels=max_pixels if video else None,
    )


def _nbytes(clip: MediaClip) -> int:
    return sum(a.nbytes for a in (clip.frames, clip.timestamps, clip.audio) if a is not None)


class DecodedSources:
    """Source clips as pairs decode them, the most recently used kept in memory up to ``budget_mb``: a source that
    many pairs share, or whose negatives are redrawn every epoch, is decoded once (`benchmarks/tiny_train_step.py`
    times what that saves). Kept clips are read-only, so a strategy that changed its input in place would fail
    loudly instead of corrupting later pairs."""

    def __init__(self, budget_mb: float):
        if budget_mb <= 0:
            raise ConfigError(f"the decoded-source cache needs a positive budget, not {budget_mb} MB")
        self.budget, self.used = int(budget_mb * 2**20), 0
        self._clips: OrderedDict[tuple, MediaClip] = OrderedDict()

    def __len__(self) -> int:
        return len(self._clips)

    def __call__(
        self, path: str, video: bool, audio: bool, fps: float | None, sample_rate: int, max_pixels: int | None = None
    ) -> MediaClip:
        key = (str(path), video, audio, fps, sample_rate, max_pixels)
        if key in self._clips:
            self._clips.move_to_end(key)
            return self._clips[key]
        clip = _decode_source(path, video, audio, fps, sample_rate, max_pixels)
        size = _nbytes(clip)
        if size <= self.budget:
            for array in (clip.frames, clip.timestamps, clip.audio):
                if array is not None:
                    array.flags.writeable = False
            self._clips[key], self.used = clip, self.used + size
            while self.used > self.budget:
                self.used -= _nbytes(self._clips.popitem(last=False)[1])
        return clip


class PairDataset:
    """Map-style dataset of pair records (usable with a torch DataLoader): item -> (record, clip).

    ``strategies`` (name -> the strategy as the dataset's recipe configured it) lets `redrawn` draw a negative's
    parameters anew; its partners then come from ``pool``, which should hold the records' own split only.
    ``sources`` keeps decoded source clips for later pairs (None: every pair decodes its source). ``max_pixels``
    scales larger frames down as they are decoded, as scoring does for the judge (`avjudge.judges.Judge.needs`).
    """

    def __init__(
        self,
        records: list[dict],
        pool: SourcePool,
        sample_rate: int = 16000,
        fps: float | None = None,
        root: Path | None = None,
        strategies: dict[str, Strategy] | None = None,
        sources: DecodedSources | None = None,
        max_pixels: int | None = None,
    ):
        self.records, self.pool, self.sample_rate, self.fps, self.root = records, pool, sample_rate, fps, root
        self.strategies, self.sources, self.max_pixels = strategies or {}, sources, max_pixels

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index: int) -> tuple[dict, MediaClip]:
        record = self.records[index]
        return record, self._clip(record)

    def _clip(self, record: dict) -> MediaClip:
        return pair_clip(
            record, self.pool, self.sample_rate, self.fps, self.root, self.sources, max_pixels=self.max_pixels
        )

    def redrawn(self, index: int, seed: list[int]) -> tuple[dict, MediaClip] | None:
        """Item ``index`` with its negative's parameters drawn anew (``seed``: the draw's numpy seed); None where
        there is nothing to redraw: a positive, a caption edit, a materialised negative, a strategy not given, or
        one that cannot draw here (as the build, which then tried another strategy)."""
        record = self.records[index]
        strategy = self.strategies.get(record["strategy"])
        if record["label"] or strategy is None or (record.get("media") or {}).get("audio"):
            return None
        context = Context(record=self.pool.records[record["source_id"]], pool=self.pool)
        rng = np.random.default_rng(seed)
        try:
            window = record.get("window")
            if window:  # a new draw keeps another stretch of the source: the window is placed anew, as the build does
                duration = self.pool.duration(record["source_id"])
                params, window = placed_negative(rng, strategy, context, duration, window["duration_s"])
            else:
                params = strategy.sample(rng, None, context)
        except PerturbError:
            return None
        record = {**record, "params": params, **({"window": window} if window else {})}
        if "tie" in record:  # built with ties marked: the new draw is marked anew
            record["tie"] = strategy.unnoticed(params)
        return record, self._clip(record)


def pair_clip(
    record: dict,
    pool: SourcePool,
    sample_rate: int = 16000,
    fps: float | None = None,
    root: Path | None = None,
    sources: DecodedSources | None = None,
    frames: bool = True,
    max_pixels: int | None = None,
) -> MediaClip:
    """The clip a pair shows its judge: materialised audio if stored, else the recipe applied now, cut to the pair's
    window if it has one; ``sources`` decodes (and keeps) the source clip if given; ``frames=False`` decodes no
    frames, all that writing a negative's audio needs (every AV strategy changes the audio alone); ``max_pixels``
    scales larger frames down as they are decoded."""
    source = pool.records[record["source_id"]]
    decode_source = _decode_source if sources is None else sources  # (an empty cache is falsy)
    video, audio = NEEDS[record["dimension"]]
    clip = decode_source(source["video"], video and frames, audio, fps, sample_rate, max_pixels)
    return pair_view(record, clip, pool, root)


def pair_view(record: dict, clip: MediaClip, pool: SourcePool, root: Path | None = None) -> MediaClip:
    """What a pair shows its judge of its already decoded source ``clip``: its materialised audio, else its negative
    applied now, cut to its window if it has one."""
    window = record.get("window")
    audio_file = (record.get("media") or {}).get("audio")
    if audio_file:  # written from the windowed negative: only the picture is cut here
        path = Path(audio_file) if root is None or Path(audio_file).is_absolute() else root / audio_file
        clip = _cut(clip, window) if window else clip
        return clip.replace(audio=decode(path, video=False).audio)
    if record["strategy"] in STRATEGIES:
        context = Context(record=pool.records[record["source_id"]], pool=pool)
        clip = get_strategy(record["strategy"]).apply(clip, record["params"], context)
    return _cut(clip, window) if window else clip


def _cut(clip: MediaClip, window: dict) -> MediaClip:
    """``clip`` cut to a pair's ``window`` (source seconds; the clip may itself start later in its source)."""
    try:
        return clip.window(window["start_s"] - clip.start, window["duration_s"])
    except ValueError as err:
        raise PerturbError(f"{clip.source or 'clip'}: {err}") from err
