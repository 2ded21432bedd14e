"""`avjudge data build`: source manifest + recipe -> balanced pair datasets per judge.

Every pair is a pure function of (recipe seed, judge, split, slot), and files are written
in slot order, so a killed build resumes by counting what it finished and ends with the
same dataset as an uninterrupted run. A negative is stored as its recipe (strategy,
params, seed); ``--materialize`` also writes its audio (float32 WAV beside the untouched
source video), which loads bit-identically to applying the recipe on the fly.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
from tqdm import tqdm

from ..config import ConfigError, dump_yaml, from_dict, load_yaml
from ..jsonl import JsonlWriter, output_lock, read_json_object, read_jsonl, write_json
from ..llm import make_backend
from ..media import MediaClip, MediaError, encode_audio
from ..perturb import STRATEGIES, Context, PerturbError, SourcePool, get_strategy
from ..perturb.base import change_db
from ..perturb.signal import UNCHANGED_DB
from ..perturb.taxonomy import taxonomy
from ..perturb.text import TextNegative, iter_rotation, make_text_negative
from ..prompts import task as judge_task
from .manifest import load_manifest
from .pairs import DecodedSources, load_pairs, pair_clip
from .recipe import Recipe
from .splits import assign_splits
from .windows import TOO_SHORT, draw_window, placed_negative, window_length

JUDGE_INDEX = {"av": 0, "vt": 1, "at": 2}
RECIPE_FILE, SPLITS_FILE = "recipe.yaml", "splits.json"  # what a built dataset keeps of how it was made
SOURCES_FILE = "manifest.sha256"  # the manifest a build began from: a resume from another is refused
TEXT_WORKERS = 8  # text negatives requested at once (an HTTP backend's own limit still applies)


@dataclass
class Slot:
    """One place in a split's output: a finished pair or a counted rejection."""

    record: dict | None = None
    rejection: dict | None = None
    negative: MediaClip | None = None  # an AV negative's sound as it was checked, for --materialize to write


def _split_sizes(total: int, weights: list[int]) -> list[int]:
    """Largest-remainder apportionment of ``total`` over ``weights``."""
    exact = [total * w / sum(weights) for w in weights]
    sizes = [int(e) for e in exact]
    for i in sorted(range(len(weights)), key=lambda i: exact[i] - sizes[i], reverse=True)[: total - sum(sizes)]:
        sizes[i] += 1
    return sizes


