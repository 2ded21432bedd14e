"""Hostile or broken inputs to a reward: each is a flagged failure of its own sample (in process) or a 400 / its own
item's error (server), never an exception out of the reward call, another caller's 500, or a silently wrong score;
and no request makes the server allocate beyond a stated bound."""

from __future__ import annotations

import base64
import io
import json
import math
import time

import numpy as np
import pytest
from fastapi.testclient import TestClient

from avjudge.config import ConfigError
from avjudge.media import MediaError, decode, from_arrays, pack_clip, unpack_clip
from avjudge.rewards import Reward, clip_item, sample
from avjudge.serve.app import ServerSettings, create_app
from avjudge.serve.service import ScoreService


@pytest.fixture(scope="module")
def good(world_records):
    clip = decode(world_records[0]["video"])
    return {"frames": clip.frames, "fps": clip.fps, "audio": clip.audio, "sample_rate": clip.sample_rate}


def faults(good: dict) -> dict[str, dict]:
    """A good clip's arrays with one thing wrong each, as a trainer could hand them."""
    one_frame = {**good, "frames": good["frames"][:1], "audio": good["audio"][:, :1]}
    return {
        "no frames": {**good, "frames": np.zeros((0, 3, 64, 64), np.uint8)},
        "NaN sample rate": {**good, "sample_rate": float("nan")},
        "fps 1e-9": {**good, "fps": 1e-9},
        "NaN audio": {**good, "audio": np.where(np.arange(good["audio"].shape[1]) == 5, np.nan, good["audio"])},
        "audio x1000": {**good, "audio": good["audio"] * 1000},
        "one frame, one sample": one_frame,
        "ragged frames": {**good, "frames": [good["frames"][0], good["frames"][1][:10]]},
        "frames of strings": {**good, "frames": np.array([["a"]], dtype=object)},
    }


def test_each_fault_fails_its_own_sample_and_the_good_ones_score_as_alone(av_vt_judges, good):
    reward = Reward({"av": av_vt_judges["av"]})
    alone = reward.score([sample(clip_item(good))]).rewards[0]
    for name, bad in faults(good).items():
        batch = reward.score([sample(clip_item(good)), sample(clip_item(bad)), sample(clip_item(good))])
        assert batch.failed == [False, True, False], name
        assert batch.rewards[0] == batch.rewards[2] == pytest.approx(alone, abs=1e-6), name
        assert all(math.isfinite(r) for r in batch.rewards) and batch.errors[1], name


def test_audio_layouts_and_integer_pcm_score_as_their_float_channels_first_equivalent(av_vt_judges, good):
    reward = Reward({"av": av_vt_judges["av"]})
    mono = good["audio"].mean(0)
    as_float = reward.score([sample(clip_item({**good, "audio": mono[None]}))]).rewards[0]
    pcm = np.round(mono * 32767).astype(np.int16)
    channels_last = {**good, "audio": mono[:, None]}  # (N, 1): read as channels last, transposed
    as_int16 = reward.score([sample(clip_item({**good, "audio": pcm}))]).rewards[0]
    float_of_int16 = reward.score([sample(clip_item({**good, "audio": pcm.astype(np.float32) / 32768}))]).rewards[0]
    assert as_int16 == pytest.approx(float_of_int16, abs=1e-6)
    assert reward.score([sample(clip_item(channels_last))]).rewards[0] == pytest.approx(as_float, abs=1e-6)
    with pytest.raises(MediaError, match="peak is"):  # a float waveform outside [-1, 1] is refused, not scored
        from_arrays(None, None, mono * 1000, good["sample_rate"])


def _packed(arrays: dict) -> str:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return base64.b64encode(buffer.getvalue()).decode()


def test_a_packed_clip_is_bounded_by_its_declared_shapes_before_anything_is_read():
    # 10 frames of 6000 x 6000: 1 GB declared, a few hundred bytes sent
    huge = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), (10, 6000, 6000, 3), (0, 0, 0, 0))
    buffer = io.BytesIO()
    np.savez_compressed(buffer, frames=huge, fps=np.float64(25), duration=np.float64(0.4), start=np.float64(0))
    start = time.perf_counter()
    with pytest.raises(MediaError, match="over this server's"):
        unpack_clip(base64.b64encode(buffer.getvalue()).decode(), "clips.c", max_bytes=64 << 20)
    assert time.perf_counter() - start < 2.0  # refused from the header, not after inflating a gigabyte


