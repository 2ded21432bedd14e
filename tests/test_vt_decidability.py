"""benchmarks/vt_decidability.py: which VT caption edits the judge's sampled frames can tell, on a hand-made scene
whose events fall between or on the frames, and the script on a world's pairs."""
import importlib.util
from pathlib import Path

import numpy as np

from avjudge.demo import build_demo_pairs
from avjudge.world.captions import video_caption
from avjudge.world.scene import Event, Scene, WorldObject

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "vt_decidability.py"
spec = importlib.util.spec_from_file_location("vt_decidability", SCRIPT)
vt_decidability = importlib.util.module_from_spec(spec)
spec.loader.exec_module(vt_decidability)


def _scene() -> Scene:
    """A red circle that flashes twice: at 0.4-0.6 s (the 2 fps frame at 0.48 s falls inside) and 1.1-1.3 s
    (between the 2 fps frames at 1.0 and 1.48 s, on the 4 fps frame at 1.24 s); a blue square that never acts."""
    red = WorldObject(shape="circle", colour="red", size="medium", x=0.3, y=0.5, motion="static", event_kind="flash",
                      sound={"timbre": "sine", "f0": 110.0})
    blue = WorldObject(shape="square", colour="blue", size="small", x=0.7, y=0.5, motion="left", event_kind="pulse",
                       sound=None)
    return Scene(id="s", seed=0, index=0, duration=4.0, width=192, height=192, fps=25.0, sample_rate=16000,
                 background="indoor", ambience="hum", objects=(red, blue),
                 events=(Event(time=0.4, duration=0.2, object=0, kind="flash"),
                         Event(time=1.1, duration=0.2, object=0, kind="flash")))


def _negative(scene: Scene, old: str, new: str, dimension: str) -> dict:
    positive = video_caption(scene)
    assert old in positive
    return {"id": f"{dimension}:{old}", "label": 0, "source_id": scene.id, "negative_type": dimension,
            "text": positive.replace(old, new), "params": {"detail": f"Changed '{old}' to '{new}'"}}


def test_the_judge_sees_the_frames_its_rate_picks():
    scene = _scene()
    # the frame on screen at k / 2 s: the world's 25 fps frames fall at 0.48 and 0.52 s around 0.5 s
    assert np.allclose(vt_decidability.seen_times(scene, 2.0), np.floor(np.arange(8) / 2 * 25) / 25)
    assert vt_decidability.events_caught(scene, 0, vt_decidability.seen_times(scene, 2.0)) == (1, 2)
    assert vt_decidability.events_caught(scene, 0, vt_decidability.seen_times(scene, 4.0)) == (2, 2)


def test_an_event_count_is_told_only_when_every_event_is_caught_and_a_look_when_one_is():
    scene = _scene()
    world = {scene.id: {"scene": scene.to_dict(), "captions": {"video": video_caption(scene)}}}
    records = [_negative(scene, "twice", "three times", "counting"),   # the red circle's events
               _negative(scene, "flashes white", "hops upward", "motion"),
               _negative(scene, "Two shapes", "Three shapes", "counting"),
               _negative(scene, "small blue", "small green", "appearance"),
               _negative(scene, "indoor room", "outdoor room", "appearance"),
               {**_negative(scene, "red", "red", "positive"), "label": 1}]
    at_2 = vt_decidability.decidability(records, world, 2.0)
    assert at_2 == [("counting", "event count", False), ("motion", "event look", True),
                    ("counting", "objects", True), ("appearance", "objects", True), ("appearance", "place", True)]
    assert vt_decidability.decidability(records[:1], world, 4.0) == [("counting", "event count", True)]
    by_dimension = vt_decidability.ceilings(at_2, lambda dimension, kind: dimension)
    assert by_dimension == {"appearance": (2, 1.0), "counting": (2, 0.5), "motion": (1, 1.0)}


def test_the_script_reads_a_worlds_pairs(tmp_path, small_world, monkeypatch, capsys):
    (tmp_path / "world").symlink_to(small_world)
    build_demo_pairs(small_world, tmp_path / "pairs", 60, tasks=("vt",))
    monkeypatch.setattr("sys.argv", ["vt_decidability.py", str(tmp_path), "--split", "train", "--fps", "2", "25"])
    vt_decidability.main()
    lines = capsys.readouterr().out.splitlines()
    dimensions = lines[lines.index(next(line for line in lines if line.startswith("dimension "))) + 1:]
    rows = [line.split() for line in dimensions[:dimensions.index("")]]
    assert rows and all(row[0] in {"appearance", "counting", "motion", "spatial", "temporal"} for row in rows)
    # every frame of the world at 25 fps: every edit can be told
    assert all(row[-3:] == ["1.00", "/", "1.00"] for row in rows)
