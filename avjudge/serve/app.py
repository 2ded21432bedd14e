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

import asyncio
import hmac
import json
import math
import time
from collections.abc import Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, PlainTextResponse

from ..config import ConfigError
from ..media import MediaError
from ..media.processes import DecoderDied
from ..media.wire import unpack_clip
from ..rewards import Reward
from ..rewards.adapters import openrlhf_failing_as, openrlhf_failure_rule, openrlhf_rewards
from ..scoring import ClipRecord
from .batcher import Batcher, QueueFull, ShuttingDown
from .service import MAX_TEXT_CHARS, ItemError, ScoreItem, ScoreService
from .telemetry import Telemetry

MAX_WAIT_MS = 60_000.0  # a batch's first request waits at most a minute for others: a client gives up long before


@dataclass(frozen=True)
class ServerSettings:
    max_batch_size: int = 16
    max_wait_ms: float = 10.0
    max_queue: int = 1024  # items waiting; more is a 503
    max_body_mb: float = 64.0  # a request's body, uploads included; more is a 413
    body_timeout_s: float = 30.0  # a body that takes longer to arrive is a 408
    max_clip_mb: float = 1024.0  # what one packed clip may unpack to, by its declared shapes; more is a 400
    token: str | None = None  # bearer token every endpoint but /health asks for
    media_roots: tuple[str, ...] = ()  # where item paths may point, relative ones from the first (`MediaPaths`)
    # what /get_reward rewards: a name, or weighted names ("av=2,vt=1"); None: the one judge or metric served
    reward_judge: str | None = None
    on_failure: str | float = "neutral"  # /get_reward's reward for a clip that failed (avjudge.rewards.failure)
    reward_mode: str = "pointwise"  # or win_rate: each query's expected win rate among its prompt's queries
    clip_from: str = "query"  # where /get_reward finds each clip: query, label or prompt_json
    text_from: str = "prompt"  # and the text a vt / at judge checks: prompt, response or label

    def __post_init__(self):
        if self.token is not None and not self.token.strip():
            raise ConfigError("the token is empty: an empty bearer token would let every request in; give a token")
        missing = [root for root in self.media_roots if not Path(root).is_dir()]
        if missing:  # every path request would fail, each as its own item's error
            raise ConfigError(f"--media-root {missing[0]}: no such folder")
        if self.reward_judge is not None:
            reward_terms(self.reward_judge)
        openrlhf_failure_rule(self.on_failure, "--on-failure")  # /get_reward's answer becomes OpenRLHF's tensor
        if not 0 <= self.max_wait_ms <= MAX_WAIT_MS:
            raise ConfigError(
                f"--max-wait-ms {self.max_wait_ms:g}: give 0 to {MAX_WAIT_MS:g} ms (the first request of a batch "
                "waits that long for others)"
            )


def reward_terms(spec: str) -> dict[str, float]:
    """``--reward-judge``'s terms: ``"av"`` or ``"av=2,vt=1"`` -> name -> weight.

    Raises:
        ConfigError: not NAME or NAME=WEIGHT (a finite number), comma-separated.
    """
    terms, how = {}, f"--reward-judge {spec!r}: give NAME or NAME=WEIGHT (a number), comma-separated"
    for part in filter(None, (p.strip() for p in spec.split(","))):
        name, _, weight = (piece.strip() for piece in part.partition("="))
        try:
            value = float(weight) if weight else 1.0
        except ValueError:
            value = math.nan
        if not name or not math.isfinite(value):
            raise ConfigError(how)
        if value == 0:
            raise ConfigError(f"--reward-judge {spec!r}: {name}'s weight is 0: leave the term out")
        if name in terms:
            raise ConfigError(f"--reward-judge {spec!r}: {name} is given twice")
        terms[name] = value
    if not terms:
        raise ConfigError(how)
    if sum(terms.values()) <= 0:  # as `avjudge.rewards.reward.check_weights` asks once the terms are loaded
        raise ConfigError(f"--reward-judge {spec!r}: the weights must sum to a positive number")
    return terms


