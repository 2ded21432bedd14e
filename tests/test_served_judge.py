"""A judge served by an OpenAI-compatible server (`avjudge.judges.served`), against a scripted vLLM: the request
carries the judge's prompt, frames and audio; S from the returned log probabilities is the local judge's S for the
same logits."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from avjudge.config import ConfigError
from avjudge.httpjson import RequestCache
from avjudge.judges import Judge
from avjudge.judges.served import ServedEndpoint, ServedJudge
from avjudge.media import decode
from avjudge.prompts import CHAT_FORMATS, render_prompt
from avjudge.world import MANIFEST
from tests.helpers import ScriptedServer


def _clip(small_world: Path) -> Path:
    return small_world / json.loads((small_world / MANIFEST).read_text().splitlines()[0])["video"]


def _data(part: dict, key: str) -> tuple[str, bytes | list[bytes]]:
    kind, _, payload = part[key]["url"].partition(";base64,")
    if kind == "data:video/jpeg":
        return kind, [base64.b64decode(frame) for frame in payload.split(",")]
    return kind, base64.b64decode(payload)


def _chatml(messages: list[dict], family: str) -> str:
    """The text Qwen's chat template makes of a chat request (media items as the family's placeholders)."""
    fmt = CHAT_FORMATS[family]
    placeholder = {"video_url": fmt.video, "audio_url": fmt.audio}
    text = ""
    for message in messages:
        content = message["content"]
        if not isinstance(content, str):
            content = "".join(placeholder.get(part["type"]) or part.get("text", "") for part in content)
        text += f"<|im_start|>{message['role']}\n{content}<|im_end|>\n"
    return text + "<|im_start|>assistant\n"


def _reply(logits: torch.Tensor, answers: list[int], processed: bool) -> dict:
    """vLLM's chat answer: log probabilities of the allowed answers, after the allowed-ids mask or before it."""
    logp = torch.log_softmax(logits[answers] if processed else logits, dim=-1)
    listed = [{"token": f"token_id:{t}", "logprob": float(logp[k if processed else t])} for k, t in enumerate(answers)]
    content = [{"token": listed[0]["token"], "logprob": listed[0]["logprob"], "top_logprobs": listed}]
    return {"choices": [{"message": {"content": "Yes"}, "logprobs": {"content": content}}]}


def _local_logits(judge: Judge, sample) -> torch.Tensor:
    """The local model's next-token logits for one sample: what a served copy of it would compute."""
    with torch.inference_mode():
        return judge.adapter.next_token_logits(judge.adapter.collate([judge.prepare(sample)]))[0]


@pytest.fixture(scope="module")
def local_judge(tiny_judges):
    return Judge.load("av", tiny_judges["qwen2_5_omni"])


@pytest.mark.parametrize("processed", [True, False], ids=["processed_logprobs", "raw_logprobs"])
def test_the_served_av_judge_asks_with_the_judges_prompt_frames_and_audio_and_scores_as_it_does(
    processed, local_judge, tiny_judges, small_world, tmp_path
):
    clip = local_judge.decode(_clip(small_world))  # as the judge decodes it for itself
    sample = local_judge.sample(clip)
    logits = _local_logits(local_judge, sample)
    (local,) = local_judge.score([clip])
    answers = list(local_judge.head.yes_ids + local_judge.head.no_ids)
    server = ScriptedServer(lambda body: (200, {}, _reply(logits, answers, processed)))
    try:
        endpoint = ServedEndpoint(server.url + "/v1", "avjudge-av")
        (served,) = ServedJudge.load("av", tiny_judges["qwen2_5_omni"], endpoint).score([clip])
    finally:
        server.close()

    (request,) = server.bodies
    assert _chatml(request["messages"], "qwen2_5_omni") == render_prompt("av", "qwen2_5_omni")
    assert request["max_tokens"] == 1 and request["temperature"] == 0
    assert request["allowed_token_ids"] == answers and request["top_logprobs"] == max(20, len(answers))
    assert request["repetition_penalty"] == 1 and request["presence_penalty"] == request["frequency_penalty"] == 0
    video, audio = request["messages"][1]["content"][:2]
    kind, frames = _data(video, "video_url")
    sent = np.stack([np.asarray(Image.open(io.BytesIO(f)).convert("RGB")) for f in frames]).astype(int)
    height, width = local_judge.adapter.vision.target_size(*sample.frames.shape[1:3])
    seen = np.stack([np.asarray(Image.fromarray(f).resize((width, height), Image.BICUBIC)) for f in sample.frames])
    assert sent.shape == seen.shape  # the frames the judge sees, at the size its encoder takes
    assert np.abs(sent - seen).mean() < 2.0  # JPEG at quality 95
    assert request["mm_processor_kwargs"] == {"fps": sample.fps}
    kind, wav = _data(audio, "audio_url")
    assert kind == "data:audio/wav"
    path = tmp_path / "served_audio.wav"
    path.write_bytes(wav)
    np.testing.assert_array_equal(decode(path, video=False).audio[0], sample.audio)  # float WAV: exact

    assert served.error is None
    assert served.score == pytest.approx(local.score, abs=1e-6)
    # with a request cache, the same clip asked again (another job, a rerun) costs no request
    server = ScriptedServer(lambda body: (200, {}, _reply(logits, answers, processed)))
    try:
        cached = ServedEndpoint(server.url + "/v1", "avjudge-av", cache=RequestCache(tmp_path / "cache"))
        again = [ServedJudge.load("av", tiny_judges["qwen2_5_omni"], cached).score([clip])[0] for _ in range(2)]
    finally:
        server.close()
    assert len(server.bodies) == 1 and again[0].score == again[1].score == pytest.approx(served.score, abs=1e-9)
    assert served.delta == pytest.approx(local.delta, abs=1e-5)
    if not processed:  # the model's own probabilities: the mass on the two answers is the local judge's too
        assert served.mass == pytest.approx(local.mass, rel=1e-5)


