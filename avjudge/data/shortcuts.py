"""The shortcut audit of a pair dataset: can one side of a pair alone tell its negatives from its positives?

A judge must compare sound with picture (or either with text). A negative whose sound alone gives it away (a silent
head where the shift padded, a seam where it wrapped) teaches the judge to listen for that instead: the NLI
"hypothesis-only" baseline and AlignRM's bias reward model measure the same thing for text. For each judge, and each
side its pairs show (audio, picture, text), a logistic regression on cheap features of that side only is fitted on the
training split and scored on the held-out split (the builder never puts a source in both), per negative type: its
negatives against every positive, AUROC with a 95 % bootstrap interval.

A negative type is a **leak** where a side outside its declared tells (`Strategy.tells`: a filter may be heard, a
shift may not) tells it apart: the lower end of the interval above `LEAK_LOWER_BOUND` (a bound rather than the point,
so a small held-out split does not flag by chance), over at least `MIN_HELD_OUT` held-out negatives of the type. The
leak names the feature that gives it away best.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import minimize
from scipy.signal import get_window
from tqdm import tqdm

from ..config import ConfigError
from ..jsonl import write_json
from ..media import MediaError, decode
from ..perturb import STRATEGIES, PerturbError, SourcePool
from ..perturb.base import tells_text
from ..prompts import render_query
from ..stats import auroc_interval, printed
from .pairs import load_pairs, pair_view

SIDES_OF = {"av": ("audio", "video"), "vt": ("video", "text"), "at": ("audio", "text")}
LEAK_LOWER_BOUND = 0.60  # a side tells a type apart when its AUROC's 95 % interval starts above this
MIN_HELD_OUT = 20  # held-out negatives of a type below which its AUROC is reported but never flagged
MIN_REPORTED = 10  # held-out negatives of a type below which no AUROC is reported (n/a, with the count)
VIDEO_FPS, VIDEO_SIZE = 8.0, (48, 48)  # the picture as its features read it: enough for black, frozen, loops
HEAD_S = 0.5  # the head and tail a padded shift leaves silent


@dataclass(frozen=True)
class Feature:
    name: str
    gives_away: str  # what a leak through it is, in words


AUDIO_FEATURES = (
    Feature("silence_head", "digital silence in the first 0.5 s"),
    Feature("silence_tail", "digital silence in the last 0.5 s"),
    Feature("silence_share", "digital silence somewhere in the clip"),
    Feature("level", "the overall loudness"),
    Feature("level_head", "the first 0.5 s louder or quieter than the rest"),
    Feature("level_tail", "the last 0.5 s louder or quieter than the rest"),
    Feature("level_spread", "loudness that varies more or less over the clip"),
    Feature("level_dip", "a quiet stretch (the quietest eighth against the rest)"),
    Feature("noise_floor", "a raised noise floor (the quietest frames against the median)"),
    Feature("flatness", "a flat, noise-like spectrum"),
    Feature("centroid", "the spectral balance (centroid)"),
    Feature("rolloff", "where 85 % of the energy lies"),
    Feature("band_0_300", "the energy below 300 Hz"),
    Feature("band_300_1k", "the energy at 300 Hz-1 kHz"),
    Feature("band_1k_2k", "the energy at 1-2 kHz"),
    Feature("band_2k_4k", "the energy at 2-4 kHz"),
    Feature("band_4k_up", "the energy above 4 kHz"),
    Feature("click", "a click or seam (the largest jump between samples against the level)"),
    Feature("flux_peak", "a sudden change of spectrum (a seam)"),
    Feature("loop", "a repeat: the sound matching itself a while later"),
)
VIDEO_FEATURES = (
    Feature("brightness", "the overall brightness"),
    Feature("black_share", "black frames"),
    Feature("frozen_share", "frozen frames (no change from one to the next)"),
    Feature("motion", "how much the picture moves"),
    Feature("motion_spread", "motion that varies more or less over the clip"),
    Feature("cut", "a cut (the largest change between frames against the usual)"),
    Feature("brightness_head", "the first 0.5 s brighter or darker than the rest"),
    Feature("brightness_tail", "the last 0.5 s brighter or darker than the rest"),
    Feature("colourfulness", "how colourful the picture is"),
    Feature("loop", "a repeat: the picture matching itself a while later"),
)
_BANDS_HZ = (0, 300, 1000, 2000, 4000, None)


def _db(power) -> np.ndarray:
    return 10 * np.log10(np.asarray(power, float) + 1e-10)


def _repeat(frames: np.ndarray, rate: float) -> float:
    """How much a sequence of feature vectors repeats itself: the smallest mean distance between a frame and the one
    a lag later (lags 0.4 s to half the clip) against the mean over those lags; near 0 for a loop."""
    lags = range(max(1, int(0.4 * rate)), max(2, len(frames) // 2 + 1))
    distances = [np.abs(frames[lag:] - frames[:-lag]).mean() for lag in lags if lag < len(frames)]
    if len(distances) < 2 or max(distances) == 0:
        return 1.0
    return float(min(distances) / (np.mean(distances) + 1e-9))


def audio_features(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """`AUDIO_FEATURES` of mono ``audio``: silence and loudness at the edges and over time, spectral balance, noise,
    seams and loops. About a millisecond a second of sound."""
    x = np.asarray(audio, np.float64)
    edge = max(1, int(HEAD_S * sample_rate))
    silent = np.abs(x) <= 1e-4
    hop, size = 256, 512
    count = max(1, 1 + (len(x) - size) // hop)
    frames = np.lib.stride_tricks.sliding_window_view(np.pad(x, (0, max(0, size - len(x)))), size)[::hop][:count]
    spectrum = np.abs(np.fft.rfft(frames * get_window("hann", size), axis=1)) ** 2  # (frames, bins)
    freqs = np.fft.rfftfreq(size, 1 / sample_rate)
    frame_db = _db(spectrum.mean(1))
    level = _db(np.mean(x**2))
    eighths = [_db(np.mean(part**2)) for part in np.array_split(x, 8)]
    total = spectrum.sum(1, keepdims=True) + 1e-12
    mean_spectrum = spectrum.mean(0) + 1e-12
    cumulative = np.cumsum(mean_spectrum) / mean_spectrum.sum()
    bands = [
        _db(mean_spectrum[(freqs >= low) & (freqs < (high or np.inf))].sum() / mean_spectrum.sum())
        for low, high in zip(_BANDS_HZ, _BANDS_HZ[1:])
    ]
    flatness = np.exp(np.mean(np.log(spectrum + 1e-12), 1)) / (spectrum.mean(1) + 1e-12)
    shape = np.log(spectrum / total + 1e-9)
    flux = np.abs(np.diff(shape, axis=0)).mean(1) if count > 1 else np.zeros(1)
    rms = np.sqrt(np.mean(x**2)) + 1e-9
    groups = np.array_split(np.arange(len(freqs)), 24)  # coarse bands: loops compare spectral shapes, not bins
    coarse = np.stack([shape[:, g].mean(1) for g in groups], 1)
    return np.array(
        [
            silent[:edge].mean(),
            silent[-edge:].mean(),
            silent.mean(),
            level,
            _db(np.mean(x[:edge] ** 2)) - level,
            _db(np.mean(x[-edge:] ** 2)) - level,
            np.std(eighths),
            min(eighths) - np.mean(eighths),
            np.percentile(frame_db, 10) - np.median(frame_db),
            float(np.median(flatness)),
            float((freqs * mean_spectrum).sum() / mean_spectrum.sum()) / 1000,
            float(freqs[np.searchsorted(cumulative, 0.85)]) / 1000,
            *bands,
            float(np.abs(np.diff(x)).max(initial=0.0) / rms),
            float(flux.max() / (np.median(flux) + 1e-9)),
            _repeat(coarse, sample_rate / hop),
        ]
    )


def video_features(frames: np.ndarray, fps: float) -> np.ndarray:
    """`VIDEO_FEATURES` of ``frames`` (T, H, W, 3) uint8 shown at ``fps``: brightness, black and frozen frames, motion,
    cuts, the edges against the rest, colour and loops."""
    red, green, blue = (frames[..., c].astype(np.float32) for c in range(3))  # channel planes: fast elementwise
    grey = (red + green + blue) / 3
    brightness = grey.mean((1, 2))
    changes = np.abs(np.diff(grey, axis=0)).mean((1, 2)) if len(grey) > 1 else np.zeros(1)
    edge = max(1, int(HEAD_S * fps))
    return np.array(
        [
            brightness.mean() / 255,
            (brightness < 16).mean(),
            (changes < 0.5).mean(),
            changes.mean(),
            changes.std(),
            changes.max() / (np.median(changes) + 1.0),
            (brightness[:edge].mean() - brightness.mean()) / 255,
            (brightness[-edge:].mean() - brightness.mean()) / 255,
            (np.maximum(np.maximum(red, green), blue) - np.minimum(np.minimum(red, green), blue)).mean() / 255,
            _repeat(grey.reshape(len(grey), -1), fps),
        ]
    )


def _side_features(clip, sides: tuple[str, ...]) -> dict[str, np.ndarray]:
    out = {}
    if "audio" in sides:
        out["audio"] = audio_features(clip.mono_audio(), clip.sample_rate)
    if "video" in sides:
        out["video"] = video_features(clip.frames, VIDEO_FPS)
    return out


def _source_features(job: tuple) -> list[tuple[int, dict | str]]:
    """One chunk's pairs, each source decoded once (small frames at `VIDEO_FPS`, mono sound): (index, features by
    side) per pair, or (index, why it could not be read)."""
    groups, pool_records, sides, sample_rate, root = job
    pool = SourcePool(pool_records)
    results = []
    for video_path, members in groups:
        try:
            source = decode(
                video_path,
                video="video" in sides,
                audio="audio" in sides,
                fps=VIDEO_FPS if "video" in sides else None,
                size=VIDEO_SIZE if "video" in sides else None,
                sample_rate=sample_rate if "audio" in sides else None,
                channels=1 if "audio" in sides else None,
            )
        except MediaError as err:
            results += [(index, str(err)) for index, _ in members]
            continue
        for index, record in members:
            try:
                results.append((index, _side_features(pair_view(record, source, pool, root), sides)))
            except (PerturbError, ValueError) as err:
                results.append((index, str(err)))
    return results


def media_features(
    records: list[dict],
    pool_records: list[dict],
    sides: tuple[str, ...],
    sample_rate: int,
    root: Path,
    workers: int,
    progress: bool,
) -> tuple[dict[str, np.ndarray], dict[int, str]]:
    """(side -> (n, features) array, record index -> why it could not be read) for the media ``sides`` of
    ``records`` of the dataset in ``root`` (where materialised negatives are), whose negatives borrow from
    ``pool_records`` (their split's sources); sources decoded once each, in ``workers`` processes (0: here)."""
    from ..media import decoding_pool

    media_sides = tuple(side for side in sides if side != "text")
    by_source: dict[str, list] = {}
    for index, record in enumerate(records):
        by_source.setdefault(record["source_id"], []).append((index, record))
    paths = {r["id"]: r["video"] for r in pool_records}
    groups = [(paths[source], members) for source, members in by_source.items()]
    chunks = max(1, min(len(groups), 4 * max(workers, 1)))
    jobs = [(groups[i::chunks], pool_records, media_sides, sample_rate, root) for i in range(chunks)]
    runs = map(_source_features, jobs) if workers <= 0 else decoding_pool(workers).map(_source_features, jobs)
    widths = {"audio": len(AUDIO_FEATURES), "video": len(VIDEO_FEATURES)}
    features = {side: np.full((len(records), widths[side]), np.nan) for side in media_sides}
    errors: dict[int, str] = {}
    with tqdm(total=len(records), desc="shortcut audit", unit="pair", disable=not progress) as bar:
        for chunk in runs:
            for index, result in chunk:
                if isinstance(result, str):
                    errors[index] = result
                    continue
                for side, values in result.items():
                    features[side][index] = values
            bar.update(len(chunk))
    return features, errors


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-2):
    """A scorer ``f(x) -> P(positive)``: an L2-regularised logistic regression on standardised ``x``."""
    mean, scale = x.mean(0), x.std(0) + 1e-9
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])

    def loss(w):
        logits = z @ w
        value = np.mean(np.logaddexp(0, logits) - y * logits) + l2 * w[:-1] @ w[:-1]
        grad = z.T @ (1 / (1 + np.exp(-logits)) - y) / len(y) + 2 * l2 * np.append(w[:-1], 0)
        return value, grad

    w = minimize(loss, np.zeros(z.shape[1]), jac=True, method="L-BFGS-B").x
    return lambda new: 1 / (1 + np.exp(-(np.hstack([(new - mean) / scale, np.ones((len(new), 1))]) @ w)))


