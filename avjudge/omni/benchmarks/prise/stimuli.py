"""PriSe's stimuli, drawn and sounded: one primitive thing to see, hear, or see and hear per item, each renderer
giving the frames, the sound, the question, its options, the answer and the truth the measures check."""

from __future__ import annotations

import numpy as np
from scipy.ndimage import gaussian_filter

SIZE, FPS, SECONDS, RATE = 128, 25, 2.0, 16000
FRAMES = int(FPS * SECONDS)
COLOURS = {"red": (220, 40, 40), "green": (40, 200, 60), "blue": (50, 80, 230), "yellow": (230, 210, 40)}
SHAPES = ("circle", "square", "triangle")
MOTIONS = {"left": (-1, 0), "right": (1, 0), "up": (0, -1), "down": (0, 1)}
POSITIONS = {
    "top left": (32, 32),
    "top right": (96, 32),
    "center": (64, 64),
    "bottom left": (32, 96),
    "bottom right": (96, 96),
}  # the object's centre, drawn within 6 pixels of its anchor
SIZES = {"small": (8, 12), "medium": (18, 22), "large": (30, 36)}  # radius ranges, in pixels
TASKS = (
    "shape",
    "colour",
    "position",
    "size",
    "motion",
    "blur",
    "pitch",
    "noise",
    "beat_count",
    "sounds_first",
    "av_offset",
)
SEES = {"shape", "colour", "position", "size", "motion", "blur", "sounds_first", "av_offset"}
HEARS = {"pitch", "noise", "beat_count", "sounds_first", "av_offset"}


GRID_Y, GRID_X = np.mgrid[0:SIZE, 0:SIZE]


def _mask(shape: str, cx: float, cy: float, radius: float) -> np.ndarray:
    y, x = GRID_Y, GRID_X
    if shape == "circle":
        return (x - cx) ** 2 + (y - cy) ** 2 <= radius**2
    if shape == "square":
        return (abs(x - cx) <= radius) & (abs(y - cy) <= radius)
    # an upright triangle: apex at the top, base at the bottom of the same box
    top, bottom = cy - radius, cy + radius
    half = radius * (y - top) / (bottom - top)
    return (y >= top) & (y <= bottom) & (abs(x - cx) <= half)


def _frames(layers: list[tuple[np.ndarray, tuple[int, int, int]]], blur: float = 0.0) -> np.ndarray:
    """One frame: each (mask, colour) drawn on black."""
    frame = np.zeros((SIZE, SIZE, 3), np.float64)
    for mask, colour in layers:
        frame[mask] = colour
    if blur:
        frame = np.stack([gaussian_filter(frame[..., c], blur) for c in range(3)], axis=-1)
    return frame.clip(0, 255).astype(np.uint8)


