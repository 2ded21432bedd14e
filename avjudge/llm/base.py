"""One interface for text backends: a chat request in, the reply text out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..errors import AvjudgeError


class BackendError(AvjudgeError, RuntimeError):
    """A backend that cannot be made (unknown name or options), or failed to answer after its retries (timeouts,
    server errors, refusals)."""


@dataclass(frozen=True)
class ChatRequest:
    prompt: str
    system: str | None = None
    json_mode: bool = True
    temperature: float = 0.7
    seed: int | None = None
    max_tokens: int = 1024
    # Content parts sent before the prompt, e.g. {"type": "video_url", "video_url": {"url": "data:..."}}.
    media: tuple[dict, ...] = ()
    # What an offline backend needs to act without reading the prompt (task, dimension, original...).
    meta: dict = field(default_factory=dict)

    def messages(self) -> list[dict]:
        msgs = [{"role": "system", "content": self.system}] if self.system else []
        content = [*self.media, {"type": "text", "text": self.prompt}] if self.media else self.prompt
        return msgs + [{"role": "user", "content": content}]


class TextBackend(Protocol):
    name: str

    def complete(self, request: ChatRequest) -> str:
        """The reply's text; raises BackendError when no answer could be had."""