def side_report(
    train: tuple[np.ndarray, np.ndarray, np.ndarray],
    test: tuple[np.ndarray, np.ndarray, np.ndarray],
    features: tuple[Feature, ...],
    seed: int = 0,
) -> dict:
    """One side's classifiers: ``train`` / ``test`` are (features, labels, negative types). Overall (every negative
    against every positive) and per type (a classifier of its own: its negatives against every positive), the held-out
    AUROC, its 95 % interval, and the feature that alone tells the type apart best."""
    (x, y, kinds), (tx, ty, tkinds) = train, test

    def scored(mask: np.ndarray, test_mask: np.ndarray) -> tuple:
        if len(set(y[mask].tolist())) < 2 or len(set(ty[test_mask].tolist())) < 2:
            return None, None, None
        scores = fit_logistic(x[mask], y[mask])(tx[test_mask])
        value, interval = auroc_interval(scores, ty[test_mask], seed=seed)
        single = [auroc_interval(tx[test_mask][:, j], ty[test_mask], draws=0)[0] for j in range(tx.shape[1])]
        best = int(np.argmax([abs(a - 0.5) if a is not None else -1 for a in single]))
        return value, interval, features[best].gives_away

    report = {"overall": None, "ci95": {}, "per_type": {}, "gives_away": {}}
    report["overall"], report["ci95"]["overall"], report["gives_away"]["overall"] = scored(
        np.ones(len(y), bool), np.ones(len(ty), bool)
    )
    for kind in sorted(set(kinds[y == 0].tolist()) & set(tkinds[ty == 0].tolist())):
        if int((tkinds == kind).sum()) < MIN_REPORTED:  # an AUROC of a handful of pairs says nothing
            report["per_type"][kind] = report["ci95"][kind] = report["gives_away"][kind] = None
            continue
        value, interval, feature = scored((y == 1) | (kinds == kind), (ty == 1) | (tkinds == kind))
        report["per_type"][kind], report["ci95"][kind], report["gives_away"][kind] = value, interval, feature
    return report