def test_a_server_failure_or_a_missing_answer_is_that_clips_error_never_a_score(tiny_judges, small_world):
    judge_dir = tiny_judges["qwen2_5_omni"]
    clip = _clip(small_world)
    yes = ServedJudge.load("av", judge_dir, ServedEndpoint("http://127.0.0.1:9/v1", "m")).head.yes_ids[0]

    def respond(body):
        if len(respond.calls) == 0:
            respond.calls.append(1)
            return 400, {}, {"error": "bad request"}
        listed = [{"token": f"token_id:{yes}", "logprob": -0.1}]
        return 200, {}, {"choices": [{"logprobs": {"content": [{"top_logprobs": listed}]}}]}

    respond.calls = []
    server = ScriptedServer(respond)
    try:
        judge = ServedJudge.load("av", judge_dir, ServedEndpoint(server.url + "/v1", "m"), batch_size=1)
        first, second, unreadable = judge.score([clip, clip, small_world / "missing.mp4"])
    finally:
        server.close()
    assert first.score is None and "HTTP 400" in first.error
    assert second.score is None and "no No answer" in second.error
    assert unreadable.score is None and unreadable.error
    assert len(server.bodies) == 2  # 4xx is never retried; the unreadable clip never reaches the server


def test_a_server_that_stays_down_stops_the_job_so_a_rerun_scores_the_clips(tiny_judges, small_world, tmp_path):
    from avjudge.errors import HTTPFailure
    from avjudge.scoring.jobs import score_items

    server = ScriptedServer(lambda body: (503, {"Retry-After": "0"}, {"error": "overloaded"}))
    try:
        endpoint = ServedEndpoint(server.url + "/v1", "m", retries=1)
        judge = ServedJudge.load("av", tiny_judges["qwen2_5_omni"], endpoint)
        items = [{"id": "a", "video": str(_clip(small_world))}]
        with pytest.raises(HTTPFailure, match="HTTP 503"):
            score_items(judge, items, tmp_path / "out.jsonl", progress=False)
    finally:
        server.close()
    assert len(server.bodies) == 2  # asked again once, then the job stopped
    assert not (tmp_path / "out.jsonl").read_text()  # nothing marked done: the rerun asks again


def test_a_served_judge_travels_as_what_loads_it_endpoint_and_settings_included(tiny_judges):
    import pickle

    endpoint = ServedEndpoint("http://127.0.0.1:9/v1", "judge", token="t", retries=1)
    judge = ServedJudge.load("vt", tiny_judges["qwen2_5_omni"], endpoint, fps=2.0, batch_size=3)
    copy = pickle.loads(pickle.dumps(judge))  # as a Ray actor receives it
    assert type(copy) is ServedJudge and copy.endpoint == endpoint and copy.settings == judge.settings
    assert copy.adapter._model is None and judge.adapter._model is None  # no weights anywhere


def test_served_judges_refuse_what_they_cannot_serve(tiny_judges):
    endpoint = ServedEndpoint("http://127.0.0.1:9/v1", "m")
    with pytest.raises(ConfigError, match="use_audio_in_video"):
        ServedJudge.load("av", tiny_judges["qwen2_5_omni"], endpoint, use_audio_in_video=True)
    with pytest.raises(ConfigError, match="multiple-choice"):
        ServedJudge.load("choice_av", tiny_judges["qwen2_5_omni"], endpoint)


