"""Pair windows: in a cropping recipe every AV pair, positive or negative, shows its judge a window of its source of
one length, cut the same way, so nothing but the negative's own change tells the two apart (Synchformer's
`TemporalCropAndOffset`: both streams cut from inside a longer clip, never padded).

A window is stored in the pair record as ``{"start_s", "duration_s"}``, in the source's time; `pair_clip` cuts the
strategy's output to it. Every pair's window is placed the same way, uniformly over its source, positive or negative
of any type, and a negative's parameters are then drawn to fit it (`Strategy.sample_fitting`: a shift of ``s``
seconds leaves ``|s|`` seconds of one stream with nothing to pair with, so its sign and size follow the place), so
where a window sits says nothing of its pair (a picture-only classifier read cut shifts by their place when windows
were drawn inside each negative's own span).
"""

from __future__ import annotations

import numpy as np

from ..perturb.base import Context, PerturbError, Strategy

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


def placed_negative(
    rng: np.random.Generator, strategy: Strategy, ctx: Context, duration: float, length: float
) -> tuple[dict, dict]:
    """(parameters, window) of one negative of ``strategy`` on a ``duration``-second source whose pairs show
    ``length`` seconds: the window placed as a positive's is, then the parameters drawn to fit it.

    Raises:
        PerturbError: the source cannot hold the window, or no draw of the strategy fits it.
    """
    window = draw_window(rng, (0.0, duration), length)
    if window is None:
        raise PerturbError(f"the {duration:.2f} s source is shorter than the {length:.2f} s window")
    return strategy.sample_fitting(rng, ctx, window, duration), window
