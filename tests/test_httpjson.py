"""The one HTTP client: transient failures asked again (after the server's Retry-After), a caller's fault never, and a
request asked before answered from the cache."""

import datetime
import email.utils
import time

import pytest

from avjudge.errors import HTTPFailure
from avjudge.httpjson import RequestCache, post_json, retry_after

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


def test_retry_after_is_waited_and_the_cache_answers_a_repeated_request(tmp_path):
    script = iter([(503, {"Retry-After": "0.3"}, {"error": "busy"}), (200, {}, {"answer": 1})])
    server = ScriptedServer(lambda body: next(script))
    cache = RequestCache(tmp_path / "cache")
    try:
        start = time.monotonic()
        assert post_json(server.url, {"q": 1, "media": "x"}, backoff=0, cache=cache) == {"answer": 1}
        assert time.monotonic() - start >= 0.3  # the server's Retry-After, not the zero backoff
        # the same request, its keys in another order: the same content, answered from the cache in any later run
        assert post_json(server.url, {"media": "x", "q": 1}, cache=RequestCache(tmp_path / "cache")) == {"answer": 1}
        assert server.statuses == [503, 200]
    finally:
        server.close()
    assert len(list((tmp_path / "cache").glob("*.json"))) == 1


def test_retry_after_reads_seconds_and_http_dates():
    now = email.utils.parsedate_to_datetime("Wed, 21 Oct 2026 07:28:00 GMT").timestamp()
    assert retry_after("Wed, 21 Oct 2026 07:28:02 GMT", 9.0, now) == 2.0  # a date: the seconds until it
    assert retry_after("Wed, 21 Oct 2026 07:27:00 GMT", 9.0, now) == 0.0  # a date gone by: at once
    assert retry_after("1.5", 9.0, now) == 1.5
    assert retry_after("soon", 9.0, now) == retry_after(None, 9.0, now) == retry_after("nan", 9.0, now) == 9.0
    assert retry_after("86400", 9.0, now) == 3600.0  # never a day's stall


def test_an_http_date_retry_after_is_waited_for_not_raised():
    when = email.utils.format_datetime(datetime.datetime.now(datetime.timezone.utc), usegmt=True)
    script = iter([(503, {"Retry-After": when}, {"error": "busy"}), (200, {}, {"answer": 1})])
    server = ScriptedServer(lambda body: next(script))
    try:
        assert post_json(server.url, {}, retries=1, backoff=0) == {"answer": 1}
        assert server.statuses == [503, 200]
    finally:
        server.close()
