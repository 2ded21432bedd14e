"""JSON over HTTP POST with the retry rule every avjudge client follows (stdlib only): ask again after a 408, 429
or 5xx (waiting what ``Retry-After`` says, else backing off) or a lost connection; never after another 4xx, which
fails the same way every time."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

from .errors import HTTPFailure

RETRIED_STATUS = {408, 429, 500, 502, 503, 504}


def post_json(
    url: str,
    payload: dict | bytes,
    token: str | None = None,
    timeout: float = 180.0,
    retries: int = 3,
    backoff: float = 1.0,
) -> dict:
    """The JSON answer to ``payload`` (a dict, or its encoded bytes) posted to ``url``."""
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    for attempt in range(retries + 1):
        wait = backoff * 2**attempt
        try:
            request = urllib.request.Request(url, data=body, headers=headers, method="POST")
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as err:
            detail = err.read()[:500].decode("utf-8", errors="replace")
            failure = HTTPFailure(f"HTTP {err.code} from {url}: {detail}", final=err.code not in RETRIED_STATUS)
            wait = float(err.headers.get("Retry-After") or wait)
        except (urllib.error.URLError, TimeoutError, ConnectionError) as err:
            failure = HTTPFailure(f"no answer from {url}: {err}", final=False)
        except ValueError as err:
            raise HTTPFailure(f"{url} answered with something that is not JSON ({err})", final=True) from err
        if failure.final or attempt == retries:
            raise failure
        time.sleep(wait)
    raise AssertionError("unreachable")
