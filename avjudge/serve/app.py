"""The reward server's HTTP face (FastAPI): endpoints, auth, limits and status codes that fit callers' retry rules.

- ``POST /v1/score`` ``{"items": [ITEM, ...]}`` -> ``{"results": [...], "model", "version"}`` (`service`).
- ``POST /get_reward``: OpenRLHF's remote reward protocol, ``{"query", "prompts", "labels"}`` ->
  ``{"rewards", "scores", "extra_logs"}``: the weighted reward of ``--reward-judge``, a number for every query (a
  failed clip gets ``--on-failure``, flagged in ``extra_logs["failed"]``). Where each query's clip and text come
  from: ``--clip-from`` / ``--text-from`` (`avjudge.rewards.adapters.query_fields`).
- ``GET /health``, ``GET /v1/models`` (checkpoints, weight and prompt hashes, each scorer's decode plan),
  ``GET /metrics`` (Prometheus).

Every route is also served under ``/t/TOKEN/``, for clients that cannot send an ``Authorization`` header (OpenRLHF's
``--reward.remote_url``); the token is compared in constant time and no request path is logged.

Status codes: 200 with per-item errors when some items fail (a bad clip is the item's error, never a score of 0);
400 for a malformed request, 401 without the token, 413 for a body over the limit (callers do not retry 4xx);
503 with ``Retry-After`` when the queue is full or the server is stopping; 500 only when scoring itself failed.
Uploads: an item may carry its media inline as base64 (``video_b64``, ``audio_b64``) instead of a path, decoded in
memory (nothing is written to disk); a request may carry clips already decoded (``clips``, `avjudge.media.pack_clip`)
that its items name. Needs the ``serve`` extra (FastAPI, uvicorn).
"""

from __future__ import annotations

import hmac
import json
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse

from ..config import ConfigError
from ..media import MediaError
from ..media.wire import unpack_clip
from ..rewards import Reward, sample
from ..rewards.adapters import query_fields
from .batcher import Batcher, QueueFull, ShuttingDown
from .service import ItemError, ScoreItem, ScoreService
from .telemetry import Telemetry


@dataclass(frozen=True)
class ServerSettings:
    max_batch_size: int = 16
    max_wait_ms: float = 10.0
    max_queue: int = 1024  # items waiting; more is a 503
    max_body_mb: float = 64.0  # a request's body, uploads included; more is a 413
    token: str | None = None  # bearer token every endpoint but /health asks for
    media_roots: tuple[str, ...] = ()  # where item paths may point (none: anywhere the server can read)
    # what /get_reward rewards: a name, or weighted names ("av=2,vt=1"); None: the one judge or metric served
    reward_judge: str | None = None
    on_failure: str | float = "neutral"  # /get_reward's reward for a clip that failed (avjudge.rewards.failure)
    clip_from: str = "query"  # where /get_reward finds each clip: query, label or prompt_json
    text_from: str = "prompt"  # and the text a vt / at judge checks: prompt, response or label


class RequestError(Exception):
    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.headers = status, headers or {}


