"""Which VT caption edits a judge's sampled frames can tell (`avjudge.world.decidability`, composed with the judge's
frame choice in `research.demo_targets`), on a hand-made scene whose events fall between or on the frames; and
`research/vt_decidability.py` on a world's pairs."""

import numpy as np
import pytest

from avjudge.data.audit import text_leak
from avjudge.demo.run import build_demo_pairs
from avjudge.world.captions import video_caption
from avjudge.world.scene import Event, Scene, WorldObject
from research import vt_decidability
from research.decidability import events_caught, first_events_caught
from research.demo_targets import caption_edits_told, shown_times

pytestmark = pytest.mark.research  # the study's tests: `pytest -m research`


def _scene(blue_events: tuple[Event, ...] = ()) -> Scene:
    """A red circle that flashes twice: at 0.4-0.6 s (the 2 fps frame at 0.48 s falls inside) and 1.1-1.3 s
    (between the 2 fps frames at 1.0 and 1.48 s, on the 4 fps frame at 1.24 s); a blue square that acts as given."""
    red = WorldObject(
        shape="circle",
        colour="red",
        size="medium",
        x=0.3,
        y=0.5,
        motion="static",
        event_kind="flash",
        sound={"timbre": "sine", "f0": 110.0},
    )
    blue = WorldObject(
        shape="square",
        colour="blue",
        size="small",
        x=0.7,
        y=0.5,
        motion="left",
        event_kind="pulse",
        sound={"timbre": "square", "f0": 196.0} if blue_events else None,
    )
    return Scene(
        id="s",
        seed=0,
        index=0,
        duration=4.0,
        width=192,
        height=192,
        fps=25.0,
        sample_rate=16000,
        background="indoor",
        ambience="hum",
        objects=(red, blue),
        events=(
            Event(time=0.4, duration=0.2, object=0, kind="flash"),
            Event(time=1.1, duration=0.2, object=0, kind="flash"),
        )
        + blue_events,
    )


def _negative(scene: Scene, old: str, new: str, dimension: str) -> dict:
    positive = video_caption(scene)
    assert old in positive
    return {
        "id": f"{dimension}:{old}",
        "label": 0,
        "source_id": scene.id,
        "negative_type": dimension,
        "text": positive.replace(old, new),
        "params": {"detail": f"Changed '{old}' to '{new}'"},
    }


def test_the_judge_sees_the_frames_its_rate_picks():
    scene = _scene()
    # the frame on screen at k / 2 s: the world's 25 fps frames fall at 0.48 and 0.52 s around 0.5 s
    assert np.allclose(shown_times(scene, 2.0), np.floor(np.arange(8) / 2 * 25) / 25)
    assert events_caught(scene, 0, shown_times(scene, 2.0)) == (1, 2)
    assert events_caught(scene, 0, shown_times(scene, 4.0)) == (2, 2)


def test_an_event_count_is_told_only_when_every_event_is_caught_and_a_look_when_one_is():
    scene = _scene()
    world = {scene.id: {"scene": scene.to_dict(), "captions": {"video": video_caption(scene)}}}
    records = [
        _negative(scene, "twice", "three times", "counting"),  # the red circle's events
        _negative(scene, "flashes white", "hops upward", "motion"),
        _negative(scene, "Two shapes", "Three shapes", "counting"),
        _negative(scene, "indoor room", "outdoor room", "appearance"),
        {**_negative(scene, "red", "red", "positive"), "label": 1},
    ]
    assert caption_edits_told(records, world, 2.0) == [
        ("counting", "event count", False),
        ("motion", "event look", True),
        ("counting", "object count", True),
        ("appearance", "place", True),
    ]
    assert caption_edits_told(records[:1], world, 4.0) == [("counting", "event count", True)]