class RequestError(Exception):
    def __init__(self, status: int, message: str, headers: dict | None = None):
        super().__init__(message)
        self.status, self.headers = status, headers or {}


class MediaPaths:
    """Where the server reads the files items name: an absolute path as it is, a relative one against the first
    media root; with media roots, nothing outside them. A relative path without a media root is refused: it would be
    read from the server's own working directory, another file than the caller's."""

    def __init__(self, roots: Sequence[str]):
        self.roots = [Path(r).resolve() for r in roots]

    def resolve(self, path: str, where: str) -> str:
        """The file ``path`` names, or the `ItemError` of a path the server will not read; its messages name the
        path as the caller sent it, never the server's own folders."""
        given = path
        if "\x00" in path:
            raise ItemError(f"{where}: the path holds a NUL byte")
        if not Path(path).is_absolute():
            if not self.roots:
                raise ItemError(
                    f"{where}: {given} is a relative path, which this server would read from its own working "
                    "directory: send an absolute path (RewardClient does), or start the server with --media-root DIR"
                )
            path = str(self.roots[0] / path)
        try:
            resolved = Path(path).resolve()
        except (OSError, RuntimeError) as err:  # a symlink loop (RuntimeError before Python 3.13), a name too long
            raise ItemError(f"{where}: {given} cannot be resolved ({type(err).__name__})") from None
        if self.roots and not any(resolved.is_relative_to(root) for root in self.roots):
            raise ItemError(f"{where}: {given} is outside the folders this server reads (its --media-root)")
        try:
            found = resolved.is_file()
        except OSError as err:  # a name too long for the file system, ...
            raise ItemError(f"{where}: {given} cannot be read ({err.strerror})") from None
        if self.roots and not found:
            raise ItemError(f"{where}: {given}: no such file under the server's --media-root")
        return str(resolved) if self.roots else path

    def paths_of(self, media: dict, where: str) -> dict:
        """The file paths among an item's ``video`` and ``audio``, resolved (uploads and clips in memory are none)."""
        return {k: self.resolve(media[k], f"{where}.{k}") for k in ("video", "audio") if isinstance(media.get(k), str)}


