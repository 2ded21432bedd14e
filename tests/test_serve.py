"""The reward server: each endpoint's contract, the status codes callers' retry rules expect, the batcher, the
client's retries, and the trainer adapters, on a tiny AV judge and the small world's clips."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from avjudge.cli import main
from avjudge.config import ConfigError
from avjudge.media import decode
from avjudge.serve.app import ServerSettings, create_app
from avjudge.serve.batcher import Batcher, QueueFull, ShuttingDown
from avjudge.serve.client import RewardClient, ServerError
from avjudge.serve.service import ScoreService

from .helpers import ScriptedServer


@pytest.fixture
def judges(av_vt_judges):
    return av_vt_judges


@pytest.fixture
def clips(world_records):
    return world_records


def client(judges, **settings) -> TestClient:
    return TestClient(create_app(ScoreService(judges), ServerSettings(**settings)))


def test_score_answers_every_item_in_order_and_a_bad_clip_is_its_error(judges, clips, corrupt):
    videos = [c["video"] for c in clips]
    items = [{"id": f"c{k}", "judge": "av", "video": v} for k, v in enumerate(videos)]
    items.insert(1, {"id": "bad", "judge": "av", "video": corrupt})
    items.append({"id": "t", "judge": "vt", "video": videos[0], "text": clips[0]["captions"]["video"]})
    items.append({"id": "long", "judge": "av", "video": "/tmp/" + "x" * 300 + ".mp4"})  # the OS's ENAMETOOLONG
    with client(judges) as c:
        reply = c.post("/v1/score", json={"items": items})
    assert reply.status_code == 200
    results = reply.json()["results"]
    assert [r["id"] for r in results] == ["c0", "bad", "c1", "c2", "t", "long"]
    assert results[5]["score"] is None and "File name too long" in results[5]["error"]
    bad = results[1]
    assert bad["score"] is None and bad["p_yes"] is None and "corrupt.mp4" in bad["error"]
    direct = [r.score for r in judges["av"].score(videos)]
    np.testing.assert_allclose([results[k]["score"] for k in (0, 2, 3)], direct, atol=1e-6)
    (vt,) = judges["vt"].score(videos[:1], [clips[0]["captions"]["video"]])
    assert results[4]["score"] == pytest.approx(vt.score, abs=1e-6)
    first = results[0]
    assert first["p_yes"] / (first["p_yes"] + first["p_no"]) == pytest.approx(first["score"], abs=1e-6)


def test_a_separate_audio_file_and_an_upload_score_as_their_clip(judges, clips, tmp_path):
    video, other = clips[0]["video"], clips[1]["video"]
    swapped = decode(video, fps=judges["av"].settings.fps, sample_rate=judges["av"].settings.sample_rate, channels=1)
    track = decode(other, video=False, sample_rate=judges["av"].settings.sample_rate, channels=1)
    import dataclasses

    (expected,) = judges["av"].score([dataclasses.replace(swapped, audio=track.audio)])
    upload = base64.b64encode(open(video, "rb").read()).decode()
    items = [
        {"id": "swap", "judge": "av", "video": video, "audio": other},
        {"id": "upload", "judge": "av", "video_b64": upload},
    ]
    with client(judges) as c:
        swap, uploaded = c.post("/v1/score", json={"items": items}).json()["results"]
    assert swap["score"] == pytest.approx(expected.score, abs=1e-5)
    assert uploaded["score"] == pytest.approx(judges["av"].score([video])[0].score, abs=1e-6)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "not JSON"),
        (json.dumps({"clips": []}).encode(), '{"items": [...]'),
        (json.dumps({"items": [{"id": "\ud800", "judge": "av", "video": "x.mp4"}]}).encode(), "not valid UTF-8"),
        (json.dumps({"items": [], "clips": {"c": "%%"}}).encode(), "not a packed clip"),
        (json.dumps({"items": [{"judge": "av", "video": "x.mp4"}]}).encode(), "items[0]: id"),
        (json.dumps({"items": [{"id": "1", "judge": "at", "video": "x.mp4"}]}).encode(), "no judge or metric 'at'"),
        (json.dumps({"items": [{"id": "1", "judge": "vt", "video": "x.mp4"}]}).encode(), "needs the item's text"),
        (json.dumps({"items": [{"id": "1", "judge": "av", "video_b64": "%%"}]}).encode(), "not base64"),
    ],
)
def test_a_malformed_request_is_a_400_that_says_why(judges, body, message):
    with client(judges) as c:
        reply = c.post("/v1/score", content=body, headers={"Content-Type": "application/json"})
    assert reply.status_code == 400 and message in reply.json()["error"]


def test_token_body_limit_media_roots_and_a_full_queue(judges, clips, tmp_path):
    item = {"id": "1", "judge": "av", "video": clips[0]["video"]}
    with client(judges, token="s3cret") as c:
        assert c.post("/v1/score", json={"items": [item]}).status_code == 401
        wrong = c.post("/v1/score", json={"items": [item]}, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.headers["WWW-Authenticate"] == "Bearer"
        ok = c.post("/v1/score", json={"items": [item]}, headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200 and c.get("/health").status_code == 200  # health needs no token
        for spelling in ("bearer s3cret", "BEARER  s3cret "):  # the scheme's case is free (RFC 7235)
            assert c.post("/v1/score", json={"items": [item]}, headers={"Authorization": spelling}).status_code == 200
        empty = c.post("/v1/score", json={"items": [item]}, headers={"Authorization": "Bearer "})
        assert empty.status_code == 401
    with pytest.raises(ConfigError, match="the token is empty"):
        ServerSettings(token=" ")
    with client(judges, max_body_mb=0.0001) as c:
        assert c.post("/v1/score", json={"items": [item] * 10}).status_code == 413
    root = tmp_path / "root"
    root.mkdir()
    (root / "good.mp4").write_bytes(open(clips[0]["video"], "rb").read())
    (root / "broken.mp4").write_bytes(b"not a video")
    named = [item, {**item, "id": "2", "video": "missing.mp4"}, {**item, "id": "3", "video": "good.mp4"},
             {**item, "id": "4", "video": "broken.mp4"}, {**item, "id": "5", "video": "x" * 300 + ".mp4"}]  # fmt: skip
    with client(judges, media_roots=(str(root),)) as c:  # each path's fault is its item's error; the others score
        answer = c.post("/v1/score", json={"items": named})
        assert answer.status_code == 200, answer.text
        outside, missing, good, broken, long_name = answer.json()["results"]
        assert "outside the folders" in outside["error"] and "missing.mp4: no such file" in missing["error"]
        assert good["error"] is None and good["score"] == pytest.approx(
            judges["av"].score([clips[0]["video"]])[0].score
        )
        assert broken["error"].startswith("broken.mp4") and "name too long" in long_name["error"].lower()
        assert str(root) not in answer.text  # only what the caller sent
    with client(judges, max_queue=2) as c:  # one request larger than the queue waits its turn and is answered
        big = c.post("/v1/score", json={"items": [{**item, "id": str(k)} for k in range(3)]})
        assert big.status_code == 200 and [r["id"] for r in big.json()["results"]] == ["0", "1", "2"]
    with client(judges, token="s3cret") as c:  # the token in the path, for clients that send no header (OpenRLHF)
        assert c.post("/t/s3cret/v1/score", json={"items": [item]}).status_code == 200
        assert c.post("/t/wrong/v1/score", json={"items": [item]}).status_code == 401
        assert c.get("/t/s3cret/v1/models").status_code == 200


def test_get_reward_speaks_openrlhf(judges, clips, corrupt):
    videos = [c["video"] for c in clips[:2]]
    expected = [r.score for r in judges["av"].score(videos)]
    with client(judges, reward_judge="av") as c:
        assert c.post("/get_reward", json={"query": [], "prompts": [], "labels": []}).json() == {
            "rewards": [],
            "scores": [],
            "extra_logs": {"av": [], "failed": []},
        }
        # OpenRLHF's query is the prompt and the response: the response names the clip
        queries = [f"make a clip: {videos[0]}", f"make a clip: {videos[1]}", f"make a clip: {corrupt}"]
        body = {"query": queries, "prompts": ["make a clip: "] * 3, "labels": [None] * 3}
        reply = c.post("/get_reward", json=body)
    assert reply.status_code == 200
    rewards = reply.json()["rewards"]
    np.testing.assert_allclose(rewards[:2], expected, atol=1e-6)
    # a failed clip is neutral (the request's good rewards' mean), never null or 0, and flagged
    assert rewards[2] == pytest.approx(np.mean(expected), abs=1e-6) and reply.json()["scores"] == rewards
    assert reply.json()["extra_logs"]["failed"] == [0.0, 0.0, 1.0]
    with client(judges, reward_judge="av", on_failure=-1.0) as c:
        assert c.post("/get_reward", json={"query": [corrupt]}).json()["rewards"] == [-1.0]
        assert 'avjudge_errors_total{kind="reward_failed"} 1' in c.get("/metrics").text
    with client(judges, reward_judge="av", clip_from="prompt_json") as c:  # the prompt is {"video", "text"}
        prompt = json.dumps({"video": videos[1], "text": "a caption"})
        assert c.post("/get_reward", json={"query": [prompt + " ok"], "prompts": [prompt]}).json()["rewards"] == (
            pytest.approx([expected[1]], abs=1e-6)
        )
    with client(judges, reward_judge="av", clip_from="label") as c:
        reply = c.post("/get_reward", json={"query": ["anything"], "prompts": ["p"], "labels": [videos[0]]})
        assert reply.json()["rewards"] == pytest.approx([expected[0]], abs=1e-6)
    with client(judges) as c:  # two judges and none named: which one rewards is the caller's to say
        assert "--reward-judge" in c.post("/get_reward", json={"query": [videos[0]]}).json()["error"]


def test_get_reward_is_openrlhfs_reward_function_behind_the_batcher_with_no_wire_form(judges, clips, monkeypatch):
    """/get_reward scores each query through the server's own Reward and scoring core: no item is turned into the
    wire form (`ScoreItem`) or packed in the server, the batcher batches its samples, and the rewards equal
    `openrlhf_reward_func`'s with a local Reward of the same judges."""
    import avjudge.media.wire as wire
    import avjudge.serve.service as service_module
    from avjudge.rewards import Reward, RewardTerm, openrlhf_reward_func

    videos = [c["video"] for c in clips[:3]]
    captions = [c["captions"]["video"] for c in clips[:3]]
    local = openrlhf_reward_func(Reward({"av": judges["av"], "vt": RewardTerm(judges["vt"], 0.5)}))
    expected = local(videos, captions, None)
    wire_forms = []
    for module, name in ((service_module.ScoreItem, "parse"), (wire, "pack_clip"), (wire, "unpack_clip")):
        original = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _f=original, _n=name, **k: wire_forms.append(_n) or _f(*a, **k))
    with client(judges, reward_judge="av=1,vt=0.5", clip_from="label", text_from="prompt") as c:
        batched = []
        batcher = c.app.state.batcher
        score = batcher.score
        batcher.score = lambda items: batched.append(len(items)) or score(items)
        reply = c.post("/get_reward", json={"query": ["q"] * 3, "prompts": captions, "labels": videos})
    assert reply.status_code == 200 and sum(batched) == 3  # one core item a sample, both terms' scorers on it
    np.testing.assert_allclose(reply.json()["rewards"], expected["rewards"].numpy(), atol=1e-6)
    for name in ("av", "vt", "failed"):
        np.testing.assert_allclose(reply.json()["extra_logs"][name], expected["extra_logs"][name].numpy(), atol=1e-6)
    assert wire_forms == []