def _tone(freq: float, seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    ramp = np.minimum(1, np.minimum(t, seconds - t) / 0.005)
    return 0.4 * np.sin(2 * np.pi * freq * t) * ramp


def _place(audio: np.ndarray, sound: np.ndarray, at: float) -> None:
    s = int(round(at * RATE))
    audio[s : s + len(sound)] += sound[: len(audio) - s]


# ---- items: render(rng) -> (frames, audio, question, options, answer, truth) ----------------------------------------


def _shape(rng):
    shape = SHAPES[rng.integers(3)]
    r = rng.uniform(18, 30)
    layer = (_mask(shape, rng.uniform(40, 88), rng.uniform(40, 88), r), COLOURS["yellow"])
    frames = np.repeat(_frames([layer])[None], FRAMES, axis=0)
    return frames, None, "What shape is shown?", list(SHAPES), shape, {"shape": shape, "radius": r}


def _colour(rng):
    colour = list(COLOURS)[rng.integers(len(COLOURS))]
    layer = (_mask("square", rng.uniform(40, 88), rng.uniform(40, 88), rng.uniform(15, 25)), COLOURS[colour])
    frames = np.repeat(_frames([layer])[None], FRAMES, axis=0)
    return frames, None, "What colour is the object?", list(COLOURS), colour, {"colour": colour}


def _position(rng):
    where = list(POSITIONS)[rng.integers(len(POSITIONS))]
    x, y = (c + rng.uniform(-6, 6) for c in POSITIONS[where])
    frames = np.repeat(_frames([(_mask("circle", x, y, 14), COLOURS["red"])])[None], FRAMES, axis=0)
    return frames, None, "Where is the object?", list(POSITIONS), where, {"position": where, "centre": [x, y]}


def _size(rng):
    size = list(SIZES)[rng.integers(len(SIZES))]
    radius = rng.uniform(*SIZES[size])
    frames = np.repeat(_frames([(_mask("circle", 64, 64, radius), COLOURS["blue"])])[None], FRAMES, axis=0)
    return frames, None, "How big is the object?", list(SIZES), size, {"size": size, "radius": radius}


def _motion(rng):
    direction = list(MOTIONS)[rng.integers(4)]
    dx, dy = MOTIONS[direction]
    travel = rng.uniform(40, 60)
    start = np.array([64 - dx * travel / 2, 64 - dy * travel / 2])
    step = np.array([dx, dy]) * travel / (FRAMES - 1)
    centres = [start + step * k for k in range(FRAMES)]
    frames = np.stack([_frames([(_mask("circle", x, y, 12), COLOURS["green"])]) for x, y in centres])
    return (
        frames,
        None,
        "Which way does the object move?",
        list(MOTIONS),
        direction,
        {"direction": direction, "pixels": travel},
    )


def _blur(rng):
    blurred = bool(rng.integers(2))
    sigma = rng.uniform(4, 6) if blurred else 0.0
    layer = (_mask("circle", 64, 64, rng.uniform(20, 28)), COLOURS["blue"])
    frames = np.repeat(_frames([layer], sigma)[None], FRAMES, axis=0)
    answer = "blurred" if blurred else "sharp"
    return frames, None, "Is the object sharp or blurred?", ["sharp", "blurred"], answer, {"blur_sigma": sigma}


def _blank_frames():
    return np.zeros((FRAMES, SIZE, SIZE, 3), np.uint8)


def _pitch(rng):
    high = bool(rng.integers(2))
    freq = rng.uniform(900, 1400) if high else rng.uniform(150, 300)
    audio = np.zeros(int(SECONDS * RATE))
    _place(audio, _tone(freq, 1.2), 0.4)
    answer = "high" if high else "low"
    return _blank_frames(), audio, "Is the tone high or low?", ["low", "high"], answer, {"frequency": freq}


def _noise(rng):
    noisy = bool(rng.integers(2))
    sound = 0.2 * rng.standard_normal(int(1.2 * RATE)) if noisy else _tone(rng.uniform(300, 800), 1.2)
    audio = np.zeros(int(SECONDS * RATE))
    _place(audio, sound, 0.4)
    answer = "noise" if noisy else "a tone"
    return _blank_frames(), audio, "Is the sound a tone or noise?", ["a tone", "noise"], answer, {"noise": noisy}


def _beats(rng):
    count = int(rng.integers(1, 7))
    onsets = 0.1 + np.sort(rng.choice(np.arange(0, 1.7, 0.25), size=count, replace=False))
    audio = np.zeros(int(SECONDS * RATE))
    for at in onsets:
        _place(audio, _tone(600, 0.06), at)
    options = [str(n) for n in range(1, 7)]
    return (
        _blank_frames(),
        audio,
        "How many beats do you hear?",
        options,
        str(count),
        {"count": count, "onsets": onsets.tolist()},
    )


def _flash_frames(flashes: list[tuple[float, float, int]]) -> np.ndarray:
    """Two objects, left and right, each lit for 200 ms from its flash time ((time, x, index))."""
    frames = []
    for k in range(FRAMES):
        t = k / FPS
        layers = []
        for at, cx, index in flashes:
            lit = at <= t < at + 0.2
            colour = (COLOURS["red"], COLOURS["blue"])[index] if lit else (40, 40, 40)
            layers.append((_mask("square", cx, 64, 16), colour))
        frames.append(_frames(layers))
    return np.stack(frames)


def _sounds_first(rng):
    first = int(rng.integers(2))  # 0: the left object
    times = {first: rng.uniform(0.2, 0.6)}
    times[1 - first] = times[first] + rng.uniform(0.5, 0.8)
    times = {k: round(v * FPS) / FPS for k, v in times.items()}  # flashes start on a frame
    frames = _flash_frames([(times[0], 32, 0), (times[1], 96, 1)])
    audio = np.zeros(int(SECONDS * RATE))
    _place(audio, _tone(400, 0.15), times[0])
    _place(audio, _tone(1000, 0.15), times[1])
    answer = ("the left object", "the right object")[first]
    options = ["the left object", "the right object"]
    return frames, audio, "Which object makes its sound first?", options, answer, {"flash_times": [times[0], times[1]]}


def _av_offset(rng):
    flash = round(rng.uniform(0.5, 0.9) * FPS) / FPS
    offset = float(rng.choice([-0.4, -0.3, 0.0, 0.3, 0.4]))
    frames = _flash_frames([(flash, 32, 0)])  # in the left half, as the measure looks for it
    audio = np.zeros(int(SECONDS * RATE))
    _place(audio, _tone(800, 0.1), flash + offset)
    answer = "before the flash" if offset < 0 else "with the flash" if offset == 0 else "after the flash"
    options = ["before the flash", "with the flash", "after the flash"]
    return (
        frames,
        audio,
        "Is the beep heard before, with, or after the flash?",
        options,
        answer,
        {"flash": flash, "offset": offset},
    )


RENDERERS = {
    "shape": _shape,
    "colour": _colour,
    "position": _position,
    "size": _size,
    "motion": _motion,
    "blur": _blur,
    "pitch": _pitch,
    "noise": _noise,
    "beat_count": _beats,
    "sounds_first": _sounds_first,
    "av_offset": _av_offset,
}