class _SplitBuilder:
    def __init__(
        self,
        recipe: Recipe,
        judge: str,
        split: str,
        split_index: int,
        sources: list[dict],
        n_pairs: int,
        out: Path,
        backend,
        materialize: bool,
    ):
        self.recipe, self.judge, self.split, self.sources = recipe, judge, split, sources
        self.cfg = recipe.judges[judge]
        self.key = [recipe.seed, JUDGE_INDEX[judge], split_index]
        self.n_pos = int(round(n_pairs * self.cfg.positive_fraction))
        self.n_neg = n_pairs - self.n_pos
        self.pool = SourcePool(sources)  # negatives borrow only from their own split: no leakage
        self.order = [sources[i] for i in np.random.default_rng(self.key).permutation(len(sources))]
        self.out, self.backend, self.materialize = out, backend, materialize
        self.strategies = recipe.audio_strategies(judge) if judge == "av" else {}
        self.windows: dict[str, float] = {}  # source id -> its pairs' window (cropping recipes)
        self.skipped: list[dict] = []
        self.decoded = DecodedSources(budget_mb=256)  # each source's sound decoded once, for every negative's check
        if recipe.windowed(judge):
            self._choose_windows()

    def _choose_windows(self) -> None:
        """Each source's window length; a source too short for it (or whose length is unknown) is skipped."""
        kept = []
        for source in self.order:
            try:
                duration = self.pool.duration(source["id"])
            except PerturbError as err:
                self.skipped.append({"source_id": source["id"], "reasons": [str(err)]})
                continue
            length = window_length(duration, self.strategies, self.cfg.window_s, self.cfg.min_window_s)
            if length:
                self.windows[source["id"]] = length
                kept.append(source)
            else:
                self.skipped.append({"source_id": source["id"], "reasons": [TOO_SHORT], "duration_s": duration})
        self.order = kept

    def _window(self, rng: np.random.Generator, source: dict) -> dict:
        """A window of ``source``'s length for its pairs, placed uniformly over the source (`placed_negative`
        places a negative's the same way)."""
        return draw_window(rng, (0.0, self.pool.duration(source["id"])), self.windows[source["id"]])

    def _base(self, kind: str, k: int, source: dict, label: int) -> dict:
        captions = source.get("captions") or {}
        field = judge_task(self.judge).caption_field
        text = captions.get(field) if field else None
        return {
            "id": f"{self.judge}-{self.split}-{kind}{k:07d}",
            "source_id": source["id"],
            "dimension": self.judge,
            "label": label,
            "strategy": "positive",
            "negative_type": "positive",
            "params": {},
            "media": {"video": source["video"]},
            "text": text,
            "utterance": (captions.get("utterance") or None) if self.judge == "at" else None,
            "split": self.split,
            "seed": [*self.key, k],
        }

    def positives(self) -> Iterator[Slot]:
        nuisance = get_strategy("in_sync_mute") if self.judge == "av" and self.cfg.nuisance_positives else None
        for k in range(self.n_pos):
            source = self.order[k % len(self.order)]
            record = self._base("p", k, source, 1)
            rng = np.random.default_rng([*self.key, 3, k])
            if self.windows:
                record["window"] = self._window(rng, source)
            if nuisance is not None and rng.random() < self.cfg.nuisance_positives:
                record.update(strategy=nuisance.name, params=self._nuisance(nuisance, rng, source, record))
            yield Slot(record=record)

    def _nuisance(self, nuisance, rng: np.random.Generator, source: dict, record: dict) -> dict:
        """An in-sync mute's parameters inside what the pair shows (its window, else the source)."""
        params = nuisance.sample(rng, None, Context(record=source, pool=self.pool))
        window = record.get("window") or {"start_s": 0.0, "duration_s": self.pool.duration(source["id"])}
        length = min(params["length_s"], window["duration_s"])
        start = window["start_s"] + float(rng.uniform(0.0, window["duration_s"] - length))
        return {"start_s": start, "length_s": length}

    def av_negatives(self) -> Iterator[Slot]:
        weights = self.recipe.strategy_weights("av")
        names = sorted(weights)
        probs = np.array([weights[n] for n in names]) / sum(weights.values())
        for k in range(self.n_neg):
            rng = np.random.default_rng([*self.key, 1, k])
            source = self.order[k % len(self.order)]
            errors, unchanged = [], 0
            for _ in range(10):  # another strategy when one cannot apply here (e.g. a one-clip pool)
                name = names[int(rng.choice(len(names), p=probs))]
                context = Context(record=source, pool=self.pool)
                strategy = self.strategies[name]
                try:
                    if self.windows:
                        duration, length = self.pool.duration(source["id"]), self.windows[source["id"]]
                        params, window = placed_negative(rng, strategy, context, duration, length)
                    else:
                        params = strategy.sample(rng, None, context)
                except PerturbError as err:
                    errors.append(f"{name}: {err}")
                    continue
                record = self._base("n", k, source, 0)
                record.update(strategy=name, negative_type=name, params=params)
                if self.cfg.ties:  # every negative says whether it is one (a redrawn one says anew)
                    record["tie"] = self.strategies[name].unnoticed(params)
                if self.windows:
                    record["window"] = window
                negative, change = None, 0.0
                try:
                    if self.cfg.check_changed:
                        negative = self._negative(record)
                        change = change_db(self._source_sound(record), negative)
                except (PerturbError, MediaError) as err:
                    errors.append(f"{name}: {err}")
                    continue
                if change < UNCHANGED_DB:  # the source again (a filter above all its sound, a shift of silence)
                    errors.append(f"{name}: {params} left the sound as it was ({change:.0f} dB)")
                    unchanged += 1
                    continue
                if unchanged:
                    record["redrawn_unchanged"] = unchanged
                yield Slot(record=record, negative=negative)
                break
            else:
                yield Slot(rejection={"slot": k, "source_id": source["id"], "reasons": errors, "unchanged": unchanged})

    def _source_sound(self, record: dict) -> MediaClip:
        """The sound of a pair's source, decoded once for all its negatives (the key `pair_clip` decodes it by)."""
        return self.decoded(self.pool.records[record["source_id"]]["video"], False, True, None, self.recipe.sample_rate)

    def _negative(self, record: dict) -> MediaClip:
        """What a negative's pair shows of its sound (`pair_clip`, no frames: every AV strategy changes the sound)."""
        return pair_clip(record, self.pool, self.recipe.sample_rate, sources=self.decoded, frames=False)

    def _materialize(self, record: dict, negative: MediaClip | None) -> str:
        """Write the negative's sound (``negative``: as its check made it, else made now) beside the pairs."""
        clip = negative if negative is not None else self._negative(record)
        rel = f"media/{self.judge}/{record['id']}.wav"
        encode_audio(self.out / rel, clip.audio, clip.sample_rate, float32=True)
        return rel

    def _text_candidates(self) -> Iterator[tuple[dict, str]]:
        """(source, dimension) in rotation order, round after round over the sources."""
        rotation = iter_rotation(
            self.judge, self.recipe.seed + JUDGE_INDEX[self.judge], self.cfg.dimensions_per_sample, self.dims
        )
        for _ in range(self.cfg.max_rounds):
            for source, keys in zip(self.order, rotation):
                for key in keys:
                    yield source, key

    def text_negatives(self) -> Iterator[Slot]:
        self.dims = taxonomy(self.judge, weights=self.cfg.dimensions or None)
        dims = {d.key: d for d in self.dims}
        accepted, seen = 0, set()

        def attempt(item):
            c, (source, key) = item
            original = (source.get("captions") or {}).get(judge_task(self.judge).caption_field) or ""
            seed = int(np.random.default_rng([*self.key, 2, c]).integers(2**31))
            return (
                c,
                source,
                key,
                make_text_negative(
                    original,
                    self.judge,
                    dims[key],
                    self.backend,
                    seed,
                    self.recipe.max_regenerations,
                    self.recipe.similarity_range,
                ),
            )

        candidates = enumerate(self._text_candidates())
        with ThreadPoolExecutor(TEXT_WORKERS) as pool:
            while accepted < self.n_neg:
                chunk = list(itertools.islice(candidates, TEXT_WORKERS))
                if not chunk:
                    return
                for c, source, key, result in pool.map(attempt, chunk):
                    if accepted >= self.n_neg:
                        return
                    duplicate = isinstance(result, TextNegative) and (source["id"], result.text) in seen
                    if isinstance(result, TextNegative) and not duplicate:
                        seen.add((source["id"], result.text))
                        record = self._base("n", accepted, source, 0)
                        record.update(
                            strategy="text_edit",
                            negative_type=key,
                            text=result.text,
                            params={
                                "dimension": key,
                                "detail": result.detail,
                                "attempts": result.attempts,
                                "similarity": round(result.similarity, 4),
                            },
                        )
                        accepted += 1
                        yield Slot(record=record)
                    else:
                        reasons = ["duplicate"] if duplicate else list(result.reasons)
                        yield Slot(
                            rejection={"candidate": c, "source_id": source["id"], "dimension": key, "reasons": reasons}
                        )

    def slots(self) -> Iterator[Slot]:
        yield from (Slot(rejection=skipped) for skipped in self.skipped)
        if not self.order:
            return
        yield from self.positives()
        yield from (self.av_negatives() if self.judge == "av" else self.text_negatives())

    def run(self, progress: bool) -> None:
        pairs_path = self.out / "pairs" / self.judge / f"{self.split}.jsonl"
        rejected_path = pairs_path.with_name(f"{self.split}.rejected.jsonl")
        done = sum(1 for _ in read_jsonl(pairs_path)) + sum(1 for _ in read_jsonl(rejected_path))
        with (
            JsonlWriter(pairs_path) as pairs,
            JsonlWriter(rejected_path) as rejected,
            tqdm(
                total=self.n_pos + self.n_neg, desc=f"{self.judge}/{self.split}", disable=not progress, unit="pair"
            ) as bar,
        ):
            for index, slot in enumerate(self.slots()):
                if index < done:
                    if slot.record is not None:
                        bar.update(1)
                    continue
                if slot.record is not None:
                    # a negative's sound alone changes; an in-sync nuisance changes the picture too: applied when loaded
                    if self.materialize and slot.record["strategy"] in STRATEGIES and not slot.record["label"]:
                        slot.record["media"]["audio"] = self._materialize(slot.record, slot.negative)
                    pairs.write(slot.record)
                    bar.update(1)
                else:
                    rejected.write(slot.rejection)