def test_a_relative_path_is_refused_without_a_media_root_and_read_from_it_with_one(judges, clips, tmp_path):
    video = Path(clips[0]["video"])
    item = {"id": "r", "judge": "av", "video": video.name}  # relative: the server's folder, not the caller's
    with client(judges) as c:
        reply = c.post("/v1/score", json={"items": [item]})  # that item's error, as get_reward fails that sample
        assert reply.status_code == 200 and "relative path" in reply.json()["results"][0]["error"]
    with client(judges, reward_judge="av") as c:
        logs = c.post("/get_reward", json={"query": [video.name]}).json()
        assert logs["extra_logs"]["failed"] == [1.0]  # that sample fails alone, flagged
    with client(judges, media_roots=(str(video.parent),)) as c:
        reply = c.post("/v1/score", json={"items": [item]})
        assert reply.json()["results"][0]["score"] == pytest.approx(judges["av"].score([str(video)])[0].score, abs=1e-6)
        outside = c.post("/v1/score", json={"items": [{**item, "video": "../elsewhere.mp4"}]})
        assert outside.status_code == 200 and "outside the folders" in outside.json()["results"][0]["error"]


def test_models_and_metrics_describe_the_server(judges, clips, tiny_judges):
    with client(judges) as c:
        c.post(
            "/v1/score", json={"items": [{"id": str(k), "judge": "av", "video": clips[0]["video"]} for k in range(3)]}
        )
        models = c.get("/v1/models").json()
        metrics = c.get("/metrics").text
    av = next(m for m in models["models"] if m["name"] == "av")
    assert av["checkpoint"] == str(tiny_judges["qwen2_5_omni"]) and len(av["weights"]) == 16
    vt = next(m for m in models["models"] if m["name"] == "vt")
    assert av["prompt"] != vt["prompt"]  # each judge's question is in its hash
    assert 'avjudge_requests_total{endpoint="/v1/score",status="200"} 1' in metrics
    assert "avjudge_batch_size_count 1" in metrics and "avjudge_batch_size_sum 3.0" in metrics
    assert "avjudge_queue_depth 0" in metrics


