"""The scoring core (`avjudge.scoring`): one decode plan for every scorer, every input form of a clip scored alike,
one outcome per clip, and every product entry point (score, metrics run, bench run, filter, the server, the reward
functions) giving a clip the same numbers through it, each clip decoded once per job."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from avjudge.judges import Judge, ScoreResult
from avjudge.media import (
    NATIVE_FPS,
    DecodeNeeds,
    MediaError,
    decode,
    encode_audio,
    from_arrays,
    load_clip,
    merge_needs,
)
from avjudge.metrics import get_metric
from avjudge.prompts import task as get_task
from avjudge.scoring import FunctionScorer, JudgeScorer, MetricScorer, Scoring
from avjudge.world import MANIFEST

# ---- the plan ------------------------------------------------------------------------------


def test_one_plan_serves_every_consumer():
    judge = DecodeNeeds(video=True, audio=True, fps=1.0, sample_rate=16000, channels=1)
    lips = DecodeNeeds(video=True, audio=True, fps=25.0, sample_rate=16000, channels=1)
    native = DecodeNeeds(video=True, fps=NATIVE_FPS)
    mos = DecodeNeeds(audio=True, sample_rate=48000, channels=1)
    plan = merge_needs([judge, lips])
    assert (plan.video, plan.audio, plan.fps, plan.sample_rate, plan.channels) == (True, True, 25.0, 16000, 1)
    assert merge_needs([judge, native]).options()["fps"] is None  # one consumer samples the file's own frames
    both = merge_needs([judge, mos])  # rates differ: the clip's own rate, each resampling it
    assert both.sample_rate is None and both.channels == 1
    assert merge_needs([mos]).options() == {
        "video": False,
        "audio": True,
        "fps": None,
        "sample_rate": 48000,
        "channels": 1,
        "audio_to_end": False,
        "max_pixels": None,
        "end": None,
        "longest": None,
    }
    # a clip refused for its length only where every reader refuses it, at the longest any takes
    windowed = [replace(judge, longest=30.0), replace(lips, longest=60.0)]
    assert merge_needs(windowed).longest == 60.0 and merge_needs([*windowed, mos]).longest is None
    # frames at the largest size any reader takes; a reader of frames at their own size takes them whole
    small, large = (replace(n, max_pixels=p) for n, p in ((judge, 100 * 100), (lips, 200 * 200)))
    assert merge_needs([small, large, mos]).max_pixels == 200 * 200
    assert merge_needs([small, native]).max_pixels is None
    assert merge_needs([small, mos]).options()["max_pixels"] == 100 * 100
    assert merge_needs([mos]).max_pixels is None  # no reader of frames
    # as far into the clip as any reads: a reader of the whole clip takes it whole
    head = replace(mos, max_seconds=30.0)
    assert merge_needs([head, replace(judge, max_seconds=10.0)]).options()["end"] == 30.0
    assert merge_needs([head, judge]).max_seconds is None
    with pytest.raises(ValueError, match="rate it samples"):
        DecodeNeeds(video=True)


# ---- the scorers ---------------------------------------------------------------------------


class _RecordingJudge:
    """What a judge is asked: the texts and spoken lines its scorer hands it."""

    def __init__(self, task: str):
        self.task = get_task(task)
        self.needs = DecodeNeeds(video=True, fps=1.0)
        self.calls = []

    def score(self, clips, texts, utterances):
        self.calls.append((texts, utterances))
        return [ScoreResult(score=0.5, delta=0.0, mass=1.0, yes_prob=0.5, no_prob=0.5) for _ in clips]


def test_each_judge_reads_its_caption_and_only_the_at_judge_the_spoken_line():
    clips = [SimpleNamespace(), SimpleNamespace()]  # the recording judge does not look at them
    captions = [{"video": "a red ball", "audio": "a bell", "utterance": "hello"}, {"audio": "a dog"}]
    vt, at = _RecordingJudge("vt"), _RecordingJudge("at")
    vt_out = JudgeScorer(vt).score(clips, captions)
    at_out = JudgeScorer(at).score(clips, captions)
    assert vt.calls == [(["a red ball"], None)]
    assert vt_out[1].error == "no video caption for the vt judge" and vt_out[0].values["score"] == 0.5
    assert at.calls == [(["a bell", "a dog"], ["hello", None])]
    assert all(o.ok for o in at_out)


def test_a_scorer_that_fails_on_one_clip_fails_that_clip_alone_and_a_bug_stops_the_run():
    clip = from_arrays(np.zeros((2, 8, 8, 3), np.uint8), 2.0)

    def picky(c):
        if c.frames.mean() > 0:
            raise ValueError("too bright")
        return 1.0

    bright = from_arrays(np.full((2, 8, 8, 3), 200, np.uint8), 2.0)
    scoring = Scoring([FunctionScorer("picky", picky), FunctionScorer("size", lambda c: c.frames.shape[1])])
    ok, bad = scoring.score([{"media": clip}, {"media": bright}])
    assert ok.values == {"picky": {"value": 1.0}, "size": {"value": 8.0}} and not ok.errors
    assert bad.errors == {"picky": "too bright"} and bad.values == {"size": {"value": 8.0}}
    unread = Scoring([FunctionScorer("size", lambda c: 1.0)]).score([{"video": "x" * 300 + ".mp4"}])[0]
    assert "cannot be read" in unread.error and not unread.values  # a name too long for any file system
    broken = Scoring([FunctionScorer("bug", lambda c: c.no_such_field)])
    with pytest.raises(AttributeError):  # a fault of the code is no clip's error: it stops the run
        broken.score([{"media": clip}])
    with pytest.raises(Exception, match="two scorers"):
        Scoring([FunctionScorer("x", float), FunctionScorer("x", float)])


def test_items_of_one_file_decode_once_and_each_gets_the_error_of_its_own_plan(tmp_path):
    sound = tmp_path / "tone.wav"
    encode_audio(sound, 0.1 * np.sin(np.linspace(0, 2000, 16000)), 16000)
    loud = FunctionScorer("loud", lambda c: float(np.abs(c.audio).max()), DecodeNeeds(audio=True))
    bright = FunctionScorer("bright", lambda c: float(c.frames.mean()))  # reads frames: a WAV has none
    scoring = Scoring([loud, bright])
    both, sound_only, frames_only = scoring.score(
        [
            {"video": str(sound)},
            {"video": str(sound), "scorers": ["loud"]},
            {"video": str(sound), "scorers": ["bright"]},
        ]
    )
    assert both.error and "no video stream" in both.error  # asked for both: the one plan cannot be had
    assert sound_only.values["loud"]["value"] == pytest.approx(0.1, abs=1e-3) and not sound_only.errors
    assert frames_only.error and "no video stream" in frames_only.error


# ---- every input form of a clip ------------------------------------------------------------


@pytest.fixture(scope="module")
def scorers(tiny_judges):
    judge = tiny_judges["qwen2_5_omni"]
    av = Judge.load("av", judge, workers=1)
    vt = Judge.load("vt", judge, workers=1)
    return {"av": av, "vt": vt, "dnsmos": get_metric("dnsmos")}


@pytest.fixture
def world(world_records):
    return world_records


def _core(scorers) -> Scoring:
    return Scoring([JudgeScorer(scorers["av"]), JudgeScorer(scorers["vt"]), MetricScorer(scorers["dnsmos"])])


def _figures(record) -> dict:
    return {
        "av": record.values["av"]["score"],
        "vt": record.values["vt"]["score"],
        "dnsmos": record.values["dnsmos"]["dnsmos_ovrl"],
    }


def test_a_clip_scores_alike_from_its_file_its_bytes_and_its_arrays_in_memory(scorers, world):
    core = _core(scorers)
    path, captions = world[0]["video"], world[0]["captions"]
    native = decode(path)  # every frame at the file's rate, the audio at its own rate and channels
    stereo = np.vstack([native.audio, native.audio])  # a trainer's (C, N) waveform
    chw = native.frames.transpose(0, 3, 1, 2).astype(np.float32) / 255.0  # a trainer's float (T, 3, H, W) frames
    inputs = [
        {"video": path},
        {"video": open(path, "rb").read()},
        {"media": from_arrays(native.frames, native.fps, native.audio, native.sample_rate)},
        {"media": from_arrays(chw, native.fps, stereo, native.sample_rate)},
    ]
    records = core.score([{**item, "captions": captions} for item in inputs])
    assert all(r.error is None and not r.errors for r in records), records
    reference = _figures(records[0])
    for record in records[1:]:
        assert _figures(record) == pytest.approx(reference, abs=1e-6)
    # the plan brings a clip in memory to what decoding its file gives
    conformed = load_clip(inputs[2]["media"], core.needs)
    decoded = load_clip(path, core.needs)
    np.testing.assert_array_equal(conformed.frames, decoded.frames)
    np.testing.assert_allclose(conformed.audio, decoded.audio, atol=1e-6)
    with pytest.raises(MediaError, match="frames in memory"):
        from_arrays(np.zeros((2, 8, 8), np.uint8), 1.0)
    with pytest.raises(MediaError, match="no bytes"):
        load_clip(b"", core.needs)


# ---- every entry point, one plan, one decode -------------------------------------------------


@pytest.fixture
def count_decodes(monkeypatch):
    """How often the core decoded each input."""
    import avjudge.scoring.core as core

    counts: Counter = Counter()
    real = core.load_clip

    def counting(video, needs, audio=None, *budget):
        counts[str(video)] += 1
        return real(video, needs, audio, *budget)

    monkeypatch.setattr(core, "load_clip", counting)
    return counts


def test_every_entry_point_scores_a_clip_to_the_same_numbers_decoding_it_once(
    scorers, world, small_world, tiny_judges, tmp_path, count_decodes
):
    from avjudge.bench import load_prompts
    from avjudge.bench.prompt_files import write_prompts
    from avjudge.bench.runner import SAMPLES, run_bench
    from avjudge.bench.synthetic import make_model_folders, world_prompts
    from avjudge.filter import parse_rules, run_filter
    from avjudge.jsonl import read_jsonl
    from avjudge.rewards import Reward, RewardTerm, sample
    from avjudge.rewards.adapters import trl_reward
    from avjudge.scoring.clip_scorer import ClipScorer
    from avjudge.scoring.dimensions import parse_dimensions
    from avjudge.scoring.jobs import run_metrics, score_items
    from avjudge.serve.service import ScoreService

    paths = [c["video"] for c in world]
    texts = [c["captions"]["video"] for c in world]
    # the references: each judge's own API, and the metric on the file decoded as it is
    expected = {
        "av": [r.score for r in scorers["av"].score(paths)],
        "vt": [r.score for r in scorers["vt"].score(paths, texts)],
        "dnsmos": [scorers["dnsmos"].compute(decode(p, video=False))["dnsmos_ovrl"] for p in paths],
    }
    got: dict[str, dict[str, list]] = {}

    # avjudge score: one judge, one plan
    for task in ("av", "vt"):
        score_items(scorers[task], world, tmp_path / f"score_{task}.jsonl", progress=False)
        got.setdefault("score", {})[task] = [r["score"] for r in read_jsonl(tmp_path / f"score_{task}.jsonl")]
    # avjudge metrics run
    run_metrics(["dnsmos"], small_world / MANIFEST, tmp_path / "metrics.jsonl", progress=False)
    by_id = {r["id"]: r for r in read_jsonl(tmp_path / "metrics.jsonl")}
    got["metrics run"] = {"dnsmos": [by_id[c["id"]]["dnsmos_ovrl"] for c in world]}
    assert all(count_decodes[p] == 3 for p in paths)  # once per job: av, vt, metrics
    count_decodes.clear()

    # avjudge bench run and filter: the three dimensions of one scorer, each clip decoded once for all of them
    dims = parse_dimensions("av,vt,dnsmos")
    clip_scorer = ClipScorer(dims, {"av": tiny_judges["qwen2_5_omni"], "vt": tiny_judges["qwen2_5_omni"]})
    manifest = tmp_path / "three.jsonl"
    manifest.write_text("".join(json.dumps(c) + "\n" for c in world))
    suite = write_prompts(world_prompts(manifest), tmp_path / "suite.json")
    make_model_folders(manifest, tmp_path / "videos", ["reference"])
    run_bench(load_prompts(suite), tmp_path / "videos", tmp_path / "bench", clip_scorer, progress=False)
    samples = {r["prompt_id"]: r["scores"] for r in read_jsonl(tmp_path / "bench" / SAMPLES)}
    got["bench run"] = {d: [samples[c["id"]][d] for c in world] for d in ("av", "vt", "dnsmos")}
    run_filter(manifest, parse_rules("av>=0,vt>=0,dnsmos>=0"), tmp_path / "filter", clip_scorer, progress=False)
    kept = {r["id"]: r["scores"] for r in read_jsonl(tmp_path / "filter" / "kept.jsonl")}
    got["filter"] = {d: [kept[c["id"]][d] for c in world] for d in ("av", "vt", "dnsmos")}
    assert sorted(count_decodes.values()) == [1] * 2 * len(world)  # the bench's copies, then the world's clips
    count_decodes.clear()

    # the reward server's service: items naming different scorers of one clip share one decode
    service = ScoreService({"av": scorers["av"], "vt": scorers["vt"]}, {"dnsmos": scorers["dnsmos"]})
    items = [
        {"id": f"{k}{name}", "judge": name, "video": p, "text": t, "output": "dnsmos_ovrl"}
        for k, (p, t) in enumerate(zip(paths, texts))
        for name in ("av", "vt", "dnsmos")
    ]
    results = {r["id"]: r["score"] for r in service.score_records(items)}
    got["serve"] = {name: [results[f"{k}{name}"] for k in range(len(paths))] for name in ("av", "vt", "dnsmos")}
    assert all(count_decodes[p] == 1 for p in paths)
    count_decodes.clear()

    # the reward: in process, and a trainer adapter over the service
    reward = Reward(
        {
            "av": scorers["av"],
            "vt": scorers["vt"],
            "dnsmos": RewardTerm(scorers["dnsmos"], output="dnsmos_ovrl"),
        }
    )
    batch = reward.score([sample({"video": p}, t) for p, t in zip(paths, texts)])
    got["Reward"] = {name: batch.terms[name] for name in ("av", "vt", "dnsmos")}
    assert all(count_decodes[p] == 1 for p in paths)
    served = trl_reward(Reward.served(service, {"av": 1.0}), media_from="completions")
    got["trl adapter"] = {"av": served(prompts=texts, completions=paths)}

    # a judge sharing a decode with a reader of larger frames (the VT judge's 360x420 beside the AV judge's sync
    # sampling, 480x640 / 16) gets its frames scaled from the shared ones, its own pixels by the decoder's scaler: the
    # numbers of its own API on the clip that plan decodes, a rounding away from a decode of its own
    plan = merge_needs([scorers["av"].needs, scorers["vt"].needs, scorers["dnsmos"].needs])
    assert plan.max_pixels > scorers["av"].needs.max_pixels
    shared = [r.score for r in scorers["av"].score([load_clip(p, plan) for p in paths])]
    assert shared == pytest.approx(expected["av"], abs=1e-2)
    for entry, figures in got.items():
        for name, values in figures.items():
            alone = name != "av" or entry in ("score", "trl adapter")  # the AV judge's own plan
            assert values == pytest.approx(expected[name] if alone else shared, abs=1e-6), (entry, name)
