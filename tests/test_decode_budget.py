"""The decode budget (`avjudge.media.budget`): a clip is refused from its headers before anything is decoded, frames
are scaled to what their readers take as they are decoded, a clip in memory is held to the same rules, and the
server decodes a request's clips apart from the forward passes other requests share."""

from __future__ import annotations

import importlib
import threading
import time
import tracemalloc

import numpy as np
import pytest
from fastapi.testclient import TestClient

from avjudge.cli import main
from avjudge.media import (
    DecodeBudget,
    DecodeNeeds,
    MediaError,
    conform,
    decode,
    encode_video,
    fit_pixels,
    from_arrays,
    load_clip,
    merge_needs,
)
from avjudge.scoring import core
from avjudge.serve.app import ServerSettings, create_app
from avjudge.serve.service import ScoreService

from .helpers import coloured_frames, requires_ffmpeg


@pytest.fixture(scope="module")
def large_clip(tmp_path_factory):
    """4 s of 640x480 frames at 5 fps with a tone: 1.5 MB a frame once decoded at its own size."""
    path = tmp_path_factory.mktemp("budget") / "large.mp4"
    tone = 0.1 * np.sin(2 * np.pi * 440 * np.arange(4 * 16000) / 16000)[None]
    return encode_video(path, coloured_frames(20, 640, 480), 5, tone.astype(np.float32), 16000)


decode_module = importlib.import_module("avjudge.media.decode")  # the module (the package's `decode` is its function)


def _nothing_decoded(monkeypatch):
    def refuse(*args):
        raise AssertionError("a frame was decoded")

    monkeypatch.setattr(decode_module, "_take", refuse)


@pytest.mark.parametrize(
    "budget, message",
    [
        (DecodeBudget(max_seconds=3.0), "lasts 4.0 s, over the 3 s a clip may last here"),
        (DecodeBudget(max_frame_pixels=320 * 240), "has 640x480 frames, over the 76,800 pixels"),
        (DecodeBudget(max_decoded_mb=1.0), "MB once decoded, over the 1 MB a clip may take"),
    ],
)
def test_a_clip_past_the_budget_is_refused_from_its_headers_before_decoding(large_clip, monkeypatch, budget, message):
    _nothing_decoded(monkeypatch)
    for source in (large_clip, large_clip.read_bytes()):  # a file and an upload alike
        with pytest.raises(MediaError, match=message):
            decode(source, fps=5, budget=budget)


def test_the_decoded_estimate_counts_what_the_plan_keeps(large_clip, monkeypatch):
    """20 frames of 640x480 are 17.6 MB at their own size; at 1 fps and scaled to 160x120 pixels, 0.3 MB."""
    budget = DecodeBudget(max_decoded_mb=2.0)
    with pytest.raises(MediaError, match="18 MB once decoded"):
        decode(large_clip, audio=False, budget=budget)
    clip = decode(large_clip, audio=False, fps=1, max_pixels=160 * 120, budget=budget)
    assert clip.frames.shape == (4, 120, 160, 3)
    audio_only = DecodeBudget(max_decoded_mb=0.2)  # 4 s of 16 kHz mono float32: 0.24 MB
    with pytest.raises(MediaError, match="0 MB once decoded"):
        decode(large_clip, video=False, budget=audio_only)


def test_decoding_stops_past_its_time(large_clip):
    with pytest.raises(MediaError, match=r"took longer than the 1e-06 s decoding may take here"):
        decode(large_clip, fps=5, budget=DecodeBudget(timeout_s=1e-6))
    with pytest.raises(ValueError, match="positive"):
        DecodeBudget(timeout_s=0)


def test_a_clip_in_memory_is_held_to_the_same_budget(large_clip):
    clip = decode(large_clip, fps=5)
    needs = DecodeNeeds(video=True, audio=True, fps=5.0)
    assert load_clip(clip, needs, budget=DecodeBudget()) is not None
    with pytest.raises(MediaError, match="lasts 4.0 s"):
        load_clip(clip, needs, budget=DecodeBudget(max_seconds=2.0))
    with pytest.raises(MediaError, match="has 640x480 frames"):
        load_clip(clip, needs, budget=DecodeBudget(max_frame_pixels=1000))


def test_frames_are_scaled_as_they_are_decoded_and_in_memory_alike(large_clip):
    whole = decode(large_clip, fps=2)
    scaled = decode(large_clip, fps=2, max_pixels=200 * 150)
    assert scaled.frames.shape == (8, 150, 200, 3)  # aspect kept, at most the pixels asked
    expected = np.stack([fit_pixels(f, 200 * 150) for f in whole.frames])
    np.testing.assert_array_equal(scaled.frames, expected)  # the file's frames, each scaled by the one function
    # a frame's colour survives the scaling (area averaging of a flat picture)
    np.testing.assert_allclose(scaled.frames.mean(axis=(1, 2)), whole.frames.mean(axis=(1, 2)), atol=2)
    needs = DecodeNeeds(video=True, audio=True, fps=2.0, max_pixels=200 * 150)
    in_memory = from_arrays(whole.frames, 2.0, whole.audio, whole.sample_rate)
    np.testing.assert_array_equal(conform(in_memory, needs).frames, load_clip(large_clip, needs).frames)
    small = decode(large_clip, fps=2, max_pixels=640 * 480)  # frames within the bound are as decoded
    np.testing.assert_array_equal(small.frames, whole.frames)
    with pytest.raises(ValueError, match="not both"):
        decode(large_clip, size=(64, 48), max_pixels=100)


