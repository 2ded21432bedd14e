"""The reward server's HTTP face (FastAPI): endpoints, auth, limits and status codes that fit callers' retry rules.

- ``POST /v1/score`` ``{"items": [ITEM, ...]}`` -> ``{"results": [...], "model", "version"}`` (`service`).
- ``POST /get_reward``: OpenRLHF's remote reward protocol, ``{"query", "prompts", "labels"}`` ->
  ``{"rewards", "scores", "extra_logs"}``. Each query is the generated clip's path, or a JSON object
  ``{"video", "audio"?, "text"?}``; each prompt is the text a ``vt`` / ``at`` judge checks.
- ``GET /health``, ``GET /v1/models`` (checkpoints, weight and prompt hashes), ``GET /metrics`` (Prometheus).

Status codes: 200 with per-item errors when some items fail (a bad clip is the item's error, never a score of 0);
400 for a malformed request, 401 without the token, 413 for a body over the limit (callers do not retry 4xx);
503 with ``Retry-After`` when the queue is full or the server is stopping; 500 only when scoring itself failed.
Uploads: an item may carry its media inline as base64 (``video_b64``, ``audio_b64``) instead of a path; the
server writes them to files for the batch and removes them after. Needs the ``serve`` extra (FastAPI, uvicorn).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import tempfile
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse

from .batcher import Batcher, QueueFull, ShuttingDown
from .service import ItemError, ScoreItem, ScoreService
from .telemetry import Telemetry

UPLOAD_FIELDS = {"video_b64": "video", "audio_b64": "audio"}


@dataclass(frozen=True)
class ServerSettings:
    max_batch_size: int = 16
    max_wait_ms: float = 10.0
    max_queue: int = 1024  # items waiting; more is a 503
    max_body_mb: float = 64.0  # a request's body, uploads included; more is a 413
    token: str | None = None  # bearer token every endpoint but /health asks for
    media_roots: tuple[str, ...] = ()  # where item paths may point (none: anywhere the server can read)
    reward_judge: str | None = None  # what /get_reward scores with (None: the one judge or metric served)
    failed_reward: float | None = None  # /get_reward's reward for a clip that failed (None: null)


class RequestError(Exception):
    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.headers = status, headers or {}


def create_app(service: ScoreService, settings: ServerSettings = ServerSettings()) -> FastAPI:
    telemetry = Telemetry()
    batcher = Batcher(service.score, settings.max_batch_size, settings.max_wait_ms, settings.max_queue, telemetry)
    roots = [Path(r).resolve() for r in settings.media_roots]
    reward_judge = settings.reward_judge or (service.names()[0] if len(service.names()) == 1 else None)

    @asynccontextmanager
    async def lifespan(app):
        batcher.start()
        yield
        await batcher.close()  # what is queued is scored; requests after this get 503

    app = FastAPI(title="avjudge reward server", lifespan=lifespan)
    app.state.batcher, app.state.telemetry = batcher, telemetry

    def authorise(request: Request) -> None:
        if settings.token is None:
            return
        given = request.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {settings.token}".encode()):
            raise RequestError(
                401, "a bearer token is needed (Authorization: Bearer TOKEN)", {"WWW-Authenticate": "Bearer"}
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
            raise ItemError(f"{where}: {path} is outside the folders this server reads ({', '.join(map(str, roots))})")

    def items_of(raw_items, uploads: Path | None = None) -> list[ScoreItem]:
        """The request's items: uploads written under ``uploads`` as files, paths checked against the media roots,
        then parsed and checked by the service."""
        if not isinstance(raw_items, list):
            raise ItemError("items is a list of items")
        prepared = []
        for k, raw in enumerate(raw_items):
            if isinstance(raw, dict):
                raw = dict(raw)
                for field, target in UPLOAD_FIELDS.items():
                    if field in raw and uploads is not None:
                        where = f"items[{k}].{field}"
                        raw[target] = str(_write_upload(raw.pop(field), uploads / f"{k}_{target}", where))
                    else:
                        check_path(raw.get(target), f"items[{k}].{target}")
            prepared.append(raw)
        return service.items(prepared)

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

    @app.post("/v1/score")
    @handled("/v1/score")
    async def score(request: Request):
        payload = await body(request)
        if not isinstance(payload, dict) or "items" not in payload:
            raise ItemError('the body is {"items": [...]}')
        with tempfile.TemporaryDirectory(prefix="avjudge-uploads-") as uploads:
            results = await scored(items_of(payload["items"], Path(uploads)))
        return JSONResponse({"results": results, "model": service.names(), "version": service.describe()["version"]})

    @app.post("/get_reward")
    @handled("/get_reward")
    async def get_reward(request: Request):
        payload = await body(request)
        if not isinstance(payload, dict) or not isinstance(payload.get("query", []), list):
            raise ItemError('the body is {"query": [...], "prompts": [...], "labels": [...]}')
        if reward_judge is None:
            raise ItemError(f"this server holds {service.names()}: start it with --reward-judge to say which rewards")
        queries, prompts = payload.get("query") or [], payload.get("prompts") or []
        if prompts and len(prompts) != len(queries):
            raise ItemError(f"{len(queries)} queries but {len(prompts)} prompts")
        raw = [_reward_item(q, prompts[k] if prompts else None, reward_judge, k) for k, q in enumerate(queries)]
        results = await scored(items_of(raw))  # items[k] in an error is query[k]
        rewards = [r["score"] if r["error"] is None else settings.failed_reward for r in results]
        logs = {"failed": [float(r["error"] is not None) for r in results]}
        return JSONResponse({"rewards": rewards, "scores": rewards, "extra_logs": logs})

    @app.get("/health")
    @handled("/health")
    async def health(request: Request):
        if batcher.closing:
            return JSONResponse({"status": "stopping"}, status_code=503, headers={"Retry-After": "5"})
        return JSONResponse({"status": "ok", "queue": batcher.depth, "models": service.names()})

    @app.get("/v1/models")
    @handled("/v1/models")
    async def models(request: Request):
        return JSONResponse(service.describe())

    @app.get("/metrics")
    @handled("/metrics")
    async def metrics(request: Request):
        return PlainTextResponse(telemetry.render(), media_type="text/plain; version=0.0.4")

    return app


def _reward_item(query, prompt, judge: str, index: int) -> dict:
    """An OpenRLHF query as an item: the clip's path, or a JSON object naming its files and text."""
    if isinstance(query, str) and query.lstrip().startswith("{"):
        try:
            query = json.loads(query)
        except ValueError as err:
            raise ItemError(f"query[{index}] is not valid JSON ({err})") from err
    fields = query if isinstance(query, dict) else {"video": query}
    if not isinstance(fields, dict) or not all(isinstance(fields.get(k, ""), str) for k in ("video", "audio", "text")):
        raise ItemError(f"query[{index}] is a clip's path or a JSON object of video, audio and text")
    text = fields.get("text", prompt)
    return {"id": str(index), "judge": judge, **{k: fields[k] for k in ("video", "audio") if k in fields}, "text": text}


def _write_upload(data, path: Path, where: str) -> Path:
    if not isinstance(data, str):
        raise ItemError(f"{where}: an upload is a base64 text")
    try:
        path.write_bytes(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError) as err:
        raise ItemError(f"{where}: not base64 ({err})") from err
    return path
