"""PriSe-style primitive-sensation stimuli (after AVI-Bench-PriSe), generated then measured: short clips with one
primitive thing to see, hear, or see and hear, each with exact ground truth and a presence check.

Tasks: ``shape`` (circle, square, triangle), ``colour`` (red, green, blue, yellow), ``position`` (a corner or the
centre), ``size`` (small, medium, large), ``motion`` (left, right, up, down), ``blur`` (sharp or blurred); ``pitch``
(a low or high tone), ``noise`` (a tone or noise), ``beat_count`` (1-6 beats); ``sounds_first`` (two objects flash,
each with its own tone: which sounds first) and ``av_offset`` (one flash and one beep: the sound before, with or
after the picture, by -400..400 ms). Every formal item has a presence-check item (``"confirms": ID``): "Can you see
/ hear anything?", so that its answer counts only if the check is answered right (double confirmation).

Every item's truth is measured again on the decoded file by code that does not know how it was drawn: the shape's
fill of its bounding box, the mean colour of the lit pixels, the centroid and its path, the lit area, the edge
sharpness, the f0 and spectral flatness, the onsets of the sound and the frames where each object lights up. An item
whose measure disagrees is drawn again or rejected, and counted.
"""

from __future__ import annotations

import re
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from scipy.ndimage import gaussian_filter

from ..data.questions import ChoiceQuestion, write_questions
from ..jsonl import write_json
from ..media import decode, encode_video
from ..stats import printed
from .base import Scored
from .parsing import strict_answer
from .score import accuracy, accuracy_in
from .sonicbench import meters
from .suite import Suite, register

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
MAX_TRIES = 5


# ---- drawing and sound --------------------------------------------------------------------------------------------


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


# ---- measuring the decoded clip -------------------------------------------------------------------------------------


def _lit(frame: np.ndarray, floor: int = 60) -> np.ndarray:
    return frame.max(axis=-1) > floor


