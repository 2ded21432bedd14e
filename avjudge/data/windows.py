"""Pair windows: in a cropping recipe every AV pair, positive or negative, shows its judge a window of its source of
one length, cut the same way, so nothing but the negative's own change tells the two apart (Synchformer's
`TemporalCropAndOffset`: both streams cut from inside a longer clip, never padded).

A window is stored in the pair record as ``{"start_s", "duration_s"}``, in the source's time; `pair_clip` cuts the
strategy's output to it. It is drawn inside the stretch where the negative holds real content on both streams
(`Strategy.kept_span`): a shift of ``s`` seconds leaves ``|s|`` seconds of one stream with nothing to pair with.
"""

from __future__ import annotations

import numpy as np

from ..perturb.base import Strategy

TOO_SHORT = "source too short for the window and the largest shift"  # one reason, so the stats count them together


def window_length(duration: float, strategies: dict[str, Strategy], window_s: float | None, min_s: float) -> float:
    """The window a ``duration``-second source's pairs show: ``window_s``, or by default the source less the
    largest cut any of ``strategies`` can make; 0 where the source cannot hold it beside that cut, or it is under
    ``min_s``."""
    room = duration - max((s.largest_cut() for s in strategies.values()), default=0.0)
    length = window_s or room
    return length if min_s <= length <= room + 1e-9 else 0.0


def draw_window(rng: np.random.Generator, span: tuple[float, float], length: float) -> dict | None:
    """A window of ``length`` seconds placed uniformly inside ``span`` (source seconds), or None where it does not
    fit."""
    low, high = span
    room = high - low - length
    if room < -1e-9:
        return None
    return {"start_s": low + float(rng.uniform(0.0, max(room, 0.0))), "duration_s": length}
