"""AVBench-style captions generated from scene parameters: a video description, an audio
description and the utterance. Every fact a caption states is in the ground truth."""

from __future__ import annotations

from . import vocab
from .scene import Scene, WorldObject


def object_name(obj: WorldObject) -> str:
    return f"{obj.colour} {obj.shape}"


def _relation(a: WorldObject, b: WorldObject) -> str:
    dx, dy = b.x - a.x, b.y - a.y
    if abs(dx) >= abs(dy):
        return "to the left of" if dx > 0 else "to the right of"
    return "above" if dy > 0 else "below"


def _event_counts(scene: Scene) -> list[tuple[int, int]]:
    """(object index, number of events) in order of each object's first event."""
    order: dict[int, int] = {}
    for ev in sorted(scene.events, key=lambda e: e.time):
        order[ev.object] = order.get(ev.object, 0) + 1
    return list(order.items())


def _join(parts: list[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def video_caption(scene: Scene) -> str:
    n = len(scene.objects)
    noun = "shape" if n == 1 else "shapes"
    verb = "is" if n == 1 else "are"
    sentences = [f"The video shows {vocab.BACKGROUNDS[scene.background]['phrase']}."]
    descriptions = [f"a {o.size} {object_name(o)} that {vocab.MOTION_PHRASES[o.motion]}" for o in scene.objects]
    sentences.append(f"{vocab.number_word(n).capitalize()} {noun} {verb} visible: {_join(descriptions)}.")
    if n >= 2:
        a, b = scene.objects[0], scene.objects[1]
        sentences.append(f"At the start, the {object_name(a)} is {_relation(a, b)} the {object_name(b)}.")
    counts = _event_counts(scene)
    if counts:
        parts = [
            f"the {object_name(scene.objects[i])} {vocab.EVENTS[scene.objects[i].event_kind]} {vocab.times_word(c)}"
            for i, c in counts
        ]
        text = parts[0] if len(parts) == 1 else "first " + ", then ".join(parts)
        sentences.append(text[0].upper() + text[1:] + ".")
    return " ".join(sentences)


def sound_name(sound: dict) -> str:
    """How captions name an object's sound: "low pure sine tone" (its register and timbre; a noise burst has no
    pitch word)."""
    timbre = sound["timbre"]
    register = "" if timbre == "noise_burst" else vocab.register_word(sound["f0"]) + " "
    return f"{register}{vocab.TIMBRE_WORDS[timbre]}"


def audio_caption(scene: Scene) -> str:
    sentences = []
    counts = _event_counts(scene)
    parts = [f"a {sound_name(scene.objects[i].sound)} sounds {vocab.times_word(c)}" for i, c in counts]
    if parts:
        text = parts[0] if len(parts) == 1 else "first " + ", then ".join(parts)
        sentences.append(text[0].upper() + text[1:] + ".")
        total = sum(c for _, c in counts)
        word = vocab.number_word(total)
        sentences.append(f"In all, {word} beat is heard." if total == 1 else f"In all, {word} beats are heard.")
    else:
        sentences.append("No tones are heard.")
    sentences.append(f"In the background there is {vocab.AMBIENCE_PHRASES[scene.ambience]}.")
    if scene.speech is not None:
        sentences.append(f'A {scene.speech.voice} voice says: "{scene.speech.text}".')
    else:
        sentences.append("Nobody speaks.")
    return " ".join(sentences)


def captions(scene: Scene) -> dict[str, str]:
    return {
        "video": video_caption(scene),
        "audio": audio_caption(scene),
        "utterance": scene.speech.text if scene.speech else "",
    }
