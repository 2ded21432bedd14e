"""`avjudge serve --engine ray`: the reward server as a Ray Serve deployment on a local Ray cluster, its contract
checked over loopback HTTP as `avjudge serve` alone answers it."""

from __future__ import annotations

import base64
import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

from avjudge.judges import Judge
from avjudge.world import MANIFEST

pytest.importorskip("ray.serve")
TOKEN = "s3cret"


def _call(url: str, path: str, body: dict | None = None, token: str | None = TOKEN) -> tuple[int, dict | str]:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, headers=headers, method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            status, text = response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        status, text = err.code, err.read().decode()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


@pytest.fixture(scope="module")
def ray_server(tiny_judges, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ray_serve")
    (folder / "token").write_text(TOKEN)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "avjudge.cli", "serve", "--judge", f"av={tiny_judges['qwen2_5_omni']}"]
    command += ["--engine", "ray", "--actors", "1", "--port", str(port), "--token-file", str(folder / "token")]
    command += ["--max-body-mb", "0.5", "--max-batch-size", "8", "--workers", "1"]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=open(folder / "stderr", "w"))
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and server.poll() is None:
        try:
            if _call(url, "/health")[0] == 200:
                break
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.5)
    else:
        server.kill()
        pytest.fail(f"Ray Serve did not come up: {(folder / 'stderr').read_text()[-3000:]}")
    yield url
    server.send_signal(signal.SIGTERM)
    assert server.wait(timeout=120) == 0  # the deployment shut down and the command ended cleanly


@pytest.mark.slow  # a Ray cluster and Ray Serve start in a subprocess; CI runs it as `make test-slow`
def test_ray_serve_answers_the_reward_servers_contract(ray_server, tiny_judges, small_world, tmp_path):
    records = [json.loads(line) for line in (small_world / MANIFEST).read_text().splitlines()][:2]
    videos = [str(small_world / r["video"]) for r in records]
    corrupt = tmp_path / "corrupt.mp4"
    corrupt.write_bytes(b"not a video")
    expected = [r.score for r in Judge.load("av", tiny_judges["qwen2_5_omni"]).score(videos)]

    status, health = _call(ray_server, "/health", token=None)
    assert status == 200 and health["models"] == ["av"]
    items = [{"id": f"c{k}", "judge": "av", "video": v} for k, v in enumerate([videos[0], str(corrupt), videos[1]])]
    assert _call(ray_server, "/v1/score", {"items": items}, token=None)[0] == 401
    status, reply = _call(ray_server, "/v1/score", {"items": items})
    assert status == 200 and [r["id"] for r in reply["results"]] == ["c0", "c1", "c2"]
    np.testing.assert_allclose([reply["results"][0]["score"], reply["results"][2]["score"]], expected, atol=1e-6)
    assert reply["results"][1]["score"] is None and reply["results"][1]["error"]  # a corrupt clip: its error only

    # OpenRLHF's shape, its token in the URL: the failed clip neutral (the call's good mean) and flagged
    query = {"query": [videos[0], str(corrupt)], "prompts": ["", ""]}
    status, reward = _call(ray_server, f"/t/{TOKEN}/get_reward", query, token=None)
    assert status == 200 and reward["extra_logs"]["failed"] == [0.0, 1.0]
    assert reward["rewards"] == pytest.approx([expected[0], expected[0]], abs=1e-6)
    assert _call(ray_server, "/v1/score", {"items": [{"id": "x", "judge": "nope", "video": videos[0]}]})[0] == 400
    upload = base64.b64encode(b"\0" * 600_000).decode()
    assert _call(ray_server, "/v1/score", {"items": [{"id": "x", "judge": "av", "video_b64": upload}]})[0] == 413
    status, models = _call(ray_server, "/v1/models")
    assert status == 200 and models["models"][0]["name"] == "av"
    status, metrics = _call(ray_server, "/metrics")
    assert status == 200 and "avjudge_batch_size_count" in metrics
