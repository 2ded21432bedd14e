"""A client of the reward server (stdlib only): ``score_records(items)`` posts ``/v1/score``, one result per item.

It follows `avjudge.httpjson`'s retry rule: a 503 (as ``Retry-After`` says), another 5xx or a lost connection is
asked again with backoff; another 4xx (a malformed request, a missing token, an oversized body) never is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import AvjudgeError, HTTPFailure
from ..httpjson import get_json, post_json
from ..media import MediaClip, pack_clip


class ServerError(AvjudgeError):
    """The server refused the request, or did not answer after every retry."""


@dataclass(frozen=True)
class RewardClient:
    url: str  # http://127.0.0.1:8000
    token: str | None = None
    timeout: float = 180.0
    retries: int = 5
    backoff: float = 0.5  # seconds before the first retry, doubled each time (a Retry-After wins)

    def score_records(self, items: Sequence[dict], clips: dict[str, MediaClip] | None = None) -> list[dict]:
        """Each item's result (``{"id", "score", "delta", "p_yes", "p_no", "error"}``), in order; ``clips``: the
        clips in memory items name, sent packed (`avjudge.media.pack_clip`)."""
        if not items:
            return []
        body = {"items": list(items), "clips": {name: pack_clip(clip) for name, clip in (clips or {}).items()}}
        return self._post("/v1/score", body)["results"]

    def describe(self) -> dict:
        """What the server serves (``GET /v1/models``)."""
        try:
            return get_json(self.url.rstrip("/") + "/v1/models", self.token, self.timeout, self.retries, self.backoff)
        except HTTPFailure as err:
            raise ServerError(str(err)) from err

    def _post(self, route: str, body: dict) -> dict:
        try:
            return post_json(self.url.rstrip("/") + route, body, self.token, self.timeout, self.retries, self.backoff)
        except HTTPFailure as err:
            raise ServerError(str(err)) from err