def test_the_server_answers_each_hostile_request_alone(av_vt_judges, good, world_records):
    video = world_records[0]["video"]
    service = ScoreService({"av": av_vt_judges["av"]})
    clip = from_arrays(good["frames"], good["fps"], good["audio"], good["sample_rate"])
    with TestClient(create_app(service, ServerSettings(reward_judge="av", max_clip_mb=64))) as c:

        def score(body) -> int:
            return c.post("/v1/score", content=body if isinstance(body, bytes) else json.dumps(body).encode(),
                          headers={"Content-Type": "application/json"}).status_code  # fmt: skip

        packed = pack_clip(clip)
        archive = dict(np.load(io.BytesIO(base64.b64decode(packed))))
        bad_clips = {
            "negative duration": {**archive, "duration": np.float64(-1)},
            "1e12 duration": {**archive, "duration": np.float64(1e12)},
            "NaN audio": {**archive, "audio": np.full_like(archive["audio"], np.nan)},
        }
        item = {"id": "1", "judge": "av", "clip": "c"}
        assert score({"items": [item], "clips": {"c": packed}}) == 200
        for name, arrays in bad_clips.items():
            assert score({"items": [item], "clips": {"c": _packed(arrays)}}) == 400, name
        last = {**archive, "audio": archive["audio"].T.copy()}  # (N, C): read as channels last
        assert score({"items": [item], "clips": {"c": _packed(last)}}) == 200
        surrogate = '"\\ud800"'
        assert score(f'{{"items": [{{"id": "1", "judge": "av", "video": {surrogate}}}]}}'.encode()) == 400
        assert score(f'{{"items": [{json.dumps(item)}], "clips": {{{surrogate}: "x"}}}}'.encode()) == 400
        deep = b'{"items": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        assert score(deep) == 400
        reward = c.post("/get_reward", content=f'{{"query": [{surrogate}]}}'.encode(),
                        headers={"Content-Type": "application/json"})  # fmt: skip
        assert reward.status_code == 400
        ok = c.post("/get_reward", json={"query": [video]})
        assert ok.status_code == 200 and ok.json()["extra_logs"]["failed"] == [0.0]
        for body in ({"query": [video], "labels": 5}, {"query": [video], "labels": [{"a": 1}]},
                     {"query": [video], "prompts": ["x" * 10_000]}):  # fmt: skip
            answer = c.post("/get_reward", json=body)
            assert answer.status_code == 400 and "Traceback" not in answer.text, body
        long_text = {"id": "1", "judge": "av", "video": video, "text": "word " * 5000}
        assert score({"items": [long_text]}) == 400


def test_an_items_path_fault_is_its_own_answer_naming_only_what_was_sent(av_vt_judges, world_records, tmp_path):
    """A symlink loop or a NUL byte in one item's path, with or without --media-root: a 400 or that item's error,
    never a 500; and no message carries the server's own folders."""
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    service = ScoreService({"av": av_vt_judges["av"]})
    for roots in ((), (str(tmp_path),)):
        with TestClient(create_app(service, ServerSettings(reward_judge="av", media_roots=roots))) as c:
            for path in (str(tmp_path / "loop"), "clip\x00.mp4", "missing.mp4" if roots else "/missing.mp4"):
                answer = c.post("/v1/score", json={"items": [{"id": "1", "judge": "av", "video": path}]})
                assert answer.status_code in (200, 400), (roots, path, answer.text)
                text = answer.text if answer.status_code == 400 else answer.json()["results"][0]["error"]
                assert text and (str(tmp_path) not in text or str(tmp_path) in path), (roots, path, text)
                reward = c.post("/get_reward", json={"query": [path]})
                assert reward.status_code in (200, 400), (roots, path, reward.text)


def test_a_body_that_trickles_is_a_408(av_vt_judges):
    import socket
    from urllib.parse import urlparse

    from .helpers import live_app

    body = b'{"items": []}'
    service = ScoreService({"av": av_vt_judges["av"]})
    with live_app(create_app(service, ServerSettings(body_timeout_s=0.3))) as url:
        where = urlparse(url)
        with socket.create_connection((where.hostname, where.port), timeout=10) as conn:
            conn.sendall(b"POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         + f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:5])  # fmt: skip
            time.sleep(1.0)  # the rest never comes in time
            answer = conn.recv(4096).decode()
    assert answer.startswith("HTTP/1.1 408") and "did not arrive" in answer


@pytest.mark.parametrize("rule", ["nan", "none"])
def test_a_failure_rule_json_cannot_carry_is_refused_when_the_server_starts(av_vt_judges, rule):
    with pytest.raises(ConfigError, match="give neutral or a finite number"):  # as the settings are made
        create_app(ScoreService({"av": av_vt_judges["av"]}), ServerSettings(reward_judge="av", on_failure=rule))


def test_every_adapter_refuses_lists_of_different_lengths_and_fails_a_bad_sample_alone(av_vt_judges, good):
    """A trainer that hands three prompts with four clips gets an error naming both lengths, not three rewards; a
    None metadata entry or ragged frames fail their own sample."""
    from avjudge.rewards import FlowFactoryReward, flow_grpo_reward, trl_reward, verl_batch_compute_score

    reward = Reward({"av": av_vt_judges["av"]})
    clips = [good] * 4
    with pytest.raises(ConfigError, match="videos 4, prompts 3"):
        flow_grpo_reward(reward)(clips, ["a"] * 3, [{}] * 4)
    with pytest.raises(ConfigError, match="prompt 3, video 4"):
        FlowFactoryReward(reward)(["a"] * 3, video=clips)
    with pytest.raises(ConfigError, match="video 4, prompts 3"):
        trl_reward(reward)(prompts=["a"] * 3, completions=["x"] * 4, video=clips)
    with pytest.raises(ConfigError, match="solution_strs 2, ground_truths 1"):
        verl_batch_compute_score(reward)(solution_strs=["a.mp4", "b.mp4"], ground_truths=["x"])
    ragged = {**good, "frames": [good["frames"][0], good["frames"][1][:10]]}
    scores, info = flow_grpo_reward(reward)([good, ragged, good], ["a", "a", "a"], [{}, None, {}])
    assert list(info["failed"]) == [0.0, 1.0, 0.0] and np.isfinite(scores).all()