def declared_tells(negative_type: str) -> tuple[str, ...]:
    """The sides a negative type may be told apart by (`Strategy.tells`); a caption edit's: none."""
    return STRATEGIES[negative_type].tells if negative_type in STRATEGIES else ()


def _text_side(task: str, train: list[dict], test: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) scores of the text-only classifier (`text_only_scores`, fitted once on ``train``) on the question
    each pair's judge reads: its caption and any spoken line."""
    from .audit import text_only_scores

    questions = [render_query(task, r["text"], r.get("utterance")) for r in (*train, *test)]
    scores = text_only_scores([(r["label"], q) for r, q in zip(train, questions)], questions)
    return scores[: len(train)], scores[len(train) :]


def judge_audit(
    dataset: Path,
    task: str,
    train_split: str = "train",
    eval_split: str = "test",
    limit: int | None = None,
    workers: int = 0,
    progress: bool = False,
) -> dict:
    """The shortcut audit of ``task``'s pairs in ``dataset`` (see the module): per side, ``overall``, ``per_type``,
    ``ci95`` and ``gives_away``; ``leaks``, the negative types a side outside their tells gives away, and
    ``leak_details``. ``limit``: at most that many pairs a split (a fixed sample)."""
    from .build import built_recipe, built_sources, built_splits

    sources = built_sources(dataset)
    splits = built_splits(dataset)
    sample_rate = built_recipe(dataset).sample_rate
    sides = SIDES_OF[task]
    loaded = {}
    for split in (train_split, eval_split):
        records = load_pairs(dataset, task, split, limit)
        pool = [r for r in sources if splits.get(r["id"]) == split]
        features, errors = media_features(records, pool, sides, sample_rate, dataset, workers, progress)
        readable = np.array([i not in errors for i in range(len(records))], bool)
        records = [r for r, ok in zip(records, readable) if ok]
        features = {side: values[readable] for side, values in features.items()}
        labels = np.array([r["label"] for r in records])
        kinds = np.array(["positive" if r["label"] else r["negative_type"] for r in records])
        loaded[split] = (records, features, labels, kinds, Counter(errors.values()))
    (train, x, y, kinds, skipped), (test, tx, ty, tkinds, held_out_skipped) = loaded[train_split], loaded[eval_split]
    report: dict = {
        "pairs": {train_split: len(train), eval_split: len(test)},
        "unreadable": dict((skipped + held_out_skipped).most_common()),  # why -> pairs: never scored, said
    }
    for side in sides:
        if side == "text":
            scores, test_scores = _text_side(task, train, test)
            report[side] = side_report(
                (scores[:, None], y, kinds), (test_scores[:, None], ty, tkinds), (Feature("text", "the words"),)
            )
        else:
            width = AUDIO_FEATURES if side == "audio" else VIDEO_FEATURES
            report[side] = side_report((x[side], y, kinds), (tx[side], ty, tkinds), width)
    report["tells"] = {kind: tells_text(declared_tells(kind)) for kind in sorted(set(tkinds[ty == 0].tolist()))}
    report["held_out"] = {kind: int((tkinds == kind).sum()) for kind in report["tells"]}  # negatives of each type
    report["leak_details"] = [
        {
            "type": kind,
            "side": side,
            "auroc": report[side]["per_type"][kind],
            "ci95": report[side]["ci95"][kind],
            "gives_away": report[side]["gives_away"][kind],
        }
        for side in sides
        for kind, value in report[side]["per_type"].items()
        if value is not None
        and side not in declared_tells(kind)
        and report[side]["ci95"][kind][0] > LEAK_LOWER_BOUND
        and int((tkinds == kind).sum()) >= MIN_HELD_OUT
    ]
    report["leaks"] = sorted({leak["type"] for leak in report["leak_details"]})
    return report


