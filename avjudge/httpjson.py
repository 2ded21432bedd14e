"""JSON over HTTP, the one client every avjudge caller uses (the LLM backends, the omni benchmarks' endpoints,
served judges, the reward client; stdlib only), with one retry rule and one request cache.

The rule: ask again after a 408, 429 or 5xx (waiting what ``Retry-After`` says, else backing off) or a lost
connection or timeout; never after another 4xx, which fails the same way every time. The cache (`RequestCache`)
keeps each answer by the request's content (its URL and body), so the same request in any later run costs nothing.
"""

from __future__ import annotations

import datetime
import email.utils
import hashlib
import json
import math
import time
import urllib.error
import urllib.request
from pathlib import Path

from .errors import HTTPFailure
from .jsonl import write_json

RETRIED_STATUS = {408, 429, 500, 502, 503, 504}


class RequestCache:
    """JSON answers by request content (a hash of the URL and the whole body, media included), one file each."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)

    @staticmethod
    def key(url: str, body: bytes) -> str:
        return hashlib.sha256(url.encode() + b"\0" + body).hexdigest()

    def get(self, key: str) -> dict | None:
        path = self.folder / f"{key}.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

    def put(self, key: str, answer: dict) -> None:
        write_json(self.folder / f"{key}.json", answer)


def post_json(
    url: str,
    payload: dict | bytes,
    token: str | None = None,
    timeout: float = 180.0,
    retries: int = 3,
    backoff: float = 1.0,
    cache: RequestCache | None = None,
) -> dict:
    """The JSON answer to ``payload`` (a dict, or its encoded bytes) posted to ``url``: from ``cache`` where this
    exact request was answered before, else asked (and kept there)."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload, sort_keys=True).encode()
    key = RequestCache.key(url, body) if cache is not None else None
    if cache is not None and (cached := cache.get(key)) is not None:
        return cached
    answer = _ask(url, body, token, timeout, retries, backoff)
    if cache is not None:
        cache.put(key, answer)
    return answer


def get_json(url: str, token: str | None = None, timeout: float = 60.0, retries: int = 3, backoff: float = 1.0) -> dict:
    """The JSON answer of a GET of ``url``, by the same retry rule."""
    return _ask(url, None, token, timeout, retries, backoff)


def retry_after(value: str | None, default: float, now: float | None = None) -> float:
    """The seconds a ``Retry-After`` header asks to wait: a number of seconds, or an HTTP date (RFC 9110); ``default``
    where there is none or it cannot be read. Never negative, and never over an hour: a server's typo does not stall
    a run for a day."""
    if not value:
        return default
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return default
        if when.tzinfo is None:  # an HTTP date is in GMT
            when = when.replace(tzinfo=datetime.timezone.utc)
        seconds = when.timestamp() - (time.time() if now is None else now)
    return min(max(seconds, 0.0), 3600.0) if math.isfinite(seconds) else default


def _ask(url: str, body: bytes | None, token: str | None, timeout: float, retries: int, backoff: float) -> dict:
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    for attempt in range(retries + 1):
        wait = backoff * 2**attempt
        try:
            request = urllib.request.Request(url, data=body, headers=headers, method="POST" if body else "GET")
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as err:
            detail = err.read()[:500].decode("utf-8", errors="replace")
            failure = HTTPFailure(f"HTTP {err.code} from {url}: {detail}", final=err.code not in RETRIED_STATUS)
            wait = retry_after(err.headers.get("Retry-After"), wait)
        except (urllib.error.URLError, TimeoutError, ConnectionError) as err:
            failure = HTTPFailure(f"no answer from {url}: {err}", final=False)
        except ValueError as err:
            raise HTTPFailure(f"{url} answered with something that is not JSON ({err})", final=True) from err
        if failure.final:
            raise failure
        if attempt == retries:
            raise HTTPFailure(f"{failure} (after {retries + 1} attempts)", final=False)
        time.sleep(wait)
    raise AssertionError("unreachable")
