"""An OpenAI-compatible chat-completions client: JSON mode, timeouts, retries with backoff,
a concurrency limit and an on-disk cache keyed by the request (a rerun costs nothing).

Uses only the standard library, so it works with any server that speaks the protocol
(vLLM, SGLang, llama.cpp, Ollama, OpenAI, DashScope's compatible mode...).
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Sequence

from .base import BackendError, ChatRequest

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


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
        self.api_key = os.environ.get(api_key_env, "")
        self.timeout_s, self.max_retries, self.backoff_s = timeout_s, max_retries, backoff_s
        self.max_concurrency = max_concurrency
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.calls = 0  # requests actually sent (cache hits excluded)

    def _cached(self, key: str) -> str | None:
        if self.cache_dir is None:
            return None
        path = self.cache_dir / f"{key}.json"
        return json.loads(path.read_text())["content"] if path.exists() else None

    def _store(self, key: str, content: str) -> None:
        if self.cache_dir is None:
            return
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.cache_dir / f".{key}.tmp"
        tmp.write_text(json.dumps({"content": content}))
        tmp.replace(self.cache_dir / f"{key}.json")

    def _post(self, request: ChatRequest) -> str:
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
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(self.url, json.dumps(body).encode(), headers, method="POST")
        self.calls += 1
        with urllib.request.urlopen(req, timeout=self.timeout_s) as response:
            payload = json.loads(response.read())
        try:
            return payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as err:
            raise BackendError(f"{self.url}: reply without choices[0].message.content") from err

    def complete(self, request: ChatRequest) -> str:
        key = request.cache_key(self.model)
        cached = self._cached(key)
        if cached is not None:
            return cached
        last = "no attempt"
        for attempt in range(self.max_retries + 1):
            try:
                content = self._post(request)
                self._store(key, content)
                return content
            except urllib.error.HTTPError as err:
                last = f"HTTP {err.code}"
                if err.code not in RETRY_STATUS:
                    raise BackendError(f"{self.url}: {last} ({err.read()[:200]!r})") from err
            except (urllib.error.URLError, TimeoutError, ConnectionError, json.JSONDecodeError) as err:
                last = f"{type(err).__name__}: {err}"
            if attempt < self.max_retries:
                time.sleep(self.backoff_s * 2**attempt)
        raise BackendError(f"{self.url}: no answer after {self.max_retries + 1} attempts ({last})")

    def complete_many(self, requests: Sequence[ChatRequest]) -> list[str | BackendError]:
        """Replies in order; a request that failed yields its BackendError instead of raising."""

        def one(req: ChatRequest):
            try:
                return self.complete(req)
            except BackendError as err:
                return err

        with ThreadPoolExecutor(self.max_concurrency) as pool:
            return list(pool.map(one, requests))
