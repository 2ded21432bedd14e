"""One hard negative of a file, written as a file: what `avjudge perturb apply` does, so a user can hear and see a
strategy. The picture of a video is copied untouched; only its audio changes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..media import decode, encode_audio, probe, replace_audio
from .base import Context, get_strategy
from .pool import SourcePool


def negative_of_file(
    strategy: str,
    source: str | Path,
    out: str | Path,
    overrides: dict | None = None,
    params: dict | None = None,
    pool: SourcePool | None = None,
    seed: int = 0,
) -> dict:
    """Apply ``strategy`` (its parameter ranges overridden by ``overrides``) to ``source`` and write ``out``, of the
    same kind (a video keeps its picture; an audio file stays audio). ``params`` applies those exact parameters
    instead of drawing them with ``seed``; ``pool``: other clips, for the strategies that mix one in. Returns the
    parameters applied."""
    info = probe(source)
    clip = decode(source, video=False)
    ctx = Context(record={"id": str(source)}, pool=pool)
    chosen = get_strategy(strategy, overrides or {})
    if params is not None:
        changed = chosen.apply(clip, params, ctx)
    else:
        changed, params = chosen(clip, np.random.default_rng(seed), ctx)
    if info.video is not None:
        replace_audio(source, changed.audio, changed.sample_rate, out)
    else:
        encode_audio(out, changed.audio, changed.sample_rate)
    return params
