import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import avjudge.data.pairs as pairs_module
from avjudge.config import ConfigError
from avjudge.data import DecodedSources, assign_splits, build_dataset, load_manifest, load_recipe, pair_clip
from avjudge.data.export import export_dataset
from avjudge.errors import AvjudgeError
from avjudge.jsonl import read_jsonl
from avjudge.media import MediaError, decode
from avjudge.perturb import Context, SourcePool
from avjudge.prompts import render_query
from avjudge.resources import resolve
from avjudge.world import MANIFEST

RECIPE = resolve("world_demo", "recipe")


def small_recipe(world: Path, pairs: int = 48, **extra):
    overrides = [
        f"source={world / MANIFEST}",
        f"judges.av.pairs={pairs}",
        f"judges.vt.pairs={pairs}",
        f"judges.at.pairs={pairs}",
        "splits={train: 0.5, test: 0.5}",
    ]
    overrides += [f"{k}={v}" for k, v in extra.items()]
    return load_recipe(RECIPE, overrides)


def pairs_of(out: Path, judge: str) -> list[dict]:
    return [
        r for p in sorted((out / "pairs" / judge).glob("*.jsonl")) if "rejected" not in p.name for r in read_jsonl(p)
    ]


@pytest.fixture(scope="module")
def built(small_world, tmp_path_factory):
    recipe, source = small_recipe(small_world)
    out = tmp_path_factory.mktemp("built")
    stats = build_dataset(recipe, source, out, progress=False)
    return out, stats


def test_build_is_balanced_split_by_source_and_deterministic(built, small_world, tmp_path):
    out, stats = built
    for judge in ("av", "vt", "at"):
        entry = stats["judges"][judge]
        assert entry["pairs"] == 48 and entry["positives"] == entry["negatives"] == 24
        records = pairs_of(out, judge)
        splits_of_source = {}
        for r in records:
            splits_of_source.setdefault(r["source_id"], set()).add(r["split"])
        assert all(len(s) == 1 for s in splits_of_source.values())
        assert len({r["id"] for r in records}) == len(records)
        rejected = sum(1 for p in (out / "pairs" / judge).glob("*.rejected.jsonl") for _ in read_jsonl(p))
        assert entry["rejected"] == rejected
    assert set(stats["judges"]["av"]["negative_types"]) <= {
        "random_mismatch",
        "time_shift_medium",
        "time_shift_micro",
        "pitch_shift",
        "filter",
    }
    recipe, source = small_recipe(small_world)
    again = build_dataset(recipe, source, tmp_path / "again", progress=False)
    assert again["dataset_hash"] == stats["dataset_hash"]
    other, _ = small_recipe(small_world, seed=1)
    assert build_dataset(other, source, tmp_path / "other", progress=False)["dataset_hash"] != stats["dataset_hash"]


def test_positives_are_untouched_and_negatives_differ(built, small_world):
    out, _ = built
    pool = SourcePool(load_manifest(small_world / MANIFEST))
    records = pairs_of(out, "av")
    positive = next(r for r in records if r["label"] == 1)
    clip = pair_clip(positive, pool)
    reference = decode(pool.records[positive["source_id"]]["video"], sample_rate=16000, channels=1)
    start, length = positive["window"]["start_s"], positive["window"]["duration_s"]
    first = int(round(start * 16000))
    np.testing.assert_array_equal(clip.audio, reference.audio[:, first : first + int(round(length * 16000))])
    shown = (reference.timestamps >= start - 1e-6) & (reference.timestamps < start + length - 1e-6)
    np.testing.assert_array_equal(clip.frames, reference.frames[shown])
    for negative in (r for r in records if r["label"] == 0):
        source = decode(pool.records[negative["source_id"]]["video"], video=False, sample_rate=16000, channels=1)
        window = source.window(negative["window"]["start_s"], negative["window"]["duration_s"])
        assert not np.array_equal(pair_clip(negative, pool).audio, window.audio), negative["strategy"]
    for judge, field in (("vt", "video"), ("at", "audio")):
        for r in pairs_of(out, judge):
            original = pool.records[r["source_id"]]["captions"][field]
            assert (r["text"] == original) == (r["label"] == 1)


