"""Exports read back as their trainers read them, each clip as `train` shows it. Preference exports: VideoAlign's
CSV by its documented columns (KwaiVGI/VideoAlign, ``datasets/train/README.md``), LLaMA-Factory's ranking records
through its sharegpt converter's ranking branch (hiyouga/LLaMA-Factory @ 02e2fb3,
``src/llamafactory/data/converter.py``, ``SharegptDatasetConverter.__call__``, written out below) and its rule that
a prompt holds one placeholder per media file (``src/llamafactory/data/mm_plugin.py``)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from avjudge.cli import main
from avjudge.data import PairDataset, pair_clip
from avjudge.jsonl import read_jsonl
from avjudge.media import decode
from avjudge.perturb import SourcePool

VIDEOALIGN_COLUMNS = ["path_A", "path_B", "prompt", "fps_A", "num_frames_A", "fps_B", "num_frames_B"]


def _sharegpt_ranking(example: dict, info: dict) -> dict:
    """LLaMA-Factory's SharegptDatasetConverter on a ranking example: the system turn split off, the turns
    alternating user / assistant from a user turn, an odd count, chosen and rejected assistant turns; else the
    example is skipped (empty prompt and response)."""
    tags, columns = info["tags"], info["columns"]
    messages = example[columns["messages"]]
    system = ""
    if messages and messages[0][tags["role_tag"]] == tags["system_tag"]:
        system, messages = messages[0][tags["content_tag"]], messages[1:]
    accept = ((tags["user_tag"],), (tags["assistant_tag"],))
    broken = any(m[tags["role_tag"]] not in accept[k % 2] for k, m in enumerate(messages))
    broken = broken or len(messages) % 2 == 0  # a ranking example ends on the user's turn
    chosen, rejected = example[columns["chosen"]], example[columns["rejected"]]
    if not (isinstance(chosen, dict) and isinstance(rejected, dict)):
        broken = True
    elif chosen[tags["role_tag"]] not in accept[-1] or rejected[tags["role_tag"]] not in accept[-1]:
        broken = True
    if broken:
        return {"_prompt": [], "_response": []}
    return {
        "_prompt": messages,
        "_response": [chosen, rejected],
        "_system": system,
        "_videos": example.get(columns.get("videos", ""), None),
        "_audios": example.get(columns.get("audios", ""), None),
    }


@pytest.fixture(scope="module")
def records(pairs):
    return {r["id"]: r for p in (pairs / "pairs" / "av").glob("*.jsonl") for r in read_jsonl(p)}


def test_pairs_csv_is_videoaligns_csv_with_the_clips_the_judge_saw(pairs, records, tmp_path, capsys):
    out = tmp_path / "videoalign"
    assert main(["data", "export", "--input", str(pairs), "--format", "pairs-csv", "--out", str(out)]) == 0
    written = capsys.readouterr().out.split()
    assert str(out / "pairs_av_train.csv") in written and str(out / "pairs_av_test.csv") in written
    with open(out / "pairs_av_test.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert set(rows[0]) == {*VIDEOALIGN_COLUMNS, "AV"}
    assert {r["AV"] for r in rows} == {"A", "B"}  # the positive is A and B by turns
    by_file = {f"{rid.replace('/', '_')}.mp4": r for rid, r in records.items()}
    stats = json.loads((pairs / "stats.json").read_text())
    pool = SourcePool([json.loads(line) | {"video": str(Path(stats["manifest"]).parent / json.loads(line)["video"])}
                       for line in Path(stats["manifest"]).read_text().splitlines()])  # fmt: skip
    for row in rows:
        a, b = by_file[Path(row["path_A"]).name], by_file[Path(row["path_B"]).name]
        preferred, other = (a, b) if row["AV"] == "A" else (b, a)
        assert preferred["label"] == 1 and other["label"] == 0 and preferred["source_id"] == other["source_id"]
        clip = decode(row["path_A"])
        assert int(row["num_frames_A"]) == clip.num_frames and float(row["fps_A"]) == pytest.approx(clip.fps)
    # a negative's file is its clip as training showed it: the negative applied, cut to its window
    negative = next(by_file[Path(r[k]).name] for r in rows for k in ("path_A", "path_B")
                    if by_file[Path(r[k]).name]["label"] == 0)  # fmt: skip
    shown = pair_clip(negative, pool, root=pairs)
    exported = decode(out / "clips" / f"{negative['id'].replace('/', '_')}.wav", video=False)
    assert exported.duration == pytest.approx(shown.duration, abs=0.05)
    n = min(exported.audio.shape[1], shown.audio.shape[1])
    assert np.corrcoef(exported.audio[0, :n], shown.audio[0, :n])[0, 1] > 0.99


def test_llamafactory_ranking_reads_back_through_its_converter_in_both_orders(pairs, records, tmp_path):
    out = tmp_path / "lf"
    assert main(["data", "export", "--input", str(pairs), "--format", "llamafactory-ranking", "--out", str(out)]) == 0
    info = json.loads((out / "dataset_info.json").read_text())
    entry = info["av_test_ranking"]
    assert entry["ranking"] is True and entry["formatting"] == "sharegpt"
    examples = json.loads((out / entry["file_name"]).read_text())
    by_stem = {rid.replace("/", "_"): r for rid, r in records.items()}
    assert len(examples) % 2 == 0
    seen = {}
    for example in examples:
        converted = _sharegpt_ranking(example, entry)
        assert converted["_prompt"], example  # not skipped as abnormal
        prompt = converted["_prompt"][-1]["content"]
        # one placeholder per media file, as LLaMA-Factory's multimodal plugin demands
        assert prompt.count("<video>") == len(converted["_videos"]) == 2
        assert prompt.count("<audio>") == len(converted["_audios"]) == 2
        chosen, rejected = (r["content"] for r in converted["_response"])
        a, b = (by_stem[Path(v).stem] for v in converted["_videos"])
        assert {a["label"], b["label"]} == {0, 1} and chosen == ("A" if a["label"] else "B") and rejected != chosen
        assert [Path(p).stem for p in converted["_audios"]] == [Path(v).stem for v in converted["_videos"]]
        seen[(a["id"], b["id"])] = chosen
    for (a, b), chosen in seen.items():  # each pair in both orders, the verdict following the positive
        assert seen[(b, a)] == {"A": "B", "B": "A"}[chosen]


@pytest.mark.parametrize("fmt", ["llamafactory", pytest.param("swift", marks=pytest.mark.slow)])  # one writer
def test_yes_no_exports_hold_each_pair_as_train_shows_it(pairs, records, tmp_path, fmt):
    """Positives and negatives alike are the pair's window, picture and sound, as `train`'s PairDataset builds it:
    no length tells the answer (the issue's finding: a source's whole 4 s beside a negative's 2 s of sound)."""
    out = tmp_path / fmt
    assert main(["data", "export", "--input", str(pairs), "--format", fmt, "--out", str(out)]) == 0
    rows = (
        json.loads((out / "av_test.json").read_text())
        if fmt == "llamafactory"
        else list(read_jsonl(out / "av_test.jsonl"))
    )
    stats = json.loads((pairs / "stats.json").read_text())
    manifest = Path(stats["manifest"])
    pool = SourcePool([json.loads(line) | {"video": str(manifest.parent / json.loads(line)["video"])}
                       for line in manifest.read_text().splitlines()])  # fmt: skip
    by_stem = {rid.replace("/", "_"): r for rid, r in records.items()}
    shown_as = PairDataset(list(records.values()), pool, root=pairs)  # what train builds for a pair
    durations = {0: set(), 1: set()}
    assert {row["messages"][-1]["content"] for row in rows} == {"Yes", "No"}
    for row in rows:
        (video,), (audio,) = row["videos"], row["audios"]
        record = by_stem[Path(video).stem]
        assert Path(audio).stem == Path(video).stem and row["messages"][-1]["content"] == (
            "Yes" if record["label"] else "No"
        )
        shown = shown_as._clip(record)
        picture, sound = decode(video), decode(audio, video=False)
        window = record["window"]["duration_s"]
        assert shown.duration == pytest.approx(window, abs=1 / shown.fps)
        assert picture.num_frames == shown.num_frames and picture.duration == pytest.approx(shown.duration, abs=0.05)
        assert np.abs(picture.frames.astype(float) - shown.frames).mean() < 4  # x264 at crf 18
        assert sound.audio.shape == shown.audio.shape
        assert np.abs(sound.audio - shown.audio).max() < 1e-3  # 16-bit PCM
        muxed = decode(video, video=False)  # the MP4's own sound is the pair's sound too (AAC)
        n = min(muxed.audio.shape[1], shown.audio.shape[1])
        assert np.corrcoef(muxed.audio[0, :n], shown.audio[0, :n])[0, 1] > 0.99
        durations[record["label"]].add(round(sound.duration, 2))
    assert durations[0] == durations[1]  # the answer cannot be read from a length
