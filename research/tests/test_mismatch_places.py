"""`research/mismatch_places.py`: random mismatches grouped by whether their audio's ambience fits the picture's place,
and the script run on a quick demo's output."""

import pytest

from avjudge.cli import main as avjudge
from research import mismatch_places

pytestmark = pytest.mark.research  # the study's tests: `pytest -m research`


def test_random_mismatches_are_grouped_by_whether_their_ambience_fits_the_place():
    scenes = {
        "a": {"background": "indoor", "ambience": "hum"},
        "b": {"background": "indoor", "ambience": "babble"},
        "c": {"background": "outdoor", "ambience": "rain"},
        "d": {"background": "outdoor", "ambience": "none"},
    }
    records = [
        {"label": 1, "strategy": "positive", "source_id": "a", "params": {}},
        {"label": 0, "strategy": "random_mismatch", "source_id": "a", "params": {"source": "b"}},
        {"label": 0, "strategy": "random_mismatch", "source_id": "c", "params": {"source": "a"}},
        {"label": 0, "strategy": "time_shift_medium", "source_id": "c", "params": {"shift": 1.5}},
        {"label": 0, "strategy": "random_mismatch", "source_id": "b", "params": {"source": "d"}},
    ]
    # a cafe's murmur in a room fits; a hum in the rain does not; a clip without ambience fits anywhere
    assert mismatch_places.mismatch_groups(records, scenes) == {
        "positives": [0],
        "random mismatch, ambience fits the place": [1, 4],
        "random mismatch, ambience the place cannot have": [2],
    }


def test_training_positives_are_one_per_clip():
    records = [
        {"label": 1, "source_id": "a", "id": 0},
        {"label": 0, "source_id": "b", "id": 1},
        {"label": 1, "source_id": "a", "id": 2},
        {"label": 1, "source_id": "b", "id": 3},
        {"label": 1, "source_id": "c", "id": 4},
    ]
    assert [r["id"] for r in mismatch_places.one_positive_per_clip(records, 5)] == [0, 3, 4]
    assert [r["id"] for r in mismatch_places.one_positive_per_clip(records, 2)] == [0, 3]


def test_the_script_reads_a_demo_run(tmp_path, tiny_judges, monkeypatch, capsys):
    cache = tiny_judges["qwen2_5_omni"].parent.parent
    assert avjudge(["demo", "--out", str(tmp_path), "--quick", "--judges", "av", "--cache", str(cache)]) == 0
    capsys.readouterr()
    monkeypatch.setattr("sys.argv", ["mismatch_places.py", str(tmp_path), "--train-positives", "4"])
    mismatch_places.main()
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("  n ")[0].strip() for line in lines] == [
        "held-out positives",
        "training positives",
        "random mismatch, ambience fits the place",
        "random mismatch, ambience the place cannot have",
    ]
    assert "n    4  accepted" in lines[1]
