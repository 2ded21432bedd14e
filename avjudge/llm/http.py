"""An OpenAI-compatible chat-completions client: JSON mode, timeouts, a concurrency limit, and the one HTTP client's
retry rule and request cache (`avjudge.httpjson`): a rerun pays for no request twice.

It works with any server that speaks the protocol (vLLM, SGLang, llama.cpp, Ollama, OpenAI, DashScope's compatible
mode...).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Sequence

from ..errors import HTTPFailure
from ..httpjson import RequestCache, post_json
from .base import BackendError, ChatRequest


class OpenAIChatBackend:
    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float = 60.0,
        max_retries: int = 4,
        backoff_s: float = 1.0,
        max_concurrency: int = 8,
        cache_dir: str | Path | None = None,
    ):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = os.environ.get(api_key_env) or None
        self.timeout_s, self.max_retries, self.backoff_s = timeout_s, max_retries, backoff_s
        self.max_concurrency = max_concurrency
        self.cache = RequestCache(cache_dir) if cache_dir else None

    def body(self, request: ChatRequest) -> dict:
        body = {
            "model": self.model,
            "messages": request.messages(),
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        if request.json_mode:
            body["response_format"] = {"type": "json_object"}
        return body

    def complete(self, request: ChatRequest) -> str:
        try:
            reply = post_json(
                self.url,
                self.body(request),
                self.api_key,
                self.timeout_s,
                self.max_retries,
                self.backoff_s,
                self.cache,
            )
        except HTTPFailure as err:
            raise BackendError(str(err)) from err
        try:
            return reply["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as err:
            raise BackendError(f"{self.url}: reply without choices[0].message.content") from err

    def complete_many(self, requests: Sequence[ChatRequest]) -> list[str | BackendError]:
        """Replies in order; a request that failed yields its BackendError instead of raising."""

        def one(req: ChatRequest):
            try:
                return self.complete(req)
            except BackendError as err:
                return err

        with ThreadPoolExecutor(self.max_concurrency) as pool:
            return list(pool.map(one, requests))