def test_decoded_sources_give_every_pair_its_own_clip_decode_each_source_once_and_keep_within_budget(
    built, small_world, monkeypatch
):
    out, _ = built
    pool = SourcePool(load_manifest(small_world / MANIFEST))
    records = pairs_of(out, "av") + pairs_of(out, "vt")
    decoded, decode_source = [], pairs_module._decode_source
    monkeypatch.setattr(pairs_module, "_decode_source", lambda *a: decoded.append(a[:3]) or decode_source(*a))

    def source_key(record):  # what a pair decodes: its source's file and the streams its judge reads
        return (pool.records[record["source_id"]]["video"], *pairs_module.NEEDS[record["dimension"]])

    sources = DecodedSources(budget_mb=1024)
    for record in records * 2:  # twice over: the second pass decodes nothing
        kept, fresh = pair_clip(record, pool, sources=sources), pair_clip(record, pool)
        for field in ("frames", "audio", "timestamps"):
            np.testing.assert_array_equal(getattr(kept, field), getattr(fresh, field))
    distinct = {source_key(r) for r in records}
    assert len(decoded) == len(distinct) + 2 * len(records) and len(sources) == len(distinct)
    kept = pair_clip(records[0], pool, sources=sources)
    with pytest.raises(ValueError, match="read-only"):
        kept.audio[0, 0] = 0.0  # a strategy writing into its input fails instead of corrupting later pairs

    # a budget of the two sources used last (clips differ in length) keeps those two and no other
    last_two = list(dict.fromkeys(source_key(r) for r in reversed(records)))[:2]
    sizes = [pairs_module._nbytes(decode_source(*key, None, 16000)) for key in last_two]
    small = DecodedSources(budget_mb=(sum(sizes) + 1024) / 2**20)
    for record in records:
        pair_clip(record, pool, sources=small)
    decoded.clear()
    for record in records:
        if source_key(record) in last_two:
            pair_clip(record, pool, sources=small)
    assert not decoded and len(small) == 2 and small.used <= small.budget
    pair_clip(next(r for r in records if source_key(r) not in last_two), pool, sources=small)
    assert len(decoded) == 1
    with pytest.raises(ConfigError, match="positive budget"):
        DecodedSources(0)


def test_lazy_and_materialized_negatives_are_identical(small_world, tmp_path, monkeypatch):
    recipe, source = load_recipe(
        RECIPE, [f"source={small_world / MANIFEST}", "judges={av: {pairs: 24}}", "splits={train: 0.5, test: 0.5}"]
    )
    out = tmp_path / "mat"
    decoded_frames = []
    decode_source = pairs_module._decode_source
    monkeypatch.setattr(
        pairs_module,
        "_decode_source",
        lambda path, video, *rest: decoded_frames.append(video) or decode_source(path, video, *rest),
    )
    build_dataset(recipe, source, out, materialize=True, progress=False)
    monkeypatch.undo()
    assert decoded_frames and not any(decoded_frames)  # writing a negative's audio decodes no frames
    pool = SourcePool(load_manifest(small_world / MANIFEST))
    negatives = [r for r in pairs_of(out, "av") if r["label"] == 0]
    assert negatives and all(r["media"].get("audio") for r in negatives)
    for r in negatives:
        materialized = pair_clip(r, pool, root=out)
        lazy = pair_clip({**r, "media": {"video": r["media"]["video"]}}, pool)
        np.testing.assert_array_equal(materialized.audio, lazy.audio)
        np.testing.assert_array_equal(materialized.frames, lazy.frames)
    exported = export_dataset(out, "llamafactory", tmp_path / "lf")
    info = json.loads((tmp_path / "lf" / "dataset_info.json").read_text())
    assert set(info) == {p.stem for p in exported if p.name != "dataset_info.json"}
    rows = json.loads((tmp_path / "lf" / "av_train.json").read_text())
    negative = next(row for row in rows if row["messages"][-1]["content"] == "No")
    assert negative["messages"][1]["content"] == "<video><audio>" + render_query("av")
    assert Path(negative["audios"][0]).exists() and negative["audios"][0].endswith(".wav")


