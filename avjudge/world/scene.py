"""Scene parameters: sampled deterministically from (seed, index), serialisable as ground truth."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..perturb.sources import VOICES
from . import vocab

if TYPE_CHECKING:
    from .world_config import WorldConfig


@dataclass(frozen=True)
class WorldObject:
    shape: str
    colour: str
    size: str
    x: float  # centre at t=0, fractions of width / height
    y: float
    motion: str
    event_kind: str
    sound: dict | None  # {"timbre", "f0"} or None for a silent object

    def radius_fraction(self) -> float:
        return vocab.SIZES[self.size]

    def state(self, t: float, duration: float) -> tuple[float, float, float]:
        """(x, y, scale) at time t, ignoring events."""
        dx, dy, ds = vocab.MOTIONS[self.motion]
        u = t / duration
        return self.x + dx * u, self.y + dy * u, 1.0 + ds * u


@dataclass(frozen=True)
class Event:
    time: float
    duration: float
    object: int  # index into Scene.objects
    kind: str


@dataclass(frozen=True)
class Speech:
    text: str
    voice: str
    start: float


@dataclass(frozen=True)
class Scene:
    id: str
    seed: int
    index: int
    duration: float
    width: int
    height: int
    fps: float
    sample_rate: int
    background: str
    ambience: str
    objects: tuple[WorldObject, ...]
    events: tuple[Event, ...]
    speech: Speech | None = None
    meta: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Scene":
        d = dict(d)
        d["objects"] = tuple(WorldObject(**o) for o in d["objects"])
        d["events"] = tuple(Event(**e) for e in d["events"])
        d["speech"] = Speech(**d["speech"]) if d.get("speech") else None
        return cls(**d)

    def onsets(self) -> list[float]:
        """Times at which a sound starts (event sounds only; speech is listed separately)."""
        return sorted(e.time for e in self.events if self.objects[e.object].sound is not None)


# Largest growth an object shows (pulse on top of growing motion), for the no-overlap check.
_MAX_SCALE = 1.35 * 1.5
EVENT_GAP_S = 0.15  # silence between consecutive event sounds


def _trajectory_ok(objs: list[WorldObject], cand: WorldObject, duration: float, width: int, height: int) -> bool:
    """The candidate stays inside the frame (bounces included) and never touches another object."""
    unit = min(width, height)
    for t in np.linspace(0.0, duration, 9):
        x, y, s = cand.state(t, duration)
        px, py = x * width, y * height
        r = cand.radius_fraction() * unit * s * 1.35
        if not (r < px < width - r and 1.6 * r < py < height - r):
            return False
        for other in objs:
            ox, oy, _ = other.state(t, duration)
            gap = (cand.radius_fraction() + other.radius_fraction()) * unit * _MAX_SCALE + 0.02 * unit
            if math.hypot(px - ox * width, py - oy * height) < gap:
                return False
    return True


def scene_id(seed: int, index: int) -> str:
    return f"world{seed}_{index:05d}"


def sample_scene(cfg: "WorldConfig", index: int) -> Scene:
    """Draw scene ``index`` of a world; the same (cfg.seed, index) always gives the same scene."""
    rng = np.random.default_rng([cfg.seed, index])
    duration = float(cfg.duration if cfg.max_duration is None else rng.uniform(cfg.duration, cfg.max_duration))
    duration = round(duration * cfg.fps) / cfg.fps
    background = str(rng.choice(list(vocab.BACKGROUNDS)))
    ambiences = vocab.BACKGROUNDS[background]["ambiences"]
    ambience = str(rng.choice(ambiences[1:])) if rng.random() < cfg.ambience_prob else "none"
    n_objects = int(rng.integers(cfg.min_objects, cfg.max_objects + 1))
    colours = list(rng.permutation(list(vocab.COLOURS)))
    objects: list[WorldObject] = []
    for _ in range(n_objects):
        for _attempt in range(60):
            size = str(rng.choice(list(vocab.SIZES)))
            shape = str(rng.choice(list(vocab.SHAPES)))
            sounding = rng.random() < cfg.sounding_prob or not any(o.sound for o in objects)
            cand = WorldObject(
                shape=shape,
                colour=colours[len(objects)],
                size=size,
                x=float(rng.uniform(0.1, 0.9)),
                y=float(rng.uniform(0.2, 0.85)),
                motion=str(rng.choice(list(vocab.MOTIONS))),
                event_kind=str(rng.choice(list(vocab.EVENTS))),
                sound={"timbre": vocab.SHAPES[shape], "f0": vocab.PITCHES[colours[len(objects)]]} if sounding else None,
            )
            if _trajectory_ok(objects, cand, duration, cfg.width, cfg.height):
                objects.append(cand)
                break
    events = _sample_events(rng, objects, duration)
    speech = None
    speech_prob = cfg.effective_speech_prob
    if speech_prob > 0 and rng.random() < speech_prob:
        obj = objects[int(rng.integers(len(objects)))]
        text = f"the {obj.colour} {obj.shape} {vocab.MOTION_PHRASES[obj.motion]}"
        speech = Speech(
            text=text,
            voice=str(rng.choice(list(VOICES))),
            start=float(round(rng.uniform(0.2, max(0.3, duration - 3.0)), 3)),
        )
    return Scene(
        id=scene_id(cfg.seed, index),
        seed=cfg.seed,
        index=index,
        duration=duration,
        width=cfg.width,
        height=cfg.height,
        fps=cfg.fps,
        sample_rate=cfg.sample_rate,
        background=background,
        ambience=ambience,
        objects=tuple(objects),
        events=tuple(events),
        speech=speech,
    )


def _sample_events(rng: np.random.Generator, objects: list[WorldObject], duration: float) -> list[Event]:
    """2-5 events per sounding object, never overlapping in time (so onsets and order are clear)."""
    wanted = [(i, int(rng.integers(2, 6))) for i, o in enumerate(objects) if o.sound is not None]
    slots = [i for i, n in wanted for _ in range(n)]
    slots = [slots[j] for j in rng.permutation(len(slots))]
    events: list[Event] = []
    t = float(rng.uniform(0.2, 0.6))
    for obj in slots:
        length = float(round(rng.uniform(0.15, 0.45), 3))
        if t + length > duration - 0.2:
            break
        events.append(Event(time=round(t, 4), duration=length, object=obj, kind=objects[obj].event_kind))
        t += length + EVENT_GAP_S + float(rng.uniform(0.0, 0.8))
    return events