# ---- the batcher --------------------------------------------------------------------------------------------------


def test_concurrent_requests_share_batches_and_a_large_one_spans_several():
    sizes = []

    def score(items):
        sizes.append(len(items))
        time.sleep(0.01)
        return [f"r{i}" for i in items]

    async def scenario():
        batcher = Batcher(score, max_batch_size=8, max_wait_ms=20, max_queue=100)
        batcher.start()
        requests = [batcher.submit([k * 10 + j for j in range(2)]) for k in range(8)]
        answers = await asyncio.gather(*requests, batcher.submit(list(range(100, 120))))
        await batcher.close()
        return answers

    answers = asyncio.run(scenario())
    assert answers[0] == ["r0", "r1"] and answers[7] == ["r70", "r71"]
    assert answers[8] == [f"r{i}" for i in range(100, 120)]
    assert sum(sizes) == 36 and max(sizes) == 8 and len(sizes) <= 6  # 36 items in batches of up to 8


def test_an_item_that_breaks_a_shared_batch_fails_its_own_request_only():
    """Requests batched together: where one's item makes the scorer raise, the batch is scored again request by
    request, so the others are answered and only that request fails."""
    calls = []

    def score(items):
        calls.append(list(items))
        if "hostile" in items:
            raise RuntimeError("a hostile item")
        return [f"r{i}" for i in items]

    async def scenario():
        batcher = Batcher(score, max_batch_size=8, max_wait_ms=50, max_queue=100)
        batcher.start()
        answers = await asyncio.gather(batcher.submit(["a", "b"]), batcher.submit(["hostile"]),
                                       batcher.submit(["c"]), return_exceptions=True)  # fmt: skip
        await batcher.close()
        return answers

    good, bad, other = asyncio.run(scenario())
    assert good == ["ra", "rb"] and other == ["rc"] and isinstance(bad, RuntimeError)
    assert calls[0] == ["a", "b", "hostile", "c"] and ["a", "b"] in calls and ["hostile"] in calls


