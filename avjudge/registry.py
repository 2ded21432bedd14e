"""Name -> class registries (strategies, metrics): registration by decorator, lookups that list what exists."""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T", bound=type)


class Registry(dict):
    def __init__(self, kind: str, error: type[Exception], hint: str = ""):
        super().__init__()
        self.kind, self.error, self.hint = kind, error, hint

    def register(self, cls: T) -> T:
        if cls.name in self:
            raise ValueError(f"{self.kind} {cls.name!r} registered twice")
        self[cls.name] = cls
        return cls

    def lookup(self, name: str) -> type:
        if name not in self:
            hint = f" ({self.hint})" if self.hint else ""
            raise self.error(f"unknown {self.kind} {name!r}; known: {sorted(self)}{hint}")
        return self[name]