def test_export_of_text_pairs(built, tmp_path):
    out, _ = built
    only_text = tmp_path / "text"
    shutil.copytree(out / "pairs" / "vt", only_text / "pairs" / "vt")
    shutil.copy(out / "stats.json", only_text)  # it names the sources the clips are cut from
    files = export_dataset(only_text, "swift", tmp_path / "swift_vt")
    rows = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    records = pairs_of(out, "vt")
    assert len(rows) == len(records)
    by_text = {render_query("vt", r["text"]): r["label"] for r in records}
    for row in rows:
        user = row["messages"][1]["content"]
        assert user.startswith("<video>") and "audios" not in row
        with pytest.raises(MediaError, match="no audio stream"):  # a VT judge is shown no sound
            decode(row["videos"][0])
        assert {1: "Yes", 0: "No"}[by_text[user[len("<video>") :]]] == row["messages"][2]["content"]


def test_hf_dataset_matches_jsonl(built):
    from datasets import load_from_disk

    out, stats = built
    for judge in ("av", "vt", "at"):
        ds = load_from_disk(str(out / "hf" / judge))
        assert sum(len(ds[s]) for s in ds) == stats["judges"][judge]["pairs"]
        row = ds["train"][0]
        assert json.loads(row["params"]) is not None and row["video"].endswith(".mp4")


def test_identical_media_never_crosses_splits(small_world, tmp_path):
    records = load_manifest(small_world / MANIFEST)
    copy = tmp_path / "copy.mp4"
    shutil.copy(records[0]["video"], copy)
    records.append({**records[0], "id": "copy_of_first", "video": str(copy)})
    for seed in range(8):
        splits = assign_splits(records, {"train": 0.5, "val": 0.25, "test": 0.25}, seed)
        assert splits["copy_of_first"] == splits[records[0]["id"]]
    counts = {
        s: list(assign_splits(records, {"train": 0.5, "test": 0.5}, 0).values()).count(s) for s in ("train", "test")
    }
    assert abs(counts["train"] - counts["test"]) <= 2  # six groups of sources, one of them doubled