def test_a_failing_scorer_fails_its_batch_only_and_close_drains_then_refuses():
    def score(items):
        if "boom" in items:
            raise RuntimeError("device lost")
        time.sleep(0.01)
        return items

    async def scenario():
        batcher = Batcher(score, max_batch_size=1, max_wait_ms=0, max_queue=3)
        batcher.start()
        good, bad = batcher.submit(["a"]), batcher.submit(["boom"])
        results = await asyncio.gather(good, bad, return_exceptions=True)
        busy = asyncio.ensure_future(batcher.submit(["b", "c"]))
        await asyncio.sleep(0)
        with pytest.raises(QueueFull):  # does not fit beside what waits: asked to come back
            await batcher.submit(["x", "y"])
        # larger than the whole queue (a trainer's rollout batch in one request): it waits its turn, then is answered
        oversized = await batcher.submit([f"o{k}" for k in range(5)])
        queued = asyncio.ensure_future(batcher.submit(["late"]))
        await asyncio.sleep(0)
        await batcher.close()
        with pytest.raises(ShuttingDown):
            await batcher.submit(["after"])
        return results, await busy, oversized, await queued

    (good, bad), busy, oversized, queued = asyncio.run(scenario())
    assert good == ["a"] and isinstance(bad, RuntimeError) and busy == ["b", "c"] and queued == ["late"]
    assert oversized == [f"o{k}" for k in range(5)]


# ---- the client and the adapters ---------------------------------------------------------------------------------


def test_the_client_retries_503_as_told_and_never_a_400():
    ok = {"results": [{"id": "1", "score": 0.7, "error": None}]}
    script = iter([(503, {"Retry-After": "0"}, {"error": "full"}), (200, {}, ok)])
    server = ScriptedServer(lambda body: next(script))
    try:
        assert RewardClient(server.url, backoff=0).score_records([{"id": "1"}])[0]["score"] == 0.7
        assert server.statuses == [503, 200]
    finally:
        server.close()
    server = ScriptedServer(lambda body: (400, {}, {"error": "items[0]: id is a non-empty string"}))
    try:
        with pytest.raises(ServerError, match="HTTP 400.*non-empty string"):
            RewardClient(server.url, backoff=0).score_records([{"id": ""}])
        assert server.statuses == [400]
    finally:
        server.close()


