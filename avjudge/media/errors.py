from __future__ import annotations

from pathlib import Path

from ..errors import AvjudgeError


class MediaError(AvjudgeError):
    """A media file that cannot be used, with the file named and what is wrong with it."""

    def __init__(self, path: str | Path | None, problem: str):
        self.path = None if path is None else str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}" if self.path else problem)

    def __reduce__(self):
        # raised in a decoding process, it travels back whole (Exception pickles only its message)
        return type(self), (self.path, self.problem)
