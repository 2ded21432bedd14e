"""`research/shift_margin.py`: how far a shift moves a clip's sounding events off their pictures at the judge's grid,
and the script run on a quick demo's output."""

import pytest

from avjudge.cli import main as avjudge
from avjudge.data.perceivability import Event
from avjudge.sampling import sampling
from research import shift_margin

pytestmark = pytest.mark.research  # the study's tests: `pytest -m research`


def test_a_shift_onto_the_clips_other_events_has_no_margin_and_one_into_silence_has():
    grid = sampling("sync")  # 8 fps, two frames a group: a 0.25 s grid
    beats = [Event(t, t + 0.2) for t in (0.5, 1.5, 2.5, 3.5)]  # an event every second
    assert shift_margin.margin(grid, 0.0, 4.0, beats, 1.0) == pytest.approx(1 / 16)  # the last beat leaves the window
    # each sound in a silent gap: 4 pictures without their sound, 3 sounds without a picture (the last leaves)
    assert shift_margin.margin(grid, 0.0, 4.0, beats, 0.5) == pytest.approx(7 / 16)
    assert shift_margin.margin(grid, 0.0, 4.0, beats, 0.0) == 0.0


def test_the_script_reads_a_demo_run(tmp_path, tiny_judges, monkeypatch, capsys):
    cache = tiny_judges["qwen2_5_omni"].parent.parent
    assert avjudge(["demo", "--out", str(tmp_path), "--quick", "--judges", "av", "--cache", str(cache)]) == 0
    capsys.readouterr()
    monkeypatch.setattr("sys.argv", ["shift_margin.py", str(tmp_path)])
    shift_margin.main()
    lines = capsys.readouterr().out.splitlines()
    assert "held-out positives" in lines[0] and lines[1].split()[:2] == ["negatives", "pairs"]
    assert any(line.startswith("time_shift_") for line in lines[2:])
