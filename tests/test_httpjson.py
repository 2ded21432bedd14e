"""The retry rule every avjudge HTTP client follows: transient failures asked again, a caller's fault never."""

import pytest

from avjudge.httpjson import HTTPFailure, post_json

from .helpers import ScriptedServer


@pytest.mark.parametrize("transient", [408, 429, 500, 502, 503, 504])
def test_a_transient_failure_is_asked_again(transient):
    script = iter([(transient, {"Retry-After": "0"}, {"error": "busy"}), (200, {}, {"ok": True})])
    server = ScriptedServer(lambda body: next(script))
    try:
        assert post_json(server.url, {"q": 1}, backoff=0) == {"ok": True}
        assert server.statuses == [transient, 200] and server.bodies == [{"q": 1}, {"q": 1}]
    finally:
        server.close()


@pytest.mark.parametrize("fault", [400, 401, 404, 413, 422])
def test_a_callers_fault_is_final_at_once(fault):
    server = ScriptedServer(lambda body: (fault, {}, {"error": "no"}))
    try:
        with pytest.raises(HTTPFailure, match=f"HTTP {fault}") as failure:
            post_json(server.url, {}, backoff=0)
        assert failure.value.final and server.statuses == [fault]
    finally:
        server.close()


def test_retries_run_out_and_a_dead_port_is_not_final():
    server = ScriptedServer(lambda body: (500, {}, {"error": "down"}))
    try:
        with pytest.raises(HTTPFailure, match="HTTP 500") as failure:
            post_json(server.url, {}, retries=2, backoff=0)
        assert not failure.value.final and server.statuses == [500, 500, 500]
    finally:
        server.close()
    with pytest.raises(HTTPFailure, match="no answer from") as failure:
        post_json(server.url, {}, retries=0, timeout=2)  # the server is gone
    assert not failure.value.final


def test_the_token_travels_as_a_bearer_header():
    server = ScriptedServer(lambda body: (200, {}, {"ok": True}))
    try:
        post_json(server.url, {}, token="abc", backoff=0)
        post_json(server.url, {}, backoff=0)
    finally:
        server.close()
    assert server.headers[0]["Authorization"] == "Bearer abc" and "Authorization" not in server.headers[1]