def shortcut_audit(
    dataset: str | Path,
    judges: list[str] | None = None,
    train_split: str = "train",
    eval_split: str = "test",
    limit: int | None = None,
    workers: int = 0,
    progress: bool = False,
) -> dict:
    """judge -> `judge_audit` for ``judges`` (default: every judge the dataset holds)."""
    dataset = Path(dataset)
    folder = dataset / "pairs"
    held = sorted(path.name for path in folder.iterdir() if path.is_dir()) if folder.is_dir() else []
    if not held:
        raise ConfigError(f"{dataset}: no pairs/ folder; give a dataset folder made by `avjudge data build`")
    missing = sorted(set(judges or []) - set(held))
    if missing:
        raise ConfigError(f"{dataset} holds no {', '.join(missing)} pairs (it holds {', '.join(held)})")
    return {
        task: judge_audit(dataset, task, train_split, eval_split, limit, workers, progress) for task in (judges or held)
    }


def _cell(side: dict, kind: str, held_out: int | None = None) -> str:
    """A side's AUROC of ``kind`` (a negative type, or "overall") with its interval; n/a with the type's ``held_out``
    count where too few were held out."""
    value = side["overall"] if kind == "overall" else side["per_type"].get(kind)
    if value is None:
        return "n/a" if held_out is None or held_out >= MIN_REPORTED else f"n/a ({held_out} held out)"
    low, high = side["ci95"][kind]
    return f"{printed(value, 2)} [{printed(low, 2)}, {printed(high, 2)}]"