def create_app(service: ScoreService, settings: ServerSettings = ServerSettings()) -> FastAPI:
    telemetry = Telemetry()
    # the core's items of every route, batched together: request items and rewarded samples alike
    # items arrive decoded (`decoded`): a clip slow to decode holds its own request, never another's forward pass
    batcher = Batcher(service.scoring.score_decoded, settings.max_batch_size, settings.max_wait_ms, settings.max_queue,
                      telemetry)  # fmt: skip
    paths = MediaPaths(settings.media_roots)
    running: list[asyncio.AbstractEventLoop] = []  # the server's event loop, once started

    def through_batcher(items: list[dict]) -> list[ClipRecord]:
        """The core's records of a reward's items, from a worker thread: each item's paths resolved (one that
        cannot be read here is that sample's failure), decoded here, then scored by the batcher with every other
        request's."""
        records: list[ClipRecord | None] = [None] * len(items)
        todo = []
        for k, item in enumerate(items):
            try:
                items[k] = {**item, **paths.paths_of(item, f"query[{k}]")}
                todo.append(k)
            except ItemError as err:
                records[k] = ClipRecord(error=str(err))
        if todo:
            decoded = service.scoring.decode([items[k] for k in todo])
            scored = asyncio.run_coroutine_threadsafe(batcher.submit(decoded), running[0])
            for k, record in zip(todo, scored.result()):
                records[k] = record
        return records

    reward = served_reward(service, settings, through_batcher)

    @asynccontextmanager
    async def lifespan(app):
        running.append(asyncio.get_running_loop())
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
        scheme, _, credentials = request.headers.get("authorization", "").strip().partition(" ")
        given = in_path if in_path is not None else credentials.strip() if scheme.lower() == "bearer" else ""
        # compared in constant time; an empty token never matches (the settings refuse one)
        if not given or not hmac.compare_digest(given.encode(), settings.token.encode()):
            raise RequestError(
                401,
                "a token is needed: Authorization: Bearer TOKEN, or the path /t/TOKEN/...",
                {"WWW-Authenticate": "Bearer"},
            )

    async def body(request: Request):
        """The request's JSON: within the size limit, read within the body timeout (a client trickling its body
        holds no connection longer), every text valid UTF-8 and the nesting bounded; else 413, 408 or 400."""
        limit = int(settings.max_body_mb * 2**20)
        try:
            declared = int(request.headers.get("content-length") or 0)
        except ValueError:
            raise RequestError(400, "the Content-Length header is not a number") from None
        if declared > limit:
            raise RequestError(413, f"the request is over the server's {settings.max_body_mb:g} MB limit")

        async def read() -> bytearray:
            data = bytearray()
            async for chunk in request.stream():
                data += chunk
                if len(data) > limit:
                    raise RequestError(413, f"the request is over the server's {settings.max_body_mb:g} MB limit")
            return data

        try:
            data = await asyncio.wait_for(read(), settings.body_timeout_s)
        except asyncio.TimeoutError:
            raise RequestError(408, f"the body did not arrive within {settings.body_timeout_s:g} s") from None
        try:
            payload = json.loads(data)
        except (ValueError, RecursionError) as err:
            raise RequestError(400, f"the body is not JSON this server reads ({type(err).__name__}: {err})") from None
        check_texts(payload)
        return payload

    def items_of(raw_items, clips: dict | None = None) -> tuple[list[ScoreItem], dict[int, str], dict[str, str]]:
        """The request's items, parsed and checked by the service with the clips in memory the request carries, their
        paths resolved (`MediaPaths`); the items whose path the server will not read (index -> why: that item's
        error, never the request's); and each resolved path -> the path as the caller sent it."""
        if not isinstance(raw_items, list):
            raise ItemError("items is a list of items")
        resolved, faults, sent = [], {}, {}
        for k, item in enumerate(service.items(raw_items, clips)):
            try:
                found = paths.paths_of(vars(item), f"items[{k}]")
            except ItemError as err:
                faults[k] = str(err)
                found = {}
            sent.update({path: getattr(item, key) for key, path in found.items() if path != getattr(item, key)})
            resolved.append(replace(item, **found))
        return resolved, faults, sent

    def refused(err: Exception) -> RequestError:
        """The answer to a batcher that did not score: 503 while it is full or stopping, 500 for the scorer's fault."""
        if isinstance(err, QueueFull):
            telemetry.error("overloaded")
            return RequestError(503, str(err), {"Retry-After": str(err.retry_after)})
        if isinstance(err, ShuttingDown):
            return RequestError(503, str(err), {"Retry-After": "5"})
        if isinstance(err, DecoderDied):  # the next request starts a new pool
            telemetry.error("decoder")
            return RequestError(503, str(err), {"Retry-After": "1"})
        telemetry.error("internal")  # the scorer's own fault: transient for the caller (500)
        return RequestError(500, f"scoring failed: {err}")

    async def scored(items: list[ScoreItem], faults: dict[int, str], sent: dict[str, str]) -> list[dict]:
        """Each item's result: ``faults`` (index -> why) are those items' errors, the others decoded in a thread of
        this request's own, within the service's decode budget, before they join the queue; an error names a file as
        the caller sent it (``sent``), never the server's own folders."""
        todo = [k for k in range(len(items)) if k not in faults]
        try:
            decoded = await run_in_threadpool(service.scoring.decode, [service.core_item(items[k]) for k in todo])
            done = await batcher.submit(decoded) if todo else []
        except Exception as err:  # noqa: BLE001 - answered by `refused`
            raise refused(err) from err
        records = {k: ClipRecord(error=why) for k, why in faults.items()} | dict(zip(todo, done))
        results = service.results(items, [records[k] for k in range(len(items))])
        for entry in (r for r in results if r["error"]):
            for path, given in sent.items():
                entry["error"] = entry["error"].replace(path, given)
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
        results = await scored(*items_of(payload["items"], _clips(payload.get("clips") or {}, settings.max_clip_mb)))
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
        for name, values in (("prompts", prompts), ("labels", labels)):
            if not isinstance(values, list):
                raise ItemError(f"{name} is a list, one per query, not {type(values).__name__}")
        if len(prompts) != len(queries) or len(labels) != len(queries):
            raise ItemError(f"{len(queries)} queries, {len(prompts)} prompts and {len(labels)} labels")
        for k, (query, prompt, label) in enumerate(zip(queries, prompts, labels)):
            if not isinstance(query, str) or not isinstance(prompt, (str, type(None))):
                raise ItemError(f"query[{k}] and prompts[{k}] are texts")
            if not isinstance(label, (str, int, float, type(None))) or isinstance(label, bool):
                raise ItemError(f"labels[{k}] is a text or a number, not {type(label).__name__}")
            for name, value in (("query", query), ("prompts", prompt), ("labels", label)):
                if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
                    raise ItemError(f"{name}[{k}] is {len(value)} characters long; at most {MAX_TEXT_CHARS}")
        try:  # OpenRLHF's own reward function, its samples scored by the batcher with every other request's
            batch = await run_in_threadpool(
                openrlhf_rewards, reward, queries, prompts, labels, settings.clip_from, settings.text_from
            )
        except Exception as err:  # noqa: BLE001 - answered by `refused`
            raise refused(err) from err
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