def test_build_resumes_after_sigkill_keeping_its_work_and_ending_as_an_uninterrupted_build(small_world, tmp_path):
    args = [
        sys.executable, "-m", "avjudge.cli", "data", "build", "--recipe", "world_demo", "--no-progress",
        "--materialize", "--input", str(small_world / MANIFEST), "--set", "judges={av: {pairs: 160}}",
    ]  # fmt: skip
    whole = tmp_path / "whole"
    subprocess.run(args + ["--out", str(whole)], check=True, stdout=subprocess.DEVNULL)
    killed = tmp_path / "killed"
    proc = subprocess.Popen(args + ["--out", str(killed)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    target = killed / "pairs" / "av" / "train.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if target.exists() and len(target.read_bytes().splitlines()) >= 90:  # past the positives, into negatives
            break
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (killed / "stats.json").exists()
    # what the killed run finished: its complete lines, and the audio of the negatives among them
    finished = target.read_bytes()[: target.read_bytes().rfind(b"\n") + 1].splitlines(keepends=True)
    media = [killed / json.loads(line)["media"]["audio"] for line in finished if json.loads(line)["media"].get("audio")]
    assert len(finished) >= 90 and media
    stamps = {path: (path.stat().st_mtime_ns, path.read_bytes()) for path in media}
    subprocess.run(args + ["--out", str(killed)], check=True, stdout=subprocess.DEVNULL)
    # kept, not recomputed: the same lines first, the same audio files never written again
    assert target.read_bytes().splitlines(keepends=True)[: len(finished)] == finished
    assert {path: (path.stat().st_mtime_ns, path.read_bytes()) for path in media} == stamps

    # and the result is an uninterrupted build's, byte for byte: pairs and materialised audio
    def files(root):
        return {
            p.relative_to(root): p.read_bytes()
            for p in sorted(root.rglob("*"))
            if p.is_file() and (p.parts[len(root.parts)] in ("pairs", "media"))
        }

    built, resumed = files(whole), files(killed)
    assert built.keys() == resumed.keys() and any(p.suffix == ".wav" for p in built)
    assert all(built[p] == resumed[p] for p in built), [p for p in built if built[p] != resumed[p]]
    a = json.loads((whole / "stats.json").read_text())
    b = json.loads((killed / "stats.json").read_text())
    assert a["dataset_hash"] == b["dataset_hash"] and a["judges"]["av"]["pairs"] == 160


def test_a_folder_built_from_another_recipe_is_refused_with_a_message_and_kept(small_world, tmp_path, capsys):
    from avjudge.cli import main

    args = [
        "data",
        "build",
        "--recipe",
        str(RECIPE),
        "--no-progress",
        "--out",
        str(tmp_path),
        "--set",
        f"source={small_world / MANIFEST}",
    ]
    assert main(args + ["--set", "judges={av: {pairs: 16}}"]) == 0
    recipe, stats = (tmp_path / "recipe.yaml").read_text(), (tmp_path / "stats.json").read_text()
    assert main(args + ["--set", "judges={av: {pairs: 24}}"]) == 2  # an error message, not a traceback
    assert "holds a dataset built from another recipe" in capsys.readouterr().err
    assert (tmp_path / "recipe.yaml").read_text() == recipe and (tmp_path / "stats.json").read_text() == stats


def test_recipe_errors_are_clear(tmp_path, small_world):
    with pytest.raises(ConfigError, match="judges must be"):
        load_recipe(RECIPE, ["judges={xx: {pairs: 4}}"])
    with pytest.raises(ConfigError, match="sum to 1"):
        load_recipe(RECIPE, ["splits={train: 0.5}"])
    with pytest.raises(ConfigError, match="closed_vocabulary is an option of the rules"):
        load_recipe(RECIPE, ["text_backend=openai"])


@pytest.mark.parametrize(
    "override, words",
    [
        ("sample_rate=0", "sample_rate must be positive"),
        ("max_regenerations=-1", "max_regenerations 0 or more"),
        ("similarity_range=[0.9, 0.5]", "0 <= low < high <= 1"),
        ("judges.av.min_window_s=0", "min_window_s must be positive"),
        ("judges.vt.max_rounds=0", "max_rounds and dimensions_per_sample at least 1"),
        ("judges.av.strategies={filter: -1.0, pitch_shift: 1.0}", "strategies weights are 0 (left out) or positive"),
        ("judges.vt.dimensions={appearance: -0.5}", "dimensions weights are 0 (left out) or positive"),
        # a strategy's parameters: out of their bounds, unknown, or of a strategy never drawn (silently unused before)
        ("judges.av.strategy_params={filter: {order: 0}}", "judges.av.strategy_params: filter.order must be a whole"),
        ("judges.av.strategy_params={pitch_shift: {semitones: [1, 100]}}", "pitch_shift.semitones (a magnitude"),
        ("judges.av.strategy_params={time_shift_mikro: {shift_s: 0.1}}", "unknown strategy 'time_shift_mikro'"),
        ("judges.av.strategy_params={speed_change: {factor: [0.5, 2]}}", "speed_change never drawn"),
        ("judges.av.strategy_params={filter: lowpass}", "filter's parameters are a mapping"),
        (
            "judges.av.strategies={random_mismatch: 0, time_shift_medium: 0, time_shift_micro: 0, pitch_shift: 0, "
            "filter: 0}",
            "strategies weights leave every one out",
        ),
        ("judges.av.strategies={reverb: 1.0}", "unknown strategy 'reverb'"),
        ("judges.av.dimensions={appearance: 1}", "the av judge's take strategies"),
        ("judges.vt.strategies={filter: 1}", "judges.vt.strategies are the av judge's"),
        ("judges.at.dimensions={loudness: 1}", "unknown at dimension(s) ['loudness']"),
    ],
)
def test_a_recipe_value_out_of_its_range_is_refused_naming_it(override, words):
    with pytest.raises(ConfigError, match=re.escape(words)) as refused:
        load_recipe(RECIPE, [override])
    assert str(refused.value).startswith(str(RECIPE))  # the file named, however deep the value


def test_world_caption_edits_use_only_words_of_world_captions(built, small_world, tmp_path):
    out, _ = built
    words = lambda text: set(re.findall(r"[a-z]+", text.lower()))  # noqa: E731
    vocabulary = set().union(
        *(words(text) for r in read_jsonl(small_world / MANIFEST) for text in r["captions"].values())
    )
    for judge in ("vt", "at"):
        negatives = [r for r in pairs_of(out, judge) if r["label"] == 0]
        assert negatives and all(words(r["text"]) <= vocabulary for r in negatives), judge
    # the same build with the general lexicons reaches for words no world caption has ("oval", "walks")
    recipe, source = small_recipe(small_world, **{"text_backend_options.closed_vocabulary": "false"})
    recipe = dataclasses.replace(recipe, judges={j: recipe.judges[j] for j in ("vt", "at")})
    build_dataset(recipe, source, tmp_path, progress=False)
    assert any(
        not words(r["text"]) <= vocabulary for j in ("vt", "at") for r in pairs_of(tmp_path, j) if r["label"] == 0
    )


@pytest.mark.parametrize("name", ["avbench_av_100k", "avbench_vt_100k", "avbench_at_100k", "world_demo"])
def test_shipped_recipes_load_by_name_and_take_their_source_from_the_user(name, tmp_path):
    with pytest.raises(AvjudgeError, match="--set source=FILE.jsonl"):
        load_recipe(name)
    recipe, source = load_recipe(name, ["source=clips/manifest.jsonl"])
    assert source == Path("clips/manifest.jsonl")  # a source given by the user is relative to where they are
    assert load_recipe(RECIPE.parent / f"{name}.yaml", ["source=clips/manifest.jsonl"]) == (recipe, source)
    # a recipe file's own source is relative to the file
    (tmp_path / "r.yaml").write_text(RECIPE.read_text() + "source: world/world.jsonl\n")
    assert load_recipe(tmp_path / "r.yaml")[1] == tmp_path / "world" / "world.jsonl"
    for judge, cfg in recipe.judges.items():
        assert cfg.pairs >= 2
        if judge == "av":
            from avjudge.perturb import get_strategy

            for strategy, overrides in cfg.strategy_params.items():
                get_strategy(strategy, overrides)


def _caption_pairs(rng, n: int, tell: str | None) -> list[dict]:
    """VT records from one caption template: positives, in-vocabulary "counting" edits (drawn exactly like
    positives, so the text cannot tell them apart) and "appearance" edits that use ``tell``, a word no
    positive has (or an in-vocabulary colour when ``tell`` is None)."""
    colours, shapes, counts = ["red", "green", "blue", "pink"], ["circle", "square", "ring"], ["once", "twice"]

    def caption(colour=None):
        return (
            f"A {colour or rng.choice(colours)} {rng.choice(shapes)} and a {rng.choice(colours)} "
            f"{rng.choice(shapes)}. The first flashes {rng.choice(counts)}."
        )

    records = []
    for i in range(n):
        kind = ["positive", "positive", "counting", "appearance"][i % 4]
        text = caption(tell) if kind == "appearance" else caption()
        strategy = "positive" if kind == "positive" else "text_edit"
        records.append(
            {
                "id": f"p{i}",
                "source_id": f"s{i // 4}",
                "dimension": "vt",
                "label": int(kind == "positive"),
                "strategy": strategy,
                "negative_type": kind,
                "params": {},
                "media": {"video": f"s{i // 4}.mp4"},
                "text": text,
            }  # fmt: skip
        )
    return records


def test_gram_features_mark_the_words_and_word_pairs_a_text_holds():
    from avjudge.data.audit import gram_features, gram_index

    index = gram_index(["A red circle.", "a blue circle"])
    assert sorted(index) == [
        ".",
        "a",
        "a blue",
        "a red",
        "blue",
        "blue circle",
        "circle",
        "circle .",
        "red",
        "red circle",
    ]
    x = gram_features(["a red circle", "a green circle"], index)  # "green" is no column: ignored
    held = [{g for g, i in index.items() if row[i]} for row in x.tolist()]
    assert held == [{"a", "red", "circle", "a red", "red circle"}, {"a", "circle"}]


@pytest.mark.parametrize("tell", ["mauve", None])
def test_text_leak_finds_negatives_that_give_themselves_away(tmp_path, tell):
    from avjudge.data.audit import text_leak

    rng = np.random.default_rng(0)
    for split, n in (("train", 400), ("test", 400)):
        path = tmp_path / "pairs" / "vt" / f"{split}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in _caption_pairs(rng, n, tell)))
    leak = text_leak(tmp_path, "vt")
    assert leak["pairs"] == 400 and set(leak["per_type"]) == {"appearance", "counting"}
    assert abs(leak["per_type"]["counting"] - 0.5) < 0.1  # drawn like the positives: nothing to read
    if tell:
        assert leak["per_type"]["appearance"] > 0.95
    else:
        assert abs(leak["per_type"]["appearance"] - 0.5) < 0.1
    with pytest.raises(ConfigError, match="reads no text"):
        text_leak(tmp_path, "av")


def test_a_parquet_manifest_gives_the_records_its_jsonl_gives(small_world, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow

    rows = [json.loads(line) for line in (small_world / MANIFEST).read_text().splitlines()]
    rows = [{"id": r["id"], "video": str(small_world / r["video"]), "captions": r["captions"]} for r in rows]
    del rows[1]["captions"]["utterance"]  # a row without a caption the others have: absent, not None
    (tmp_path / "world.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    pq.write_table(pyarrow.Table.from_pylist(rows), tmp_path / "world.parquet")
    from_jsonl, from_parquet = load_manifest(tmp_path / "world.jsonl"), load_manifest(tmp_path / "world.parquet")
    assert [(r["id"], r["video"], r["captions"]) for r in from_parquet] == [
        (r["id"], r["video"], r["captions"]) for r in from_jsonl
    ]
    assert "utterance" not in from_parquet[1]["captions"] and "utterance" in from_parquet[0]["captions"]


def test_every_av_pair_is_a_window_of_one_length_cut_from_real_content(built, small_world):
    """Positives and negatives alike: a window of the source less the largest shift (2 s in world_demo), inside the
    stretch the negative keeps real; a shift's sound is the source's own from the shift earlier or later, its picture
    the window's frames; no pair pads anything."""
    out, _ = built
    pool = SourcePool(load_manifest(small_world / MANIFEST))
    recipe, _ = small_recipe(small_world)
    strategies = recipe.audio_strategies("av")
    seen = set()
    for record in pairs_of(out, "av"):
        duration = pool.duration(record["source_id"])
        start, length = record["window"]["start_s"], record["window"]["duration_s"]
        assert length == pytest.approx(duration - 2.0)
        low, high = (0.0, duration)
        if record["label"] == 0:
            low, high = strategies[record["strategy"]].kept_span(record["params"], duration, Context(pool=pool))
        assert low - 1e-9 <= start and start + length <= high + 1e-9
        clip = pair_clip(record, pool)
        assert clip.duration == pytest.approx(length) and abs(clip.audio.shape[1] - length * 16000) <= 1
        assert abs(len(clip.frames) - length * 25) <= 1
        if record["strategy"].startswith("time_shift"):
            seen.add(record["strategy"])
            source = decode(pool.records[record["source_id"]]["video"], sample_rate=16000, channels=1)
            heard = int(round((start - record["params"]["shift_s"]) * 16000))  # within a sample of rounding
            n = clip.audio.shape[1]
            assert any(np.array_equal(clip.audio, source.audio[:, k : k + n]) for k in (heard - 1, heard, heard + 1))
            shown = (source.timestamps >= start - 1e-6) & (source.timestamps < start + length - 1e-6)
            np.testing.assert_array_equal(clip.frames, source.frames[shown])
    assert seen == {"time_shift_medium", "time_shift_micro"}


def test_a_source_too_short_for_its_window_is_skipped_and_counted(small_world, tmp_path):
    from avjudge.data.windows import TOO_SHORT

    recipe, source = small_recipe(small_world, **{"judges.av.min_window_s": 2.0})
    stats = build_dataset(recipe, source, tmp_path / "d", progress=False)
    durations = {r["id"]: r["duration"] for r in load_manifest(small_world / MANIFEST)}
    short = {i for i, d in durations.items() if d - 2.0 < 2.0}
    assert short and short != set(durations)  # the small world's clips are 3-5 s long
    assert stats["judges"]["av"]["rejection_reasons"].get(TOO_SHORT) == len(short)
    assert not {r["source_id"] for r in pairs_of(tmp_path / "d", "av")} & short
    assert stats["judges"]["av"]["pairs"] == 48


def test_nuisance_positives_are_muted_and_black_in_sync_inside_their_window(small_world, tmp_path):
    recipe, source = small_recipe(small_world, **{"judges.av.nuisance_positives": 0.5})
    stats = build_dataset(recipe, source, tmp_path / "d", progress=False)
    pool = SourcePool(load_manifest(small_world / MANIFEST))
    muted = [r for r in pairs_of(tmp_path / "d", "av") if r["label"] == 1 and r["strategy"] == "in_sync_mute"]
    assert 6 <= len(muted) <= 18 and stats["judges"]["av"]["nuisance_positives"] == len(muted)
    for record in muted:
        begin, length = record["params"]["start_s"], record["params"]["length_s"]
        window = record["window"]
        assert window["start_s"] <= begin and begin + length <= window["start_s"] + window["duration_s"] + 1e-9
        clip = pair_clip(record, pool)
        at = clip.timestamps - clip.start
        inside = (at >= begin - window["start_s"]) & (at < begin - window["start_s"] + length - 1e-6)
        assert inside.any() and clip.frames[inside].max() == 0 and clip.frames[~inside].max() > 0
        first = int(round((begin - window["start_s"]) * 16000)) + 1  # within a sample of rounding at each end
        assert not clip.audio[:, first : first + int(length * 16000) - 2].any()
        assert record["negative_type"] == "positive"


def test_a_redrawn_shift_gets_a_window_inside_its_new_span(small_world, tmp_path):
    from avjudge.data import PairDataset, load_pairs

    recipe, source = small_recipe(small_world, **{"judges.av.pairs": 96})
    build_dataset(recipe, source, tmp_path / "d", progress=False)
    pool = SourcePool(load_manifest(small_world / MANIFEST))
    records = load_pairs(tmp_path / "d", "av", "train")
    strategies = recipe.audio_strategies("av")
    dataset = PairDataset(records, pool, strategies=strategies)
    shifts = [i for i, r in enumerate(records) if r["strategy"].startswith("time_shift")]
    assert shifts
    for i in shifts:
        record, clip = dataset.redrawn(i, [5, i])
        assert record["params"] != records[i]["params"]
        assert record["window"]["duration_s"] == records[i]["window"]["duration_s"]
        low, high = strategies[record["strategy"]].kept_span(record["params"], pool.duration(record["source_id"]),
                                                            Context(pool=pool))  # fmt: skip
        assert low - 1e-9 <= record["window"]["start_s"] <= high - record["window"]["duration_s"] + 1e-9
        assert clip.duration == pytest.approx(record["window"]["duration_s"])


def test_a_cut_shift_in_a_recipe_of_whole_clips_is_refused(small_world):
    recipe, _ = small_recipe(small_world, **{"judges.av.crop": "false"})
    with pytest.raises(ConfigError, match="crop is false"):
        recipe.audio_strategies("av")
    paper, _ = small_recipe(
        small_world,
        **{"judges.av.crop": "false", "judges.av.strategy_params": "{time_shift_medium: {fill: silence}, "
           "time_shift_micro: {fill: silence}}"},
    )  # fmt: skip
    assert set(paper.audio_strategies("av")) >= {"time_shift_medium", "time_shift_micro"}


@pytest.mark.parametrize(
    "bad, message",
    [
        ('{"id": "c", "video": "c.mp4"', r"m.jsonl:3: not valid JSON"),  # a typo on the last line is not a torn write
        ('["c", "c.mp4"]', r"m.jsonl:3: a record must be a JSON object, not list"),
        ('{"id": "c", "video": null}', r"m.jsonl:3: 'video' must be a path"),
        ('{"id": null, "video": "c.mp4"}', r"m.jsonl:3: 'id' must be a non-empty string"),
        ('{"id": "c", "video": "c.mp4", "captions": "a dog"}', r"m.jsonl:3: 'captions' must be a mapping"),
        (
            '{"id": "c", "video": "c.mp4", "captions": {"video": 5}}',
            r"m.jsonl:3: captions are text, not \{'video': 5\}",
        ),
        ('{"id": "c", "video": "c.mp4", "duration": NaN}', r"m.jsonl:3: 'duration' is the clip's length in seconds"),
        ('{"id": "c", "video": "c.mp4", "meta": {"duration": -4}}', r"m.jsonl:3: 'meta.duration' is the clip's length"),
        ('{"id": "c", "video": "c.mp4", "duration": "5 s"}', r"m.jsonl:3: 'duration' is the clip's length"),
    ],
)
def test_a_users_manifest_is_read_strictly_every_bad_line_named(tmp_path, capsys, bad, message):
    from avjudge.cli import main
    from avjudge.data import ManifestError

    lines = ['{"id": "a", "video": "a.mp4"}', '{"id": "b", "video": "b.mp4", "captions": null}', bad]
    (tmp_path / "m.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(ManifestError, match=message):
        load_manifest(tmp_path / "m.jsonl")
    argv = [
        "data",
        "build",
        "--recipe",
        "world_demo",
        "--input",
        str(tmp_path / "m.jsonl"),
        "--out",
        str(tmp_path / "d"),
    ]
    assert main(argv) == 2 and "m.jsonl:3" in capsys.readouterr().err  # a clear error, exit 2, no traceback


def test_a_manifest_with_a_byte_order_mark_reads(tmp_path):
    (tmp_path / "m.jsonl").write_bytes(b"\xef\xbb\xbf" + b'{"id": "a", "video": "a.mp4"}\n')
    (record,) = load_manifest(tmp_path / "m.jsonl")
    assert record["id"] == "a" and record["captions"] == {} and record["meta"] == {}


def test_a_build_resumed_from_a_changed_manifest_is_refused(small_world, tmp_path):
    manifest = tmp_path / "m.jsonl"
    lines = (small_world / MANIFEST).read_text().splitlines()
    rooted = [json.dumps({**json.loads(line), "video": str(small_world / json.loads(line)["video"])}) for line in lines]
    manifest.write_text("\n".join(rooted) + "\n")
    recipe, _ = small_recipe(small_world)
    build_dataset(recipe, manifest, tmp_path / "d", progress=False)
    manifest.write_text("\n".join(rooted[:-1]) + "\n")  # edited in place: one source fewer
    with pytest.raises(ConfigError, match="changed since"):
        build_dataset(recipe, manifest, tmp_path / "d", progress=False)


def test_a_source_in_two_splits_is_found_at_the_end_of_a_build(built):
    from avjudge.data.build import check_splits

    out, _ = built
    check_splits(out, ["av", "vt", "at"])  # as built: every source in one split
    test = out / "pairs" / "av" / "test.jsonl"
    original = test.read_text()
    train_source = next(read_jsonl(out / "pairs" / "av" / "train.jsonl"))["source_id"]
    record = {**json.loads(original.splitlines()[0]), "source_id": train_source}
    try:
        test.write_text(original + json.dumps(record) + "\n")
        with pytest.raises(ConfigError, match=f"source {train_source!r} is in both the test and the train split"):
            check_splits(out, ["av"])
    finally:
        test.write_text(original)
