"""`avjudge metrics compare`: a generated set of clips against a reference set, with the set metrics
(`avjudge.metrics.sets`) generation papers report. Each clip goes through the scoring core: decoded once for all the
extractors, its features extracted once per extractor, batched, and cached by file content (a rerun skips what is
cached); a clip that cannot be read is counted in the report with its reason, never silently left out of a
statistic."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from ..config import ConfigError
from ..data import input_items
from ..data.manifest import MEDIA_EXTENSIONS
from ..media import DecodeNeeds, MediaClip
from ..metrics.base import MetricError
from ..metrics.checkpoints import checkpoint_hash
from ..metrics.feature_cache import FeatureCache
from ..metrics.sets import EXTRACTORS, SET_METRICS, Extractor, evaluate
from ..resources import default_cache
from .core import Scoring
from .scorers import Outcome

PROTOCOLS = ("av-benchmark", "all-clips")


def pair_key(item_id: str) -> str:
    """What pairs a generated clip with its reference: its id, a media file's extension left out."""
    path = Path(item_id)
    return str(path.with_suffix("")) if path.suffix.lower() in MEDIA_EXTENSIONS else item_id


@dataclass(frozen=True)
class Extraction:
    """An extractor of a comparison: how it reads a clip (``spec``), the loaded extractor, its feature cache."""

    spec: Extractor
    extractor: object
    cache: FeatureCache


class FeatureScorer:
    """A set metric's extractor as a scorer of the core: its values for a clip are the clip's features (named arrays),
    the batch's clips extracted together; a clip it cannot read (too short, ...) is that clip's error."""

    kind = "features"
    batched = True
    holds_interpreter = False  # not measured apart: a set job's clips decode in threads, as before

    def __init__(self, name: str, extraction: Extraction):
        self.name, self.extraction = name, extraction
        # the file's own rate and channels, every decoded sample: ``prepare`` mixes and resamples as av-benchmark does
        self.needs = DecodeNeeds(audio=True, audio_to_end=True)

    def score(self, clips: list[MediaClip], captions: list[dict]) -> list[Outcome]:
        outcomes: list[Outcome | None] = [None] * len(clips)
        inputs = []
        for k, clip in enumerate(clips):
            try:
                inputs.append((k, self.extraction.spec.prepare(clip)))
            except MetricError as err:
                outcomes[k] = Outcome(error=str(err))
        extracted = self.extraction.extractor.features([x for _, x in inputs]) if inputs else []
        for (k, _), arrays in zip(inputs, extracted):
            outcomes[k] = Outcome(values=arrays)
        return outcomes


def collect(items: list[dict], extractions: dict[str, Extraction], workers: int, desc: str, progress: bool):
    """Each extractor's features of the items (extractor -> id -> arrays), from its cache or extracted in batches
    through the scoring core, and what failed (id -> extractor -> why). A clip is decoded once for every extractor
    that lacks its features, at its own rate and to the stream's last decoded sample (FFmpeg's command line, what
    av-benchmark reads): each extractor's preparation mixes and resamples it as av-benchmark does
    (`avjudge.metrics.reference_audio`)."""
    features: dict[str, dict] = {name: {} for name in extractions}
    failed: dict[str, dict[str, str]] = {}
    scoring = Scoring([FeatureScorer(name, e) for name, e in extractions.items()], workers)
    batch_size = min(e.extractor.batch_size for e in extractions.values())
    bar = tqdm(total=len(items), desc=desc, unit="clip", disable=not progress)
    for start in range(0, len(items), batch_size):
        todo, keys = [], {}
        for item in items[start : start + batch_size]:
            try:
                keys[item["id"]] = FeatureCache.key(item["video"])
            except OSError as err:
                failed[item["id"]] = dict.fromkeys(
                    extractions, f"{item['video']}: cannot be read ({err.strerror or err})"
                )
                continue
            missing = []
            for name, extraction in extractions.items():
                cached = extraction.cache.get(keys[item["id"]])
                if cached is None:
                    missing.append(name)
                else:
                    features[name][item["id"]] = cached
            if missing:
                todo.append({**item, "scorers": missing})
        for item, record in zip(todo, scoring.score(todo) if todo else []):
            for name in item["scorers"]:
                outcome = record.outcome(name)
                if outcome.ok:
                    extractions[name].cache.put(keys[item["id"]], outcome.values)
                    features[name][item["id"]] = outcome.values
                else:
                    failed.setdefault(item["id"], {})[name] = outcome.error
        bar.update(min(batch_size, len(items) - start))
    bar.close()
    return features, failed


