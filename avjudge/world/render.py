"""Rasterise a scene's frames: flat shapes on a background, events visible while their sound plays."""

from __future__ import annotations

import numpy as np

from . import vocab
from .scene import Scene, WorldObject

# How an event changes an object while it lasts: colour, scale factor, upward hop in radii.
_EVENT_LOOK = {"flash": (vocab.WHITE, 1.0, 0.0), "pulse": (None, 1.35, 0.0), "bounce": (None, 1.0, 0.6)}


def background(scene: Scene) -> np.ndarray:
    h, w = scene.height, scene.width
    spec = vocab.BACKGROUNDS[scene.background]
    img = np.empty((h, w, 3), np.uint8)
    if scene.background == "indoor":
        split = int(h * 0.8)
        img[:split], img[split:] = spec["wall"], spec["floor"]
    else:
        split = int(h * 0.7)
        img[:split], img[split:] = spec["sky"], spec["grass"]
    return img


def shape_mask(shape: str, dx: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """Inside test in coordinates normalised by the radius (y grows downward)."""
    if shape == "circle":
        return dx * dx + dy * dy <= 1.0
    if shape == "square":
        return np.maximum(np.abs(dx), np.abs(dy)) <= 0.85
    if shape == "diamond":
        return np.abs(dx) + np.abs(dy) <= 1.0
    if shape == "triangle":
        return (dy <= 0.7) & (np.abs(dx) <= 0.9 * (dy + 1.0) / 1.7)
    if shape == "ring":
        d2 = dx * dx + dy * dy
        return (d2 <= 1.0) & (d2 >= 0.3)
    raise ValueError(f"unknown shape {shape!r}; known: {sorted(vocab.SHAPES)}")


def object_look(scene: Scene, index: int, t: float) -> tuple[float, float, float, tuple[int, int, int]]:
    """(centre x px, centre y px, radius px, rgb) of object ``index`` at time t."""
    obj: WorldObject = scene.objects[index]
    x, y, scale = obj.state(t, scene.duration)
    colour, hop = vocab.COLOURS[obj.colour], 0.0
    for ev in scene.events:
        if ev.object == index and ev.time <= t < ev.time + ev.duration:
            look_colour, look_scale, look_hop = _EVENT_LOOK[ev.kind]
            colour = look_colour or colour
            scale *= look_scale
            hop = look_hop
    r = obj.radius_fraction() * min(scene.width, scene.height) * scale
    return x * scene.width, y * scene.height - hop * r, r, colour


def render_frames(scene: Scene) -> np.ndarray:
    n = int(round(scene.duration * scene.fps))
    base = background(scene)
    frames = np.empty((n, scene.height, scene.width, 3), np.uint8)
    for k in range(n):
        img = frames[k]
        img[:] = base
        t = k / scene.fps
        for i, obj in enumerate(scene.objects):
            cx, cy, r, colour = object_look(scene, i, t)
            x0, x1 = max(int(cx - r) - 1, 0), min(int(cx + r) + 2, scene.width)
            y0, y1 = max(int(cy - r) - 1, 0), min(int(cy + r) + 2, scene.height)
            if x1 <= x0 or y1 <= y0:
                continue
            ys, xs = np.mgrid[y0:y1, x0:x1]
            mask = shape_mask(obj.shape, (xs + 0.5 - cx) / r, (ys + 0.5 - cy) / r)
            img[y0:y1, x0:x1][mask] = colour
    return frames