def test_score_cli_scores_through_a_served_judge(tiny_judges, small_world, local_judge, tmp_path):
    clip = local_judge.decode(_clip(small_world))  # as the judge decodes it for itself
    logits = _local_logits(local_judge, local_judge.sample(clip))
    answers = list(local_judge.head.yes_ids + local_judge.head.no_ids)
    server = ScriptedServer(lambda body: (200, {}, _reply(logits, answers, True)))
    out = tmp_path / "served.jsonl"
    command = [sys.executable, "-m", "avjudge.cli", "score", "--judge", f"av={tiny_judges['qwen2_5_omni']}"]
    command += ["--input", str(_clip(small_world)), "--out", str(out), "--no-progress"]
    try:
        subprocess.run(command + ["--served-url", server.url + "/v1", "--served-model", "judge"], check=True)
    finally:
        server.close()
    (record,) = [json.loads(line) for line in out.open()]
    assert server.bodies[0]["model"] == "judge"
    assert record["score"] == pytest.approx(local_judge.score([clip])[0].score, abs=1e-6)


def _served_copy_of(judge: Judge, clips: list[Path], tmp_path: Path) -> ScriptedServer:
    """A scripted vLLM that serves ``judge``'s model for ``clips``: each request is answered with the local logits of
    the clip whose audio it carries (the WAV is bit-exact, so it names the clip)."""
    by_audio = {}
    for path in clips:
        sample = judge.sample(judge.decode(path))  # as every avjudge job decodes it for this judge
        by_audio[sample.audio.tobytes()] = _local_logits(judge, sample)
    answers = list(judge.head.yes_ids + judge.head.no_ids)

    def respond(body):
        _, wav = _data(body["messages"][1]["content"][1], "audio_url")
        received = tmp_path / f"request_{len(server.bodies)}.wav"
        received.write_bytes(wav)
        return 200, {}, _reply(by_audio[decode(received, video=False).audio[0].tobytes()], answers, True)

    server = ScriptedServer(respond)
    return server


@pytest.mark.slow  # the filter CLI in a subprocess, 26 s; CI runs it as `make test-slow`
def test_filter_and_the_reward_service_score_through_served_judges_as_through_local_ones(
    tiny_judges, small_world, local_judge, tmp_path
):
    from avjudge.filter import parse_rules, run_filter
    from avjudge.jsonl import read_jsonl
    from avjudge.scoring.clip_scorer import ClipScorer
    from avjudge.scoring.dimensions import parse_dimensions
    from avjudge.serve.service import ScoreService

    records = list(read_jsonl(small_world / MANIFEST))
    clips = [small_world / r["video"] for r in records]
    local = [r.score for r in local_judge.score(clips)]
    middle = sorted(local)[len(local) // 2 - 1 : len(local) // 2 + 1]
    rules = f"av>={sum(middle) / 2!r}"  # between the middle two: some kept, some dropped, none on the edge
    run_filter(
        small_world / MANIFEST,
        parse_rules(rules),
        tmp_path / "local",
        ClipScorer(parse_dimensions("av"), {"av": tiny_judges["qwen2_5_omni"]}),
        progress=False,
    )
    server = _served_copy_of(local_judge, clips, tmp_path)
    try:
        command = [sys.executable, "-m", "avjudge.cli", "filter", "--input", str(small_world / MANIFEST)]
        command += ["--rules", rules, "--judge", f"av={tiny_judges['qwen2_5_omni']}", "--out", str(tmp_path / "served")]
        subprocess.run(command + ["--served-url", f"av={server.url}/v1", "--no-progress"], check=True)
        endpoint = ServedEndpoint(server.url + "/v1", "avjudge-av")
        service = ScoreService({"av": ServedJudge.load("av", tiny_judges["qwen2_5_omni"], endpoint)}, {})
        answers = service.score_records([{"id": str(i), "judge": "av", "video": str(c)} for i, c in enumerate(clips)])
    finally:
        server.close()
    for name in ("kept", "dropped"):
        served = list(read_jsonl(tmp_path / "served" / f"{name}.jsonl"))
        assert [r["id"] for r in served] == [r["id"] for r in read_jsonl(tmp_path / "local" / f"{name}.jsonl")]
        assert served, name
    assert [a["score"] for a in answers] == pytest.approx(local, abs=1e-6)
    assert len(server.bodies) == 2 * len(clips)  # each clip asked once by the filter and once by the service