def dataset_hash(out: Path) -> str:
    h = hashlib.sha256()
    for path in sorted((out / "pairs").rglob("*.jsonl")):
        h.update(str(path.relative_to(out)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def build_dataset(
    recipe: Recipe, manifest: str | Path, out: str | Path, materialize: bool = False, progress: bool = True
) -> dict:
    """Build a recipe's pair datasets; killed and rerun with the same ``out``, it continues where it stopped (one
    build writes a folder at a time; a rerun from a manifest changed since is refused, and every build ends by checking
    that no source is in two splits).

    Args:
        recipe: the `Recipe`.
        manifest: the source manifest.
        out: the dataset folder: ``pairs/<judge>/<split>.jsonl``, ``hf/<judge>``, ``stats.json``.
        materialize: also write each audio negative as a WAV file (else a negative is its recipe, applied when
            loaded; both give identical samples).
        progress: show progress bars.

    Returns:
        The statistics written to ``stats.json``: per judge, pairs, positives, negatives by type, splits and
        rejections, and the dataset hash.

    Raises:
        ConfigError: ``out`` holds a build of another recipe or manifest, or a source in two splits.
        OutputBusy: another build is writing ``out``.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with output_lock(out):
        return _build(recipe, Path(manifest), out, materialize, progress)


def _build(recipe: Recipe, manifest: Path, out: Path, materialize: bool, progress: bool) -> dict:
    saved = out / RECIPE_FILE
    text = dump_yaml(recipe) + f"materialize: {str(materialize).lower()}\n"
    if saved.exists() and saved.read_text() != text:
        raise ConfigError(
            f"{out} holds a dataset built from another recipe ({saved}); use another --out, or "
            "delete the folder to start over"
        )
    sources = hashlib.sha256(manifest.read_bytes()).hexdigest() if manifest.is_file() else None
    kept = out / SOURCES_FILE
    if kept.exists() and sources and kept.read_text().strip() != sources:
        raise ConfigError(
            f"{manifest} changed since {out} was begun from it: a resumed build would mix two sets of sources (one "
            "could land in two splits); delete the folder to build anew, or use another --out"
        )
    saved.write_text(text)
    if sources:
        kept.write_text(sources + "\n")
    for leftover in (out / "media").rglob(".*.wav"):  # temp files of a killed run (one writer per folder)
        leftover.unlink()
    records = load_manifest(manifest)
    splits = assign_splits(records, recipe.splits, recipe.seed, recipe.dedupe)
    write_json(out / SPLITS_FILE, splits)
    backend = None
    if {"vt", "at"} & set(recipe.judges):
        options = dict(recipe.text_backend_options)
        if options.pop("closed_vocabulary", False):  # the rules backend's (Recipe checks)
            # swap only to phrases the sources' own captions use (a word none has gives a negative away)
            options["vocabulary"] = [text for r in records for text in r["captions"].values() if text]
        if recipe.text_backend == "openai":
            options.setdefault("cache_dir", str(out / "llm_cache"))  # a resumed build pays for no request twice
        backend = make_backend(recipe.text_backend, **options)
    split_names = list(recipe.splits)
    for judge, cfg in recipe.judges.items():
        by_split = [[r for r in records if splits[r["id"]] == s] for s in split_names]
        sizes = _split_sizes(cfg.pairs, [len(group) for group in by_split])
        for index, (split, sources, size) in enumerate(zip(split_names, by_split, sizes)):
            if sources and size:
                _SplitBuilder(recipe, judge, split, index, sources, size, out, backend, materialize).run(progress)
    check_splits(out, list(recipe.judges))
    stats = dataset_stats(out, recipe)
    stats["manifest"] = str(Path(manifest).resolve())  # where loaders find the sources again
    write_json(out / "stats.json", stats)
    export_hf(out, list(recipe.judges))
    return stats


def check_splits(out: Path, judges: list[str]) -> None:
    """Every source in one split only, across every judge's pairs: checked at the end of every build.

    Raises:
        ConfigError: a source in two splits (the folder holds pairs of another build).
    """
    split_of: dict[str, str] = {}
    for judge in judges:
        for path in sorted((out / "pairs" / judge).glob("*.jsonl")):
            if path.name.endswith(".rejected.jsonl"):
                continue
            for record in read_jsonl(path):
                first = split_of.setdefault(record["source_id"], path.stem)
                if first != path.stem:
                    raise ConfigError(
                        f"{out}: source {record['source_id']!r} is in both the {first} and the {path.stem} split; the "
                        "folder holds pairs of another build: delete it and build again"
                    )


def dataset_stats(out: Path, recipe: Recipe) -> dict:
    stats = {"name": recipe.name, "dataset_hash": dataset_hash(out), "judges": {}}
    for judge, cfg in recipe.judges.items():
        entry = {
            "requested": cfg.pairs,
            "pairs": 0,
            "positives": 0,
            "negatives": 0,
            "splits": {},
            "negative_types": Counter(),
            "rejected": 0,
            "rejection_reasons": Counter(),
            "nuisance_positives": 0,
            "redrawn_unchanged": 0,  # draws whose negative equalled its source, drawn again (`_change_db`)
        }
        for pairs_path in sorted((out / "pairs" / judge).glob("*.jsonl")):
            if pairs_path.name.endswith(".rejected.jsonl"):
                for r in read_jsonl(pairs_path):
                    entry["rejected"] += 1
                    entry["rejection_reasons"].update(r["reasons"][-1:])  # the final reason
                    entry["redrawn_unchanged"] += r.get("unchanged", 0)
                continue
            split_counts = Counter()
            for r in read_jsonl(pairs_path):
                split_counts["positives" if r["label"] else "negatives"] += 1
                entry["nuisance_positives"] += bool(r["label"] and r["strategy"] != "positive")
                entry["redrawn_unchanged"] += r.get("redrawn_unchanged", 0)
                if not r["label"]:
                    entry["negative_types"][r["negative_type"]] += 1
            entry["splits"][pairs_path.stem] = dict(split_counts)
            entry["positives"] += split_counts["positives"]
            entry["negatives"] += split_counts["negatives"]
        entry["pairs"] = entry["positives"] + entry["negatives"]
        entry["negative_types"] = dict(sorted(entry["negative_types"].items()))
        entry["rejection_reasons"] = dict(entry["rejection_reasons"])
        stats["judges"][judge] = entry
    return stats


def export_hf(out: Path, judges: list[str]) -> None:
    """The pairs as a Hugging Face DatasetDict per judge (params as JSON text: their keys vary)."""
    from datasets import Dataset, DatasetDict  # heavy: imported only when exporting

    for judge in judges:
        splits = {}
        for path in sorted((out / "pairs" / judge).glob("*.jsonl")):
            if path.name.endswith(".rejected.jsonl"):
                continue
            rows = [
                {
                    **{k: v for k, v in r.items() if k not in ("params", "media", "seed")},
                    "params": json.dumps(r["params"], sort_keys=True),
                    "video": r["media"]["video"],
                    "audio": r["media"].get("audio"),
                    "seed": r["seed"],
                }
                for r in read_jsonl(path)
            ]
            if rows:
                splits[path.stem] = Dataset.from_list(rows)
        target = out / "hf" / judge
        if target.exists():
            shutil.rmtree(target)
        if splits:
            DatasetDict(splits).save_to_disk(str(target))


def _kept(dataset: str | Path, name: str) -> Path:
    """The file ``name`` a build kept in ``dataset``."""
    path = Path(dataset) / name
    if not path.is_file():
        raise ConfigError(
            f"{path} is missing: {dataset} was not made by `avjudge data build` "
            f"(build it first: avjudge data build --recipe RECIPE --out {dataset})"
        )
    return path


def built_stats(dataset: str | Path) -> dict:
    """The stats.json a build wrote into ``dataset`` (its pairs, hash and manifest).

    Raises:
        ConfigError: no such file, or one that is not a build's stats (naming it).
    """
    path = _kept(dataset, "stats.json")
    stats = read_json_object(path, "build the dataset again")
    if not all(isinstance(stats.get(key), str) for key in ("dataset_hash", "manifest")):
        raise ConfigError(f"{path}: a build's stats name its dataset_hash and manifest; build the dataset again")
    return stats


def pairs_now(dataset: str | Path) -> tuple[str, bool]:
    """(the hash of ``dataset``'s pairs as they are now, whether they changed since its build wrote stats.json): what
    a judge trained on them records."""
    now = dataset_hash(Path(dataset))
    return now, now != built_stats(dataset)["dataset_hash"]


def built_recipe(dataset: str | Path) -> Recipe:
    """The recipe a dataset folder was built from (its recipe.yaml, less the build's --materialize flag)."""
    path = _kept(dataset, RECIPE_FILE)
    data = load_yaml(path.read_text())
    data.pop("materialize", None)
    return from_dict(Recipe, data, where=str(path))


def built_sources(dataset: str | Path) -> list[dict]:
    """The source records (manifest lines) a dataset folder was built from."""
    return load_manifest(built_stats(dataset)["manifest"])


def built_pairs(dataset: str | Path) -> dict[tuple[str, str], list[dict]]:
    """(judge, split) -> the pair records of every pairs file a build wrote into ``dataset``, each read strictly
    (`avjudge.data.pairs.check_pair`; the sources they name checked where the folder keeps its build's stats, not in
    a copy of its pairs alone)."""
    has_stats = (Path(dataset) / "stats.json").is_file()
    sources = {source["id"]: source for source in built_sources(dataset)} if has_stats else None
    files = sorted(p for p in (Path(dataset) / "pairs").glob("*/*.jsonl") if not p.name.endswith(".rejected.jsonl"))
    return {(p.parent.name, p.stem): load_pairs(dataset, p.parent.name, p.stem, sources=sources) for p in files}


def split_sources(dataset: str | Path, sources: list[dict], split: str) -> list[dict]:
    """The ``sources`` (manifest records) a dataset folder's build assigned to ``split``."""
    splits = built_splits(dataset)
    chosen = [r for r in sources if splits.get(r["id"]) == split]
    if not chosen:
        raise ConfigError(f"{Path(dataset) / SPLITS_FILE}: no source is in split {split!r}")
    return chosen


def built_splits(dataset: str | Path) -> dict[str, str]:
    """Source id -> the split a dataset folder's build assigned it (its splits.json, read strictly)."""
    path = _kept(dataset, SPLITS_FILE)
    splits = read_json_object(path, f"build the dataset again: avjudge data build --out {dataset}")
    if not all(isinstance(split, str) for split in splits.values()):
        raise ConfigError(f"{path}: each source's split is a name; build the dataset again")
    return splits