def create_app(service: ScoreService, settings: ServerSettings = ServerSettings()) -> FastAPI:
    telemetry = Telemetry()
    batcher = Batcher(service.score, settings.max_batch_size, settings.max_wait_ms, settings.max_queue, telemetry)
    roots = [Path(r).resolve() for r in settings.media_roots]
    reward = served_reward(service, settings)

    @asynccontextmanager
    async def lifespan(app):
        batcher.start()
        yield
        await batcher.close()  # what is queued is scored; requests after this get 503

    app = FastAPI(title="avjudge reward server", lifespan=lifespan)
    app.state.batcher, app.state.telemetry = batcher, telemetry

    def authorise(request: Request) -> None:
        """The token, in the Authorization header or in the path (``/t/TOKEN/...``, for clients that send no
        header, as OpenRLHF's), compared in constant time."""
        if settings.token is None:
            return
        in_path = request.path_params.get("token")
        given = f"Bearer {in_path}" if in_path is not None else request.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {settings.token}".encode()):
            raise RequestError(
                401,
                "a token is needed: Authorization: Bearer TOKEN, or the path /t/TOKEN/...",
                {"WWW-Authenticate": "Bearer"},
            )

    async def body(request: Request):
        limit = int(settings.max_body_mb * 2**20)
        if int(request.headers.get("content-length") or 0) > limit:
            raise RequestError(413, f"the request is over the server's {settings.max_body_mb:g} MB limit")
        data = bytearray()
        async for chunk in request.stream():
            data += chunk
            if len(data) > limit:
                raise RequestError(413, f"the request is over the server's {settings.max_body_mb:g} MB limit")
        try:
            return json.loads(data)
        except ValueError as err:
            raise RequestError(400, f"the body is not JSON ({err})") from err

    def check_path(path: str | None, where: str) -> None:
        if path is None or not roots:
            return
        resolved = Path(path).resolve()
        if not any(resolved.is_relative_to(root) for root in roots):
            raise ItemError(f"{where}: {path} is outside the folders this server reads (its --media-root)")

    def items_of(raw_items, clips: dict | None = None) -> list[ScoreItem]:
        """The request's items, paths checked against the media roots, then parsed and checked by the service with
        the clips in memory the request carries."""
        if not isinstance(raw_items, list):
            raise ItemError("items is a list of items")
        for k, raw in enumerate(raw_items):
            if isinstance(raw, dict):
                for target in ("video", "audio"):
                    check_path(raw.get(target), f"items[{k}].{target}")
        return service.items(raw_items, clips)

    async def scored(items: list[ScoreItem]) -> list[dict]:
        try:
            results = await batcher.submit(items)
        except QueueFull as err:
            telemetry.error("overloaded")
            raise RequestError(503, str(err), {"Retry-After": str(err.retry_after)}) from err
        except ShuttingDown as err:
            raise RequestError(503, str(err), {"Retry-After": "5"}) from err
        except Exception as err:  # noqa: BLE001 - the scorer's own fault: transient for the caller (500)
            telemetry.error("internal")
            raise RequestError(500, f"scoring failed: {err}") from err
        failed = sum(r["error"] is not None for r in results)
        if failed:
            telemetry.error("item", failed)
        return results

    def handled(endpoint: str):
        """Times the endpoint, counts its status, and turns request errors into their responses."""

        def wrap(fn):
            async def run(request: Request):
                start = time.monotonic()
                try:
                    if endpoint != "/health":
                        authorise(request)
                    response = await fn(request)
                except ItemError as err:
                    telemetry.error("malformed")
                    response = JSONResponse({"error": str(err)}, status_code=400)
                except RequestError as err:
                    if err.status in (401, 413):
                        telemetry.error({401: "unauthorised", 413: "too_large"}[err.status])
                    response = JSONResponse({"error": str(err)}, status_code=err.status, headers=err.headers)
                telemetry.request(endpoint, response.status_code, time.monotonic() - start)
                return response

            run.__name__ = fn.__name__
            return run

        return wrap

    def route(method: str, path: str):
        """An endpoint at ``path`` and at ``/t/{token}path``."""

        def register(fn):
            handler = handled(path)(fn)
            for where in (path, "/t/{token}" + path):
                app.add_api_route(where, handler, methods=[method], name=f"{fn.__name__}{'_t' if '{' in where else ''}")
            return handler

        return register

    @route("POST", "/v1/score")
    async def score(request: Request):
        payload = await body(request)
        if not isinstance(payload, dict) or "items" not in payload:
            raise ItemError('the body is {"items": [...], "clips"?: {NAME: packed clip}}')
        results = await scored(items_of(payload["items"], _clips(payload.get("clips") or {})))
        return JSONResponse({"results": results, "model": service.names(), "version": service.describe()["version"]})

    @route("POST", "/get_reward")
    async def get_reward(request: Request):
        payload = await body(request)
        if not isinstance(payload, dict) or not isinstance(payload.get("query", []), list):
            raise ItemError('the body is {"query": [...], "prompts": [...], "labels": [...]}')
        if reward is None:
            raise ItemError(f"this server holds {service.names()}: start it with --reward-judge to say which rewards")
        queries = payload.get("query") or []
        prompts = payload.get("prompts") or [None] * len(queries)
        labels = payload.get("labels") or [None] * len(queries)
        if len(prompts) != len(queries) or len(labels) != len(queries):
            raise ItemError(f"{len(queries)} queries, {len(prompts)} prompts and {len(labels)} labels")
        samples = []
        for k, (query, prompt, label) in enumerate(zip(queries, prompts, labels)):
            if not isinstance(query, str) or not isinstance(prompt, (str, type(None))):
                raise ItemError(f"query[{k}] and prompts[{k}] are texts")
            try:
                clip, text = query_fields(query, prompt, label, settings.clip_from, settings.text_from)
            except ValueError as err:
                raise ItemError(f"query[{k}]: {err}") from err
            samples.append(sample({"video": clip} if isinstance(clip, str) and clip else {}, text))
        raw, clips, unsent = reward.backend.request(samples)
        results = await scored(items_of(raw, clips)) if raw else []
        batch = reward.combine(reward.backend.records(results, len(samples), unsent))
        if any(batch.failed):
            telemetry.error("reward_failed", sum(batch.failed))
        return JSONResponse({"rewards": batch.rewards, "scores": batch.rewards, "extra_logs": batch.columns()})

    @route("GET", "/health")
    async def health(request: Request):
        if batcher.closing:
            return JSONResponse({"status": "stopping"}, status_code=503, headers={"Retry-After": "5"})
        return JSONResponse({"status": "ok", "queue": batcher.depth, "models": service.names()})

    @route("GET", "/v1/models")
    async def models(request: Request):
        return JSONResponse(service.describe())

    @route("GET", "/metrics")
    async def metrics(request: Request):
        return PlainTextResponse(telemetry.render(), media_type="text/plain; version=0.0.4")

    return app


def served_reward(service: ScoreService, settings: ServerSettings) -> Reward | None:
    """What /get_reward rewards with: ``reward_judge`` ("av", or "av=2,vt=1"), else the one judge or metric served."""
    spec = settings.reward_judge or (service.names()[0] if len(service.names()) == 1 else None)
    if spec is None:
        return None
    terms = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        name, _, weight = part.partition("=")
        try:
            terms[name.strip()] = float(weight) if weight else 1.0
        except ValueError:
            raise ConfigError(f"--reward-judge {spec!r}: give NAME or NAME=WEIGHT, comma-separated") from None
    return Reward.served(service, terms, on_failure=settings.on_failure)


def _clips(raw) -> dict:
    """The clips a request carries already decoded (name -> `avjudge.media.pack_clip` text), unpacked in memory."""
    if not isinstance(raw, dict):
        raise ItemError("clips is an object of name -> packed clip (avjudge.media.pack_clip)")
    try:
        return {str(name): unpack_clip(data, f"clips.{name}") for name, data in raw.items()}
    except MediaError as err:
        raise ItemError(str(err)) from err