def test_an_edit_of_the_object_list_is_named_by_the_word_it_changes():
    """The scene shows a red circle and a blue square: a colour word changed to red is contradicted only by which
    object wears it, to green by the colours on screen alone."""
    scene = _scene()
    world = {scene.id: {"scene": scene.to_dict(), "captions": {"video": video_caption(scene)}}}
    edits = {
        ("small blue", "small red"): "object colour, on screen",
        ("small blue", "small green"): "object colour, none on screen",
        ("blue square that", "blue ring that"): "object shape",
        ("small blue", "large blue"): "object size",
        ("moves to the left", "moves upward"): "object path",
    }
    records = [_negative(scene, old, new, "appearance") for old, new in edits]
    assert [kind for _, kind, _ in caption_edits_told(records, world, 2.0)] == list(edits.values())


def test_a_swapped_order_is_told_when_every_actors_first_event_is_caught():
    caught_first = _scene((Event(time=2.0, duration=0.2, object=1, kind="pulse"),))  # on the 2.0 s frame
    missed_first = _scene((Event(time=2.1, duration=0.2, object=1, kind="pulse"),))  # between 2.0 and 2.48 s
    assert first_events_caught(caught_first, 0, shown_times(caught_first, 2.0))
    assert not first_events_caught(missed_first, 0, shown_times(missed_first, 2.0))
    positive = video_caption(caught_first)
    swapped = (
        positive.replace("red circle flashes", "X")
        .replace("blue square pulses", "red circle flashes")
        .replace("X", "blue square pulses")
    )
    record = {
        "id": "t",
        "label": 0,
        "source_id": "s",
        "negative_type": "temporal",
        "text": swapped,
        "params": {"detail": "Swapped the order of 'red circle' and 'blue square'"},
    }
    world = {"s": {"scene": caught_first.to_dict(), "captions": {"video": positive}}}
    assert caption_edits_told([record], world, 2.0) == [("temporal", "event order", True)]


def test_the_script_reads_a_worlds_pairs(tmp_path, small_world, monkeypatch, capsys):
    (tmp_path / "world").symlink_to(small_world)
    build_demo_pairs(small_world, tmp_path / "pairs", 60, tasks=("vt",))

    def dimension_rows(split: str) -> list[list[str]]:
        monkeypatch.setattr("sys.argv", ["vt_decidability.py", str(tmp_path), "--split", split, "--fps", "2", "25"])
        vt_decidability.main()
        lines = capsys.readouterr().out.splitlines()
        dimensions = lines[lines.index(next(line for line in lines if line.startswith("dimension "))) + 1 :]
        return [line.split() for line in dimensions[: dimensions.index("")]]

    rows = dimension_rows("train")
    assert rows and all(row[0] in {"appearance", "counting", "motion", "spatial", "temporal"} for row in rows)
    # every frame of the world at 25 fps: every edit can be told; the text-only classifier was fitted on these pairs
    assert all(row[-4:] == ["1.00", "/", "1.00", "n/a"] for row in rows)
    # held out: what the caption's words alone give away, per dimension: the dataset audit's figure for that type
    leak = text_leak(tmp_path / "pairs", "vt", "train", "test")["per_type"]
    held_out = dimension_rows("test")
    assert {row[0] for row in held_out} == set(leak)
    assert all(float(row[-1]) == pytest.approx(leak[row[0]], abs=0.005) for row in held_out)


def test_an_edit_whose_kind_cannot_be_read_counts_as_told_not_as_an_error():
    scene = _scene()
    world = {scene.id: {"scene": scene.to_dict(), "captions": {"video": video_caption(scene)}}}
    unchanged = {**_negative(scene, "red", "red", "appearance"), "id": "same"}
    # an event count whose sentence names no object of the scene before the changed words
    unnamed = {
        **_negative(scene, "The red circle flashes white twice", "It flashes white three times", "counting"),
        "params": {"detail": "Changed 'twice' to 'three times'"},
    }
    assert caption_edits_told([unchanged, unnamed], world, 2.0) == [
        ("appearance", "unknown", True),
        ("counting", "unknown", True),
    ]