def test_memory_while_decoding_is_bounded_by_the_readers_not_the_source(large_clip):
    """Decoded at its own size the clip's frames hold 17.6 MB; scaled to a reader's 160x120 they hold 1.1 MB, and
    decoding never holds more than a frame or two at source size besides."""

    def peak_mb(**options) -> float:
        tracemalloc.start()
        decode(large_clip, audio=False, fps=5, **options)
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        return peak

    assert peak_mb() > 17
    assert peak_mb(max_pixels=160 * 120) < 5


def test_a_judge_reads_frames_at_its_processors_size(av_vt_judges):
    for judge in av_vt_judges.values():
        assert judge.needs.max_pixels == judge.adapter.vision.max_pixels == judge.settings.max_pixels


def test_a_served_clip_past_the_budget_is_its_items_error(av_vt_judges, world_records, large_clip):
    service = ScoreService(av_vt_judges, budget=DecodeBudget(max_frame_pixels=320 * 240))
    items = [
        {"id": "large", "judge": "av", "video": str(large_clip)},
        {"id": "small", "judge": "av", "video": world_records[0]["video"]},
    ]
    with TestClient(create_app(service, ServerSettings())) as client:
        large, small = client.post("/v1/score", json={"items": items}).json()["results"]
    assert large["score"] is None and "over the 76,800 pixels a frame may have here" in large["error"]
    assert str(large_clip) in large["error"] and small["error"] is None


def test_a_clip_slow_to_decode_holds_its_own_request_not_anothers(av_vt_judges, world_records, monkeypatch):
    """The server decodes a request's clips before they join the shared queue: while one clip's decoding is held
    open, another request is decoded, batched, scored and answered."""
    slow, fast = world_records[0]["video"], world_records[1]["video"]
    release, started = threading.Event(), threading.Event()
    real = core.load_clip

    def held(video, *args):
        if video == slow:
            started.set()
            assert release.wait(60)
        return real(video, *args)

    monkeypatch.setattr(core, "load_clip", held)
    answers = {}
    with TestClient(create_app(ScoreService(av_vt_judges), ServerSettings())) as client:

        def ask(name, video):
            answers[name] = client.post("/v1/score", json={"items": [{"id": name, "judge": "av", "video": video}]})
            answers[name + "_at"] = time.monotonic()

        waiting = threading.Thread(target=ask, args=("slow", slow))
        waiting.start()
        assert started.wait(30)
        ask("fast", fast)
        assert "slow" not in answers  # answered while the slow clip was still being decoded
        release.set()
        waiting.join(60)
    assert answers["fast"].json()["results"][0]["error"] is None
    assert answers["slow"].json()["results"][0]["error"] is None and answers["slow_at"] > answers["fast_at"]


def test_serve_takes_its_budget_from_the_command_line(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["serve", "--metric", "dnsmos", "--max-frame-size", "big"])
    assert stop.value.code == 2
    assert "give a frame size as WIDTHxHEIGHT" in capsys.readouterr().err