def _shape_of(frames, audio) -> dict:
    lit = _lit(frames[len(frames) // 2])
    ys, xs = np.nonzero(lit)
    fill = lit.sum() / ((ys.max() - ys.min() + 1) * (xs.max() - xs.min() + 1))
    return {"shape": "square" if fill > 0.92 else "circle" if fill > 0.65 else "triangle"}


def _colour_of(frames, audio) -> dict:
    frame = frames[len(frames) // 2]
    mean = frame[_lit(frame)].mean(axis=0)
    return {"colour": min(COLOURS, key=lambda c: np.sum((np.array(COLOURS[c]) - mean) ** 2))}


def _centroid(frame: np.ndarray) -> np.ndarray:
    ys, xs = np.nonzero(_lit(frame))
    return np.array([xs.mean(), ys.mean()])


def _position_of(frames, audio) -> dict:
    centre = _centroid(frames[len(frames) // 2])
    nearest = min(POSITIONS, key=lambda p: np.sum((np.array(POSITIONS[p]) - centre) ** 2))
    return {"position": nearest, "centre": centre.tolist()}


def _size_of(frames, audio) -> dict:
    """The radius of a disc of the lit area."""
    return {"radius": float(np.sqrt(_lit(frames[len(frames) // 2]).sum() / np.pi))}


def _motion_of(frames, audio) -> dict:
    dx, dy = _centroid(frames[-1]) - _centroid(frames[0])
    horizontal = abs(dx) > abs(dy)
    return {"direction": ("right" if dx > 0 else "left") if horizontal else ("down" if dy > 0 else "up")}


def _blur_of(frames, audio) -> dict:
    grey = frames[len(frames) // 2].astype(np.float64).mean(axis=-1)
    edge = max(np.abs(np.diff(grey, axis=0)).max(), np.abs(np.diff(grey, axis=1)).max())
    return {"blurred": bool(edge < 40)}


def _pitch_of(frames, audio) -> dict:
    return {"high": bool(meters.fundamental(audio, RATE) > 600)}


def _noise_of(frames, audio) -> dict:
    power = np.abs(np.fft.rfft(audio)) ** 2 + 1e-12
    flatness = np.exp(np.mean(np.log(power))) / np.mean(power)
    return {"noise": bool(flatness > 0.1)}


def _beats_of(frames, audio) -> dict:
    return {"onsets": meters.onset_times(audio, RATE, min_gap=0.1).tolist()}


def _flashes_of(frames, audio) -> dict:
    """When each half of the picture first lights up (seconds), and the sound's onsets."""
    times = []
    for half in (frames[:, :, : SIZE // 2], frames[:, :, SIZE // 2 :]):
        lit = half.max(axis=(1, 2, 3)) > 150
        times.append(float(np.argmax(lit)) / FPS if lit.any() else None)
    return {"flash_times": times, "onsets": meters.onset_times(audio, RATE, min_gap=0.1).tolist()}


MEASURES = {
    "shape": _shape_of,
    "colour": _colour_of,
    "position": _position_of,
    "size": _size_of,
    "motion": _motion_of,
    "blur": _blur_of,
    "pitch": _pitch_of,
    "noise": _noise_of,
    "beat_count": _beats_of,
    "sounds_first": _flashes_of,
    "av_offset": _flashes_of,
}
ONSET_TOLERANCE = 0.005  # seconds, for the sound; one frame for the picture


def agrees(task: str, truth: dict, measured: dict) -> bool:
    """Whether what was measured on the decoded clip is the truth it was drawn with."""
    if task == "shape":
        return measured["shape"] == truth["shape"]
    if task == "colour":
        return measured["colour"] == truth["colour"]
    if task == "position":
        return measured["position"] == truth["position"] and np.allclose(measured["centre"], truth["centre"], atol=1)
    if task == "size":
        low, high = SIZES[truth["size"]]
        return low - 1 <= measured["radius"] <= high + 1 and abs(measured["radius"] - truth["radius"]) <= 1
    if task == "motion":
        return measured["direction"] == truth["direction"]
    if task == "blur":
        return measured["blurred"] == (truth["blur_sigma"] > 0)
    if task == "pitch":
        return measured["high"] == (truth["frequency"] > 600)
    if task == "noise":
        return measured["noise"] == truth["noise"]
    if task == "beat_count":
        found = measured["onsets"]
        return len(found) == truth["count"] and all(
            abs(a - b) <= ONSET_TOLERANCE for a, b in zip(found, truth["onsets"])
        )
    flashes = truth["flash_times"] if task == "sounds_first" else [truth["flash"]]
    seen = [t for t in measured["flash_times"] if t is not None]
    if len(seen) != len(flashes) or any(abs(a - b) > 1 / FPS for a, b in zip(seen, flashes)):
        return False
    heard = measured["onsets"]
    sounds = sorted(flashes) if task == "sounds_first" else [truth["flash"] + truth["offset"]]
    return len(heard) == len(sounds) and all(abs(a - b) <= ONSET_TOLERANCE for a, b in zip(heard, sounds))


# ---- items on disk --------------------------------------------------------------------------------------------------


def make_item(task: str, index: int, seed: int, out: Path) -> tuple[list[ChoiceQuestion], int]:
    """The formal item and its presence check, written under ``out`` and measured from the decoded file; no
    questions where no draw agreed. Returns them and the draws taken."""
    rng = np.random.default_rng([seed, TASKS.index(task), index])
    item_id = f"{task}_{index:04d}"
    media = Path("clips") / f"{item_id}.mp4"
    for tries in range(1, MAX_TRIES + 1):
        frames, audio, question, options, answer, truth = RENDERERS[task](rng)
        audio = np.zeros(int(SECONDS * RATE)) if audio is None else audio
        (out / media).parent.mkdir(parents=True, exist_ok=True)
        encode_video(out / media, frames, FPS, audio[None].astype(np.float32), RATE)
        clip = decode(out / media, video=True, audio=True, sample_rate=RATE, channels=1)
        measured = MEASURES[task](clip.frames, clip.audio[0])
        if not agrees(task, truth, measured):
            continue
        order = rng.permutation(len(options)) if task != "beat_count" else np.arange(len(options))
        shuffled = [options[k] for k in order]
        letter = "ABCDEFGH"[shuffled.index(answer)]
        formal = ChoiceQuestion(
            item_id,
            str(media),
            question,
            tuple(shuffled),
            letter,
            category=task,
            groups={"task": task},
            extra={"task": task, "truth": truth, "measured": measured},
        )
        sense = "see" if task in SEES else "hear"
        check = ChoiceQuestion(
            f"{item_id}_check",
            str(media),
            f"Can you {sense} anything in this clip?",
            ("Yes", "No"),
            "A",
            category=f"{task}/check",
            groups={"task": f"{task}/check"},
            extra={"task": f"{task}/check", "confirms": item_id, "truth": {"present": True}},
        )
        return [formal, check], tries
    (out / media).unlink(missing_ok=True)
    return [], MAX_TRIES


def _make(args: tuple[str, int, int, str]) -> tuple[str, list[ChoiceQuestion], int]:
    task, index, seed, out = args
    questions, tries = make_item(task, index, seed, Path(out))
    return task, questions, tries


def make_prise(out: Path, n: int, seed: int = 0, workers: int = 2) -> dict:
    """``n`` formal items spread over the tasks in turn (each with its presence check): OUT/clips, OUT/questions.jsonl
    and OUT/summary.json."""
    start = time.perf_counter()
    jobs = [(TASKS[i % len(TASKS)], i // len(TASKS), seed, str(out)) for i in range(n)]
    questions, cells = [], {t: {"items": 0, "redraws": 0, "rejected": 0} for t in TASKS}
    with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
        for task, made, tries in pool.map(_make, jobs, chunksize=4):
            cells[task]["items" if made else "rejected"] += 1
            cells[task]["redraws"] += tries - 1 if made else 0
            questions += made
    write_questions(questions, out / "questions.jsonl")
    summary = {
        "seed": seed,
        "items": sum(c["items"] for c in cells.values()),
        "rejected": sum(c["rejected"] for c in cells.values()),
        "redraws": sum(c["redraws"] for c in cells.values()),
        "seconds": round(time.perf_counter() - start, 1),
        "tasks": cells,
    }
    write_json(out / "summary.json", summary)
    return summary


# ---- scoring: AVI-Bench's multiple-choice rule and double confirmation ---------------------------------------------


def earliest_option(response: str, letters: tuple[str, ...], options: tuple[str, ...] = ()) -> str | None:
    """AVI-Bench's multiple-choice reading: the option named earliest in the response, by its text as a whole word
    or by its letter standing alone; failing both, the first number, where it is an option."""
    found = []
    for letter, option in zip(letters, options):
        text = re.search(rf"(?<!\w){re.escape(option.lower())}(?!\w)", response.lower()) if option else None
        if text:
            found.append((text.start(), letter))
        standalone = re.search(rf"\b{letter}\b", response)
        if standalone:
            found.append((standalone.start(), letter))
    if found:
        return min(found)[1]
    number = re.search(r"\d+", response)
    if number and number.group(0) in options:
        return letters[options.index(number.group(0))]
    return None


@register
class PriSe(Suite):
    """Items of `make_prise`: each formal item counts under double confirmation only if its presence check
    ("Can you see / hear anything?") is answered right too."""

    name = "prise"
    description = "PriSe-style primitive sensation items (omni prise make), with double confirmation"
    judge_task = "choice_av"
    letters = tuple("ABCDEF")
    parsers = {"paper": earliest_option, "strict": strict_answer}

    def table(self, scored: list[Scored]) -> dict:
        correct = {s.id: s.correct for s in scored}
        formal = [s for s in scored if not s.id.endswith("_check")]
        confirmed = [s.correct and correct.get(f"{s.id}_check", False) for s in formal]
        tasks = sorted({t for s in formal for t in s.categories("task")})
        return {
            "accuracy": accuracy(sum(s.correct for s in formal), len(formal)),
            "confirmed_accuracy": accuracy(sum(confirmed), len(formal)),
            "checks_passed": accuracy(
                sum(correct[f"{s.id}_check"] for s in formal if f"{s.id}_check" in correct),
                sum(f"{s.id}_check" in correct for s in formal),
            ),
            "tasks": {
                t: {
                    "accuracy": accuracy_in(formal, "task", t),
                    "confirmed_accuracy": accuracy(
                        sum(c for s, c in zip(formal, confirmed) if t in s.categories("task")),
                        sum(t in s.categories("task") for s in formal),
                    ),
                }
                for t in tasks
            },
        }

    def markdown(self, report: dict) -> str:
        lines = [
            f"# PriSe ({report['parser']} answer rule): accuracy, and with double confirmation",
            "",
            "| Model | accuracy | confirmed | checks passed |",
            "|---|---|---|---|",
        ]
        for model, block in report["models"].items():
            t = block["table"]
            figures = [printed(t[k], 3) for k in ("accuracy", "confirmed_accuracy", "checks_passed")]
            lines.append(f"| {model} | " + " | ".join(figures) + " |")
        return "\n".join(lines) + "\n"