def served_reward(service: ScoreService, settings: ServerSettings, score_items=None) -> Reward | None:
    """What /get_reward rewards with: ``reward_judge`` ("av", or "av=2,vt=1"), else the one judge or metric served; a
    `Reward` over the service's own scoring (`Reward.over`), its items scored by ``score_items`` (the batcher)."""
    spec = settings.reward_judge or (service.names()[0] if len(service.names()) == 1 else None)
    if spec is None:
        return None
    reward = Reward.over(service.scoring, reward_terms(spec), on_failure=settings.on_failure, score_items=score_items,
                         mode=settings.reward_mode)  # fmt: skip
    return openrlhf_failing_as(reward, settings.on_failure)


MAX_DEPTH = 32  # JSON nesting a request may have; the protocol needs 4


def check_texts(payload) -> None:
    """Every text of a request (keys too) is valid UTF-8 (JSON may carry a lone surrogate, "\\ud800", that no
    answer can hold) and its nesting is at most `MAX_DEPTH`; else an `ItemError` naming where."""
    stack = [(payload, "body", 0)]
    while stack:
        value, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ItemError(f"{where}: nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise ItemError(f"{where}: not valid UTF-8 text (a lone surrogate)") from None
        elif isinstance(value, dict):
            for key, item in value.items():
                stack.append((key, f"{where} key", depth + 1))
                stack.append((item, f"{where}.{key.encode('utf-8', 'replace').decode()}", depth + 1))
        elif isinstance(value, list):
            stack.extend((item, f"{where}[{k}]", depth + 1) for k, item in enumerate(value))


def _clips(raw, max_mb: float) -> dict:
    """The clips a request carries already decoded (name -> `avjudge.media.pack_clip` text), unpacked in memory
    within ``max_mb`` each (by their declared shapes, before anything is allocated) and checked as any clip in
    memory is."""
    if not isinstance(raw, dict):
        raise ItemError("clips is an object of name -> packed clip (avjudge.media.pack_clip)")
    if not all(isinstance(data, str) for data in raw.values()):
        raise ItemError("clips is an object of name -> packed clip text (avjudge.media.pack_clip)")
    try:
        return {str(name): unpack_clip(data, f"clips.{name}", int(max_mb * 2**20)) for name, data in raw.items()}
    except MediaError as err:
        raise ItemError(str(err)) from err
