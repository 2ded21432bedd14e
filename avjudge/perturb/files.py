"""One hard negative of a file, written as a file: what `avjudge perturb apply` does, so a user can hear and see a
strategy. Where only the sound changes, the picture of a video is copied untouched; a strategy that changes the
picture, or cuts the clip (a cut shift keeps the window where both streams are real), has both streams written, one
length, as training shows them."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..media import decode, encode_audio, encode_video, probe, replace_audio
from .base import Context, PerturbError, change_db, get_strategy
from .pool import SourcePool
from .signal import UNCHANGED_DB


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
    clip = decode(source, video=info.video is not None)  # picture strategies change the frames
    ctx = Context(record=_pool_record(pool, source) or {"id": str(source)}, pool=pool)
    chosen = get_strategy(strategy, overrides or {})
    if params is None and chosen.reaches_unnoticed():
        raise PerturbError(f"{chosen.reaches_unnoticed()}: raise the range's low end")
    if params is not None:
        chosen.check_params(params)
        if chosen.unnoticed_reason(params):
            raise PerturbError(f"{chosen.unnoticed_reason(params)}; give parameters a person would notice")
        changed = chosen.apply(clip, params, ctx)
    else:
        changed, params = chosen(clip, np.random.default_rng(seed), ctx)
    # a sound strategy must change the sound (a degenerate one blanks, freezes or replaces a stream outright)
    change = change_db(clip, changed) if chosen.family != "degenerate" else 0.0
    if change < UNCHANGED_DB:
        raise PerturbError(
            f"{strategy} with {params} leaves {source}'s sound as it was (it differs by {change:.0f} dB, under the "
            f"{UNCHANGED_DB:.0f} dB a re-encoding changes it by): nothing written; choose parameters that change it"
        )
    if info.video is None:
        encode_audio(out, changed.audio, changed.sample_rate)
    elif changed.frames is clip.frames:  # the picture untouched: copied as it is, the new sound beside it
        replace_audio(source, changed.audio, changed.sample_rate, out)
    else:  # the picture changed, or cut to the window a cut shift keeps: both streams written, one length
        encode_video(out, changed.frames, clip.fps, changed.audio, changed.sample_rate)
    return params


def _pool_record(pool: SourcePool | None, source: str | Path) -> dict | None:
    """The pool's record of the file ``source``, where the pool holds it (its captions, for the strategies that
    compare them)."""
    if pool is None:
        return None
    target = Path(source).resolve()
    return next((r for r in pool.records.values() if Path(r["video"]).resolve() == target), None)
