"""Text backends behind one interface: offline rules, an OpenAI-compatible server, a local LM."""

from .base import BackendError, ChatRequest, TextBackend
from .http import OpenAIChatBackend
from .rules import RuleBackend


def _transformers_backend(**options) -> TextBackend:
    from .local import TransformersBackend  # imports torch: only when asked for

    return TransformersBackend(**options)


BACKENDS = {"rules": RuleBackend, "openai": OpenAIChatBackend, "transformers": _transformers_backend}


def make_backend(name: str, **options) -> TextBackend:
    if name not in BACKENDS:
        raise BackendError(f"unknown text backend {name!r}; choose one of {sorted(BACKENDS)}")
    try:
        return BACKENDS[name](**options)
    except TypeError as err:  # an option the backend does not take
        raise BackendError(f"text backend {name!r}: {err}; see its options in avjudge.llm") from err


__all__ = ["BACKENDS", "BackendError", "ChatRequest", "OpenAIChatBackend", "RuleBackend", "TextBackend", "make_backend"]