@pytest.mark.slow
def test_hostile_clips_cost_the_server_what_an_ordinary_clip_does_and_others_keep_their_answers(tmp_path, monkeypatch):
    """`benchmarks/decode_budget.py` against `avjudge serve` as a process: 120 s of 2048x2048 in under 100 KB, by path
    and as an upload, is decoded for what its judge reads at the cost of an ordinary 60 s clip; 20 s of 4096x4096
    is refused from its headers; another caller's small clip is answered in seconds throughout."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[1] / "benchmarks" / "decode_budget.py"
    monkeypatch.syspath_prepend(str(path.parent))  # its neighbours import as they do when it runs
    spec = importlib.util.spec_from_file_location("decode_budget", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    figures = bench.measure(tmp_path)
    assert figures["sizes_kb"]["long"] < 100
    ordinary = figures.pop("60 s 512x512 (ordinary), path")
    assert ordinary["outcome"] == "scored"
    for name, case in figures.items():
        if name == "sizes_kb":
            continue
        assert case["other_caller_answers"] >= 1 and case["other_caller_max_s"] < 5, (name, case)
        if "4096" in name:
            assert "4096x4096 frames, over the 8,294,400 pixels" in case["outcome"] and case["answered_s"] < 2
            assert case["memory_growth_mb"] < 100, (name, case)
        else:
            assert case["outcome"] == "scored", (name, case)
            count = 4 if "x4" in name else 1
            # the margin: the other caller's forward passes overlap the hostile decode by chance, and at the AV
            # judge's 8 fps they are larger; one clip upload measured +312, +398 and +552 MB in three runs (the
            # ordinary clip +275), four +991 and +1,292 MB. Before the decode budget, one such clip cost +2.8 GB.
            assert case["memory_growth_mb"] < count * ordinary["memory_growth_mb"] + 400, (name, case, ordinary)


def test_a_judge_reading_a_long_clips_head_decodes_only_its_head(av_vt_judges, tmp_path):
    """``long_audio=head``: frames and sound from the same first window, nothing past it decoded; a clip in memory
    is cut the same way."""
    from avjudge.judges import Judge

    judge = Judge.load("av", av_vt_judges["av"].adapter.checkpoint, long_audio="head", workers=1)
    window = judge.adapter.max_audio_seconds
    seconds = int(window) + 3
    tone = (0.1 * np.sin(2 * np.pi * 330 * np.arange(seconds * 16000) / 16000))[None].astype(np.float32)
    path = encode_video(tmp_path / "long.mp4", coloured_frames(seconds * 4, 64, 48), 4, tone, 16000)
    assert judge.needs.max_seconds == window and av_vt_judges["av"].needs.max_seconds is None
    clip = load_clip(path, judge.needs)
    assert clip.duration == pytest.approx(window) and clip.timestamps.max() < window
    assert clip.audio.shape[1] == int(round(window * 16000))
    whole = decode(path)  # the file's own frames and sound, whole, in memory
    in_memory = conform(from_arrays(whole.frames, whole.fps, whole.audio, whole.sample_rate), judge.needs)
    np.testing.assert_array_equal(in_memory.frames, clip.frames)
    np.testing.assert_allclose(in_memory.audio, clip.audio, atol=1e-4)
    assert judge.score([path])[0].ok and not av_vt_judges["av"].score([str(path)])[0].ok  # the error mode refuses


def test_the_timeout_binds_inside_a_group_of_pictures_decoded_at_once(tmp_path):
    """One keyframe for 20 s: sampling it at 1 fps decodes the whole group in one go when the next keyframe (the end)
    arrives; the time is checked frame by frame there too, not only between packets."""
    frames = coloured_frames(500, 320, 240)
    path = encode_video(tmp_path / "one_group.mp4", frames, 25, gop=10_000)
    start = time.monotonic()
    decode(path, audio=False, fps=1.0)  # unbounded: the whole group decodes
    whole = time.monotonic() - start
    budget = DecodeBudget(timeout_s=whole / 10)
    start = time.monotonic()
    with pytest.raises(MediaError, match="took longer than"):
        decode(path, audio=False, fps=1.0, budget=budget)
    assert time.monotonic() - start < whole  # stopped part way, not after the group


@requires_ffmpeg
def test_a_stream_whose_frames_grow_past_its_headers_is_refused_naming_the_size(tmp_path):
    """MPEG-TS carries a resolution change: 1 s at 64x64, then 1 s at 256x256, the headers declaring the first."""
    import subprocess

    parts = []
    for size in (64, 256):
        mp4 = encode_video(tmp_path / f"{size}.mp4", coloured_frames(25, size, size), 25)
        parts.append(tmp_path / f"{size}.ts")
        subprocess.run(["ffmpeg", "-v", "error", "-i", str(mp4), "-c", "copy", "-bsf:v", "h264_mp4toannexb",
                        str(parts[-1])], check=True)  # fmt: skip
    joined = tmp_path / "grows.ts"
    subprocess.run(["ffmpeg", "-v", "error", "-i", "concat:" + "|".join(map(str, parts)), "-c", "copy", str(joined)],
                   check=True)  # fmt: skip
    with pytest.raises(MediaError, match="a frame of 256x256 at 1.0. s where its headers declare 64x64"):
        decode(joined, audio=False)


def test_a_clip_longer_than_the_judges_audio_window_is_refused_from_its_headers(tiny_judges, tmp_path, monkeypatch):
    """The tiny Omni judge's window is 30 s: 31 s of sound is refused before a frame or a sample is decoded (it was
    refused only once decoded); with long_audio=head its first 30 s are scored."""
    from avjudge.judges import Judge

    tone = (0.1 * np.sin(2 * np.pi * 440 * np.arange(31 * 16000) / 16000))[None].astype(np.float32)
    path = encode_video(tmp_path / "long.mp4", coloured_frames(31 * 5, 64, 64), 5, tone, 16000)
    judge = Judge.load("av", tiny_judges["qwen2_5_omni"], workers=1)
    assert judge.needs.longest == judge.adapter.max_audio_seconds == 30
    with monkeypatch.context() as patched:
        _nothing_decoded(patched)
        (result,) = judge.score([path])
    assert result.score is None and "longer than the judge's 30 s window (refused from its headers)" in result.error
    head = Judge.load("av", tiny_judges["qwen2_5_omni"], workers=1, long_audio="head")
    assert head.needs.longest is None and head.score([path])[0].error is None
    # a job that shares the decode with a reader of the whole clip decodes it; the judge still refuses its own part
    assert merge_needs([judge.needs, DecodeNeeds(audio=True)]).longest is None