def compare_sets(
    generated,
    reference,
    names: list[str],
    out: str | Path,
    cache: str | Path | None = None,
    root: str | Path | None = None,
    device: str = "cpu",
    batch_size: int = 16,
    workers: int = 2,
    progress: bool = True,
    protocol: str = "av-benchmark",
) -> dict:
    """Compare a generated set with a reference set and write the report (JSON) to ``out``.

    Args:
        generated: what `avjudge.data.input_items` reads (a folder of clips, a manifest, files).
        reference: the same for the reference set; clips pair by id (a folder's by their path without the
            extension).
        names: set metrics (`avjudge.metrics.sets.SET_METRICS`).
        cache: where features are cached (default ``$AVJUDGE_CACHE/features``).
        root: the checkpoint folder (default ``$AVJUDGE_CHECKPOINTS``).
        protocol: ``av-benchmark`` (its ``evaluate.py``: PaSST's FD and IS over the clips paired by id only) or
            ``all-clips`` (every metric over every clip; KL pairs clips either way).

    Returns:
        The report: each metric under avjudge's name and av-benchmark's key, each set's clips and failures, the
        pairs, and the extractors' weights.
    """
    metrics = [SET_METRICS.lookup(n) for n in names]
    if not metrics:
        raise ConfigError("name at least one set metric (--metrics)")
    if protocol not in PROTOCOLS:
        raise ConfigError(f"--protocol {protocol!r}: give one of {', '.join(PROTOCOLS)}")
    sets = {"generated": input_items(generated), "reference": input_items(reference)}
    for side, items in sets.items():
        if len({i["id"] for i in items}) != len(items):
            raise ConfigError(f"the {side} set has clips of the same id: ids pair clips, so they must differ")
    cache_folder = Path(cache) if cache else default_cache() / "features"
    report: dict = {"metrics": {}, "av_benchmark": {}, "errors": {}, "extractors": {}}
    extractions = {}
    for name in sorted({m.extractor for m in metrics}):
        spec = EXTRACTORS.lookup(name)
        extractor = spec.build(root=root, device=device, batch_size=batch_size)
        report["extractors"][name] = {"weights": str(extractor.weights), "sha256": checkpoint_hash(extractor.weights)}
        extractions[name] = Extraction(
            spec, extractor, FeatureCache(cache_folder, name, spec.version, extractor.weights)
        )
    # side -> (features by extractor, failures by id and extractor: a clip may fail for one only, e.g. VGGish's 0.96 s)
    found = {side: collect(items, extractions, workers, side, progress) for side, items in sets.items()}
    by_key = {side: {pair_key(i["id"]): i["id"] for i in items} for side, items in sets.items()}
    paired = sorted(set(by_key["generated"]) & set(by_key["reference"]))
    report["protocol"] = protocol
    for metric in metrics:
        generated_features = found["generated"][0][metric.extractor]
        reference_features = found["reference"][0][metric.extractor]
        pairs = [
            (by_key["generated"][k], by_key["reference"][k])
            for k in paired
            if by_key["generated"][k] in generated_features and by_key["reference"][k] in reference_features
        ]
        if protocol == "av-benchmark" and metric.paired_in_av_benchmark:  # its evaluate.py unrolls paired clips
            generated_features = {a: generated_features[a] for a, _ in pairs}
            reference_features = {b: reference_features[b] for _, b in pairs}
        try:
            values = evaluate(metric, generated_features, reference_features, pairs)
        except MetricError as err:
            report["errors"][metric.name] = str(err)
            continue
        report["metrics"].update(values)
        report["av_benchmark"].update({metric.reported[k]: v for k, v in values.items()})
        if metric.paired or (protocol == "av-benchmark" and metric.paired_in_av_benchmark):
            report["pairs"] = len(pairs)
    for side, items in sets.items():
        report[side] = {"source": str(generated if side == "generated" else reference), "clips": len(items),
                        "failed": found[side][1]}  # fmt: skip
    if "pairs" in report:
        report["unpaired"] = {
            side: sorted(by_key[side][k] for k in set(by_key[side]) - set(paired))
            for side in ("generated", "reference")
        }
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    return report
