"""Which of the demo's VT caption edits can a judge tell from the frames it is shown? (issue #5)

A world caption says four kinds of things: the place, the objects (how many; colour, shape, size, path), where the
first two stand at the start, and the events (which object flashes, pulses or hops, and how many times). The first
three are in every frame. An event lasts 0.15-0.45 s and is seen only if one of the judge's sampled frames falls
inside it, so an edit of how many times an object acts can be told only when every one of its events was caught, and
an edit of how it acts ("hops upward" -> "flashes white") only when at least one was. For each held-out VT negative
of a finished demo run this finds the sentence the edit changed, the object it is about, and whether the frames the
judge samples (`avjudge.judges.judge.sampled_frames`, at each --fps) show what is needed; and prints, per edited
dimension and per kind of edit, the share that can be told and the best balanced accuracy a judge that sees only
those frames can reach: it accepts every positive and turns away exactly the negatives its frames contradict,
(1 + that share) / 2.

Usage: python benchmarks/vt_decidability.py OUT [--split test] [--fps 2 4 8]
(OUT: an `avjudge demo` output folder; default --fps: the demo VT judge's, from train_configs/tiny_world_vt.yaml;
a second or so)
"""
import argparse
import difflib
import re
from collections import defaultdict
from pathlib import Path

import numpy as np

from avjudge.config import load_config
from avjudge.data import load_pairs
from avjudge.demo import TRAIN_CONFIGS
from avjudge.judges.judge import JudgeSettings, sampled_frames
from avjudge.jsonl import read_jsonl
from avjudge.train import TrainConfig
from avjudge.world import MANIFEST, vocab
from avjudge.world.scene import Scene

TIMES_PHRASES = {vocab.times_word(n) for n in range(1, len(vocab.NUMBER_WORDS))}
CHANGED = re.compile(r"Changed '(?P<old>[^']*)' to '")


def seen_times(scene: Scene, fps: float) -> np.ndarray:
    """The moments (s) of the world frames a judge sampling at ``fps`` is shown (the world renders frame k at
    k / scene.fps)."""
    timestamps = np.arange(round(scene.duration * scene.fps)) / scene.fps
    indices, _ = sampled_frames(timestamps, 0.0, scene.duration, fps, JudgeSettings("vt").max_frames)
    return timestamps[indices]


def events_caught(scene: Scene, obj: int, times: np.ndarray) -> tuple[int, int]:
    """(events of object ``obj`` that some sampled frame falls inside, its events): the renderer shows an event
    from its start up to, not including, its end."""
    spans = [(e.time, e.time + e.duration) for e in scene.events if e.object == obj]
    return sum(bool(np.any((times >= start) & (times < end))) for start, end in spans), len(spans)


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
    return all(np.any((times >= start) & (times < end)) for start, end in firsts.values())


def always(scene: Scene, obj: int, times: np.ndarray) -> bool:
    return True


# kind of edit -> whether the sampled frames tell it (scene, the object the edited words are about, seen times)
EDIT_KINDS = {"place": always, "objects": always, "start positions": always, "event count": every_event_caught,
              "event look": some_event_caught, "event actor": always, "event order": first_events_caught}


def first_change(positive: str, negative: str) -> int:
    """Index of the first word of ``positive`` that ``negative`` changes."""
    a, b = positive.split(), negative.split()
    for tag, i, _, _, _ in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag != "equal":
            return i
    raise ValueError("the negative caption equals the positive")


def edit_kind(positive: str, negative: str, changed: str | None, scene: Scene) -> tuple[str, int | None]:
    """(kind of edit, the object the changed words are about, or None) from the sentence the edit lands in: the
    caption's first sentence names the place, the second the objects, a sentence "At the start, ..." the start
    positions, the last the events; there the words changed say whether the count, the look or the actor, and a
    swap (``changed`` None) the order."""
    words = positive.split()
    at = first_change(positive, negative)
    sentence_start = max([0] + [k + 1 for k in range(at) if words[k].endswith(".")])
    sentence = sum(words[k].endswith(".") for k in range(at))
    if sentence == 0:
        return "place", None
    if sentence == 1:
        return "objects", None
    if words[sentence_start] == "At":
        return "start positions", None
    colours = {o.colour: i for i, o in enumerate(scene.objects)}
    actor = next((colours[w.strip(".,")] for w in reversed(words[sentence_start:at + 1]) if w.strip(".,") in colours),
                 None)
    if changed is None:
        return "event order", None
    if changed in TIMES_PHRASES:
        return "event count", actor
    if changed in vocab.COLOURS or changed in vocab.SHAPES:
        return "event actor", actor
    return "event look", actor


def decidability(records: list[dict], world: dict[str, dict], fps: float) -> list[tuple[str, str, bool]]:
    """(dimension, kind of edit, whether the frames sampled at ``fps`` tell it) for each negative of ``records``
    (VT pairs made by the caption editor); ``world``: clip id -> its world record."""
    out = []
    for record in records:
        if record["label"] == 1:
            continue
        entry = world[record["source_id"]]
        scene = Scene.from_dict(entry["scene"])
        match = CHANGED.match(record["params"].get("detail", ""))
        changed = match["old"] if match else None  # a swap of two phrases' order changes no one word
        kind, actor = edit_kind(entry["captions"]["video"], record["text"], changed, scene)
        if kind in ("event count", "event look") and actor is None:
            raise ValueError(f"{record['id']}: no object named before the edited words in {record['text']!r}")
        out.append((record["negative_type"], kind, EDIT_KINDS[kind](scene, actor, seen_times(scene, fps))))
    return out


def ceilings(rows: list[tuple[str, str, bool]], key) -> dict[str, tuple[int, float]]:
    """group -> (negatives, share the frames tell); ``key(dimension, kind)`` names a row's group."""
    groups = defaultdict(list)
    for dimension, kind, told in rows:
        groups[key(dimension, kind)].append(told)
    return {name: (len(told), float(np.mean(told))) for name, told in sorted(groups.items())}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path, help="an `avjudge demo` output folder")
    p.add_argument("--split", default="test", help="which pairs: test (held out, the demo's table) or train")
    p.add_argument("--fps", type=float, nargs="+", help="judge frame rates to compare (default: the demo VT judge's)")
    args = p.parse_args()
    rates = args.fps or [load_config(TrainConfig, TRAIN_CONFIGS["vt"]).fps]
    world = {record["id"]: record for record in read_jsonl(args.out / "world" / MANIFEST)}
    records = load_pairs(args.out / "pairs", "vt", args.split)
    rows = {fps: decidability(records, world, fps) for fps in rates}
    header = "".join(f"{f'{fps:g} fps: told / ceiling':>26}" for fps in rates)
    for title, key in (("dimension", lambda dimension, kind: dimension),
                       ("dimension / kind of edit", lambda dimension, kind: f"{dimension} / {kind}")):
        table = {fps: ceilings(rows[fps], key) for fps in rates}
        print(f"\n{title:<34}{'n':>5}{header}")
        for name, (n, _) in table[rates[0]].items():
            print(f"{name:<34}{n:>5}" + "".join(f"{table[fps][name][1]:>18.2f} / {(1 + table[fps][name][1]) / 2:.2f}"
                                                for fps in rates))


if __name__ == "__main__":
    main()
