"""Features of clips cached on disk by extractor and file content, so a set is extracted once and a comparison
that stopped resumes: one ``.npz`` per clip under ``ROOT/<extractor>-<version>-<weights hash>/``."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..media import file_hash
from .checkpoints import checkpoint_hash


class FeatureCache:
    def __init__(self, root: str | Path, extractor: str, version: str, weights: Path):
        self.folder = Path(root) / f"{extractor}-{version}-{checkpoint_hash(weights)[:12]}"

    @staticmethod
    def key(path: str | Path) -> str:
        """The cache key of a clip: the sha256 of its file (a renamed or copied clip is found again)."""
        return file_hash(path)

    def get(self, key: str) -> dict[str, np.ndarray] | None:
        path = self.folder / f"{key}.npz"
        if not path.is_file():
            return None
        with np.load(path, allow_pickle=False) as saved:
            return {name: saved[name] for name in saved.files}

    def put(self, key: str, features: dict[str, np.ndarray]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        partial = self.folder / f".{key}.{os.getpid()}.npz"
        np.savez(partial, **features)
        partial.replace(self.folder / f"{key}.npz")  # whole or absent: a stopped run leaves no half file
