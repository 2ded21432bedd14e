"""Decoding handed to other processes (`avjudge.media.processes`) gives what decoding in threads gives."""

import pickle

import numpy as np
import pytest

from avjudge.cli import main
from avjudge.jsonl import read_jsonl
from avjudge.judges import Judge
from avjudge.media import DecodeNeeds, MediaError, decode
from avjudge.media.processes import machine_cores
from avjudge.scoring import decode_items


def test_files_decoded_in_processes_score_as_in_threads(tiny_judges, small_world, corrupt):
    videos = sorted(str(p) for p in small_world.rglob("*.mp4"))[:3] + [corrupt]
    in_threads = Judge.load("av", tiny_judges["qwen2_5_omni"], workers=2)
    in_processes = Judge.load("av", tiny_judges["qwen2_5_omni"], workers=2, decode_processes=2)
    expected = in_threads.score(videos)
    got = in_processes.score(videos)
    np.testing.assert_allclose([r.score for r in got[:3]], [r.score for r in expected[:3]], atol=1e-6)
    # the corrupt file's error comes back from its process whole, naming the file; the batch goes on
    assert got[3].score is None and got[3].error == expected[3].error and corrupt in got[3].error
    again = in_processes.score(videos[:1])  # the same processes serve a later call
    assert again[0].score == pytest.approx(got[0].score, abs=1e-6)
    error = pickle.loads(pickle.dumps(MediaError("clip.mp4", "truncated")))
    assert (error.path, error.problem, str(error)) == ("clip.mp4", "truncated", "clip.mp4: truncated")


def test_the_scoring_core_decodes_in_processes_as_in_threads(small_world, corrupt, tmp_path):
    videos = sorted(str(p) for p in small_world.rglob("*.mp4"))[:3]
    items = [{"id": str(i), "video": v} for i, v in enumerate(videos)]
    items += [{"id": "bad", "video": corrupt}, {"id": "gone", "video": str(tmp_path / "missing.mp4")}]
    items.append({"id": "memory", "media": decode(videos[0])})  # a clip in memory stays in this process
    needs = DecodeNeeds(video=True, audio=True, fps=1.0, sample_rate=16000, channels=1)
    in_threads = decode_items(items, needs, workers=2)
    in_processes = decode_items(items, needs, workers=2, processes=2)
    for a, b in zip(in_threads, in_processes):
        if isinstance(a["clip"], str):
            assert b["clip"] == a["clip"] and a["id"] in ("bad", "gone")
        else:
            np.testing.assert_array_equal(b["clip"].frames, a["clip"].frames)
            np.testing.assert_array_equal(b["clip"].audio, a["clip"].audio)


def test_avjudge_score_with_decoding_processes_writes_the_same_records(tiny_judges, small_world, tmp_path):
    videos = sorted(str(p) for p in small_world.rglob("*.mp4"))[:3]
    base = ["score", "--judge", f"av={tiny_judges['qwen2_5_omni']}", "--no-progress"]
    base += [arg for v in videos for arg in ("--input", v)]
    assert main([*base, "--out", str(tmp_path / "threads.jsonl")]) == 0
    assert main([*base, "--decode-processes", "2", "--out", str(tmp_path / "processes.jsonl")]) == 0
    threads = {r["id"]: r["score"] for r in read_jsonl(tmp_path / "threads.jsonl")}
    processes = {r["id"]: r["score"] for r in read_jsonl(tmp_path / "processes.jsonl")}
    assert threads.keys() == processes.keys() and len(threads) == 3
    assert processes == pytest.approx(threads, abs=1e-6)


def test_avjudge_serve_decodes_in_its_workers_and_processes(tiny_judges, monkeypatch):
    import uvicorn

    import avjudge.serve.app as app

    served = {}
    monkeypatch.setattr(app, "create_app", lambda service, settings: served.setdefault("service", service))
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: None)
    judge = f"av={tiny_judges['qwen2_5_omni']}"
    assert main(["serve", "--judge", judge, "--workers", "5", "--decode-processes", "3", "--port", "1"]) == 0
    scoring = served["service"].scoring
    assert (scoring.workers, scoring.processes) == (5, min(3, machine_cores()))  # capped at the cores
