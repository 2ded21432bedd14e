"""Which caption edits of a world clip can be told from the frames a judge is shown.

A world caption names the place, the objects (count, colour, shape, size, path), where the first two stand at the
start, and the events: which object flashes, pulses or hops, and how many times. The first three are shown from the
first frame on. An event lasts 0.15-0.45 s and is seen only if a frame shown falls inside it, so a changed count of
an object's events can be told only when every one of them was caught, a changed look ("hops upward" -> "flashes
white") when one was, a swapped order when the first event of every acting object was. An edit whose kind cannot
be read off counts as told, so that a ceiling made from these answers stays an upper bound. And which random
mismatches (another clip's sound) give themselves away by an ambience the picture's place cannot have.
"""

from __future__ import annotations

import difflib
import re

import numpy as np

from avjudge.world import vocab
from avjudge.world.scene import Scene

TIMES_PHRASES = frozenset(vocab.times_word(n) for n in range(1, len(vocab.NUMBER_WORDS)))
PATH_WORDS = frozenset(word for phrase in vocab.MOTION_PHRASES.values() for word in phrase.split())
_CHANGED = re.compile(r"Changed '(?P<old>[^']*)' to '")


def frame_times(scene: Scene) -> np.ndarray:
    """The moment (s) of each of the clip's frames: the world renders frame k at k / fps."""
    return np.arange(round(scene.duration * scene.fps)) / scene.fps


def _caught(span: tuple[float, float], times: np.ndarray) -> bool:
    """Whether a frame shown at one of ``times`` falls inside an event (shown from its start up to its end)."""
    return bool(np.any((times >= span[0]) & (times < span[1])))


def events_caught(scene: Scene, obj: int, times: np.ndarray) -> tuple[int, int]:
    """(events of object ``obj`` that a frame shown at one of ``times`` falls inside, its events)."""
    spans = [(e.time, e.time + e.duration) for e in scene.events if e.object == obj]
    return sum(_caught(span, times) for span in spans), len(spans)


def every_event_caught(scene: Scene, obj: int, times: np.ndarray) -> bool:
    caught, total = events_caught(scene, obj, times)
    return caught == total


def some_event_caught(scene: Scene, obj: int, times: np.ndarray) -> bool:
    return events_caught(scene, obj, times)[0] > 0


def first_events_caught(scene: Scene, obj: int, times: np.ndarray) -> bool:
    """Whether the first event of every object that acts is caught: then the frames show who acts first."""
    firsts = {}
    for event in sorted(scene.events, key=lambda e: e.time):
        firsts.setdefault(event.object, (event.time, event.time + event.duration))
    return all(_caught(span, times) for span in firsts.values())


def always(scene: Scene, obj: int, times: np.ndarray) -> bool:
    return True


# kind of edit -> whether frames shown at `times` tell it (scene, the object the edited words are about, times)
EDIT_KINDS = {
    "place": always,
    "object count": always,
    "object colour, on screen": always,
    "object colour, none on screen": always,
    "object shape": always,
    "object size": always,
    "object path": always,
    "start positions": always,
    "event count": every_event_caught,
    "event look": some_event_caught,
    "event actor": always,
    "event order": first_events_caught,
    "unknown": always,
}


def first_change(positive: str, negative: str) -> tuple[int, str] | None:
    """(index of the first word of ``positive`` that ``negative`` changes, the word ``negative`` has there, "" where
    it drops words); None when it changes none."""
    a, b = positive.split(), negative.split()
    return next(
        (
            (i, b[j] if j < len(b) else "")
            for tag, i, _, j, _ in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
            if tag != "equal"
        ),
        None,
    )


def object_edit_kind(old: str, new: str, scene: Scene) -> str:
    """Which of an object's words an edit of the caption's object list changed, ``old`` to ``new``: its number,
    colour (to one another object shows, or none does: only the second is told by what colours are on screen),
    shape, size or path; "unknown" for any other word."""
    old, new = old.strip(".,:").lower(), new.strip(".,:").lower()
    if old in vocab.NUMBER_WORDS:
        return "object count"
    if old in vocab.COLOURS:
        shown = {o.colour for o in scene.objects}
        return "object colour, on screen" if new in shown else "object colour, none on screen"
    if old in vocab.SHAPES:
        return "object shape"
    if old in vocab.SIZES:
        return "object size"
    return "object path" if old in PATH_WORDS else "unknown"


def edit_kind(positive: str, negative: str, changed: str | None, scene: Scene) -> tuple[str, int | None]:
    """(kind of edit, the object the changed words are about, or None) from the sentence the edit lands in: the
    caption's first sentence names the place, the second the objects (there the first word changed says which of
    their words), a sentence "At the start, ..." the start positions, the last the events; there the words changed
    (``changed``: the first of them, None for a swap of two phrases) say whether the count, the look, the actor or
    the order; "unknown" where no word changed, or an event edit names no object before the changed words."""
    words = positive.split()
    change = first_change(positive, negative)
    if change is None:
        return "unknown", None
    at, new = change
    sentence_start = max([0] + [k + 1 for k in range(at) if words[k].endswith(".")])
    sentence = sum(words[k].endswith(".") for k in range(at))
    if sentence == 0:
        return "place", None
    if sentence == 1:
        return object_edit_kind(words[at], new, scene), None
    if words[sentence_start] == "At":
        return "start positions", None
    if changed is None:
        return "event order", None
    colours = {o.colour: i for i, o in enumerate(scene.objects)}
    actor = next(
        (colours[w.strip(".,")] for w in reversed(words[sentence_start : at + 1]) if w.strip(".,") in colours), None
    )
    if changed in TIMES_PHRASES:
        return ("event count", actor) if actor is not None else ("unknown", None)
    if changed in vocab.COLOURS or changed in vocab.SHAPES:
        return "event actor", actor
    return ("event look", actor) if actor is not None else ("unknown", None)


def caption_edit_told(record: dict, scene: Scene, caption: str, times: np.ndarray) -> tuple[str, bool]:
    """(kind of edit, whether frames shown at ``times`` tell it) for a VT negative ``record`` made by the caption
    editor from the world clip of ``scene``, whose video caption is ``caption``."""
    match = _CHANGED.match(record["params"].get("detail", ""))
    kind, actor = edit_kind(caption, record["text"], match["old"] if match else None, scene)
    return kind, EDIT_KINDS[kind](scene, actor, times)


def ambience_gives_away(scene: dict, partner: dict) -> bool:
    """Whether another clip's sound (``partner``: that clip's world scene) brings an ambience the place of ``scene``
    cannot have (rain in a room): a random mismatch a judge turns away by checking the ambience against the place,
    without the objects' links (which colour sounds which note, which shape which timbre)."""
    return partner["ambience"] not in vocab.BACKGROUNDS[scene["background"]]["ambiences"]
