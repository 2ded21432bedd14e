"""A client of the reward server (stdlib only): ``score_records(items)`` posts ``/v1/score``, one result per item.

It asks again after a 503 (waiting what ``Retry-After`` says), a 5xx or a lost connection, with backoff, and never
after another 4xx: a malformed request, a missing token or an oversized body fails the same way every time.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import AvjudgeError

RETRIED = {500, 502, 503, 504}


class ServerError(AvjudgeError):
    """The server refused the request, or did not answer after every retry."""


@dataclass(frozen=True)
class RewardClient:
    url: str  # http://127.0.0.1:8000
    token: str | None = None
    timeout: float = 180.0
    retries: int = 5
    backoff: float = 0.5  # seconds before the first retry, doubled each time (a Retry-After wins)

    def score_records(self, items: Sequence[dict]) -> list[dict]:
        """Each item's result (``{"id", "score", "delta", "p_yes", "p_no", "error"}``), in order."""
        if not items:
            return []
        reply = self._post("/v1/score", {"items": list(items)})
        return reply["results"]

    def _post(self, path: str, payload: dict) -> dict:
        body = json.dumps(payload).encode()
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        for attempt in range(self.retries + 1):
            request = urllib.request.Request(self.url.rstrip("/") + path, body, headers, method="POST")
            wait = self.backoff * 2**attempt
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as err:
                detail = err.read()[:500].decode("utf-8", errors="replace")
                if err.code not in RETRIED or attempt == self.retries:
                    raise ServerError(f"{self.url}{path} answered HTTP {err.code}: {detail}") from err
                wait = float(err.headers.get("Retry-After") or wait)
            except (urllib.error.URLError, TimeoutError, ConnectionError) as err:
                if attempt == self.retries:
                    raise ServerError(f"no answer from {self.url}{path} after {attempt + 1} tries: {err}") from err
            time.sleep(wait)
        raise AssertionError("unreachable")