def audit_lines(report: dict) -> list[str]:
    """The audit as a table per judge, then its leaks in words."""
    lines = []
    for task, entry in report.items():
        sides = SIDES_OF[task]
        counts = ", ".join(f"{n} {split}" for split, n in entry["pairs"].items())
        lines.append(f"{task}: {counts} pairs; held-out AUROC of one side alone (95 % interval)")
        lines.append(f"    {'negative type':<24}{'tells':<12}" + "".join(f"{side:<22}" for side in sides))
        lines.append(f"    {'all negatives':<24}{'':<12}" + "".join(f"{_cell(entry[s], 'overall'):<22}" for s in sides))
        counts = entry.get("held_out", {})
        for kind, tells in entry["tells"].items():
            cells = "".join(f"{_cell(entry[side], kind, counts.get(kind)):<22}" for side in sides)
            lines.append(f"    {kind:<24}{tells:<12}" + cells)
        for leak in entry["leak_details"]:
            lines.append(
                f"    LEAK {leak['type']}: the {leak['side']} alone tells it apart (AUROC {printed(leak['auroc'], 2)}, "
                f"95 % from {printed(leak['ci95'][0], 2)}): {leak['gives_away']}"
            )
        for why, count in entry["unreadable"].items():
            lines.append(f"    {count} pairs left out, unreadable: {why}")
    return lines


AUDIT_FILE = "audit.json"  # where a build keeps its shortcut audit


def audit_after_build(dataset: str | Path, sample: int, progress: bool = False) -> list[str]:
    """The shortcut audit of a freshly built ``dataset`` on ``sample`` pairs a split (held out: its ``test`` split,
    else ``val``), written to DATASET/audit.json; returns what to print: a line per leak, or why none was run."""
    from .build import built_splits

    dataset = Path(dataset)
    splits = set(built_splits(dataset).values())
    held_out = next((split for split in ("test", "val") if split in splits), None)
    if "train" not in splits or held_out is None:
        return ["shortcut audit: not run (it needs a train split and a test or val split)"]
    report = shortcut_audit(dataset, None, "train", held_out, sample, os.cpu_count() or 1, progress)
    write_json(dataset / AUDIT_FILE, report)
    leaks = [(task, leak) for task, entry in report.items() for leak in entry["leak_details"]]
    lines = [
        f"warning: {task} {leak['type']} leaks: the {leak['side']} alone tells it apart (AUROC "
        f"{printed(leak['auroc'], 2)}): {leak['gives_away']}"
        for task, leak in leaks
    ]
    verdict = f"{len(leaks)} leak(s)" if leaks else "no leak"
    return lines + [f"shortcut audit of {sample} pairs a split: {verdict}; {dataset / AUDIT_FILE} (avjudge data audit)"]