def test_serve_refuses_other_machines_without_a_token(tiny_judges, capsys, tmp_path):
    argv = ["serve", "--judge", f"av={tiny_judges['qwen2_5_omni']}", "--host", "0.0.0.0"]
    assert main(argv) == 2
    assert "give a --token-file" in capsys.readouterr().err
    (tmp_path / "token.txt").write_text("\n")  # on loopback too: an empty token would let any request in
    assert main([*argv[:3], "--token-file", str(tmp_path / "token.txt")]) == 2
    assert "token.txt is empty" in capsys.readouterr().err


def test_sigterm_answers_what_is_in_flight_then_exits(tiny_judges, clips):
    """`avjudge serve` as a process: a request under way when SIGTERM comes is answered in full, then the server
    exits cleanly and takes nothing more."""
    import os
    import signal
    import socket
    import subprocess
    import sys
    import urllib.error
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "avjudge.cli", "serve", "--judge", f"av={tiny_judges['qwen2_5_omni']}"]
    server = subprocess.Popen(
        [*command, "--port", str(port), "--max-batch-size", "2"], stdout=subprocess.PIPE, text=True
    )
    url = f"http://127.0.0.1:{port}"
    try:
        assert "serving ['av']" in server.stdout.readline()
        for _ in range(100):
            try:
                urllib.request.urlopen(url + "/health", timeout=1)
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        items = [{"id": str(k), "judge": "av", "video": clips[k % len(clips)]["video"]} for k in range(12)]
        answer = {}

        def ask():
            request = urllib.request.Request(url + "/v1/score", json.dumps({"items": items}).encode())
            with urllib.request.urlopen(request, timeout=120) as response:
                answer.update(status=response.status, body=json.loads(response.read()))

        asker = threading.Thread(target=ask)
        asker.start()
        time.sleep(0.5)  # the request is in the queue, six batches of two
        os.kill(server.pid, signal.SIGTERM)
        asker.join(timeout=120)
        # uvicorn shuts down gracefully, then re-raises the signal, as a process stopped by SIGTERM should end
        assert server.wait(timeout=60) in (0, -signal.SIGTERM)
    finally:
        if server.poll() is None:
            server.kill()
    assert answer["status"] == 200 and [r["id"] for r in answer["body"]["results"]] == [str(k) for k in range(12)]
    assert all(r["error"] is None for r in answer["body"]["results"])
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url + "/health", timeout=2)


def test_a_served_metric_scores_as_the_metric_does(judges, clips):
    """--metric dnsmos (its real weights): the item's score is the output it names, else the first, with all of
    them under values; asking for an output it does not give is that item's error."""
    from avjudge.media import decode
    from avjudge.metrics import get_metric

    dnsmos = get_metric("dnsmos")
    expected = dnsmos.compute(decode(clips[0]["video"], video=False))
    items = [
        {"id": "first", "judge": "dnsmos", "video": clips[0]["video"]},
        {"id": "ovrl", "judge": "dnsmos", "video": clips[0]["video"], "output": "dnsmos_ovrl"},
        {"id": "nope", "judge": "dnsmos", "video": clips[0]["video"], "output": "loudness"},
    ]
    with TestClient(create_app(ScoreService(judges, {"dnsmos": dnsmos}))) as c:
        first, ovrl, nope = c.post("/v1/score", json={"items": items}).json()["results"]
    assert first["score"] == pytest.approx(expected["dnsmos_sig"], abs=1e-6)  # its first output
    assert ovrl["score"] == pytest.approx(expected["dnsmos_ovrl"], abs=1e-6)
    assert first["values"] == pytest.approx({k: v for k, v in expected.items() if k.startswith("dnsmos")}, abs=1e-6)
    assert nope["score"] is None and "has no output 'loudness'" in nope["error"]


def test_a_decoding_process_that_dies_is_a_json_503_and_the_next_request_is_scored(judges, clips, monkeypatch):
    """The run's pool is replaced (`avjudge.media.processes.collect`); the caller is told to retry, in JSON."""
    from avjudge.media.processes import DecoderDied

    service = ScoreService(judges)
    decode_items = service.scoring.decode
    died = iter([True])
    monkeypatch.setattr(
        service.scoring, "decode", lambda items: (_ for _ in ()).throw(DecoderDied()) if next(died, False)
        else decode_items(items)
    )  # fmt: skip
    items = [{"id": "c0", "judge": "av", "video": clips[0]["video"]}]
    with TestClient(create_app(service, ServerSettings())) as c:
        refused = c.post("/v1/score", json={"items": items})
        assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
        assert "a decoding process died" in refused.json()["error"]
        again = c.post("/v1/score", json={"items": items})
    assert again.status_code == 200 and again.json()["results"][0]["score"] is not None
