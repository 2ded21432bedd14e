"""The demo's targets (read from the evaluations before and after training, never assumed met)."""

import json

import pytest

from avjudge.world import MANIFEST
from research.demo_targets import (
    TARGETS,
    check_targets,
    random_mismatch_reading,
    random_mismatch_why,
    target_lines,
)

pytestmark = pytest.mark.research  # the study's tests: `pytest -m research`


def _evaluation(**balanced_accuracy):
    return {"per_type": {kind: {"balanced_accuracy": value} for kind, value in balanced_accuracy.items()}}


def test_targets_are_met_only_by_trained_figures_at_or_above_the_bar_from_chance():
    results = {
        "av": {
            "eval_before": _evaluation(random_mismatch=0.52, time_shift_medium=0.75),
            "eval_after": _evaluation(random_mismatch=0.9, time_shift_medium=0.95),
        },
        "vt": {
            "eval_before": _evaluation(appearance=0.5, counting=0.5, motion=0.45),
            "eval_after": _evaluation(appearance=0.89, counting=None, motion=0.91),
        },
    }
    rows = {(row["judge"], row["negative_type"]): row for row in check_targets(results)}
    assert len(rows) == len(TARGETS) == 5
    assert rows["av", "random_mismatch"]["met"] and rows["av", "random_mismatch"]["untrained_at_chance"]
    # met, though the untrained judge already knew something: both are reported
    assert rows["av", "time_shift_medium"]["met"] and not rows["av", "time_shift_medium"]["untrained_at_chance"]
    assert not rows["vt", "appearance"]["met"]
    assert not rows["vt", "counting"]["met"] and rows["vt", "counting"]["after"] is None
    assert rows["vt", "motion"]["met"]
    lines = target_lines(list(rows.values()))
    assert lines[0].startswith("targets") and "3 of 5 met" in lines[0]
    assert not any("frames allow" in line for line in lines)  # no ceilings given
    ceilings = {("vt", "appearance"): 1.0, ("vt", "motion"): 0.96, ("vt", "counting"): 0.75}
    rows = {(row["judge"], row["negative_type"]): row for row in check_targets(results, ceilings)}
    assert rows["vt", "motion"]["ceiling"] == 0.96 and rows["av", "random_mismatch"]["ceiling"] is None
    # said only where the frames keep a target out of reach
    assert [line.split()[1] for line in target_lines(list(rows.values())) if "frames allow at most" in line] == [
        "counting"
    ]
    assert any("counting" in line and "n/a" in line and "no held-out negatives" in line for line in lines)
    assert any("time_shift_medium" in line and "untrained not at chance" in line for line in lines)


def test_a_missed_target_says_why_and_shows_its_learning_curve_and_a_met_one_neither():
    results = {
        "av": {
            "eval_before": _evaluation(random_mismatch=0.5, time_shift_medium=0.5),
            "eval_after": _evaluation(random_mismatch=0.74, time_shift_medium=0.99),
            "curves": {
                "random_mismatch": [[0, 0.5], [100, 0.61], [200, 0.74]],
                "time_shift_medium": [[0, 0.5], [200, 0.99]],
            },
        }
    }
    why = {("av", "random_mismatch"): "the ambience alone", ("av", "time_shift_medium"): "the silence"}
    lines = target_lines(check_targets(results, why=why))
    missed = lines.index(next(line for line in lines if "random_mismatch" in line))
    assert lines[missed + 1].strip() == "the ambience alone"
    assert lines[missed + 2].strip().endswith("0:0.50 100:0.61 200:0.74")
    assert not any("the silence" in line or "0:0.50 200:0.99" in line for line in lines)  # met: neither


def _write_jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_random_mismatches_are_split_by_whether_their_ambience_gives_them_away(tmp_path):
    scenes = {
        "room": ("indoor", "hum"),
        "cafe": ("indoor", "babble"),
        "field": ("outdoor", "rain"),
        "quiet": ("outdoor", "none"),
    }
    _write_jsonl(
        tmp_path / "world" / MANIFEST,
        [{"id": k, "scene": {"background": b, "ambience": a}} for k, (b, a) in scenes.items()],
    )

    def pair(i, source, partner=None):
        return {
            "id": f"p{i}",
            "source_id": source,
            "label": int(partner is None),
            "strategy": "random_mismatch" if partner else "positive",
            "params": {"source": partner} if partner else {},
            "dimension": "av",
            "media": {"video": f"{source}.mp4"},
        }

    # a room's picture with rain (given away) or a cafe's murmur (plausible indoors); a field's with a hum (given
    # away) or a clip without ambience (plausible anywhere)
    pairs = [
        pair(0, "room"),
        pair(1, "room", "field"),
        pair(2, "room", "cafe"),
        pair(3, "field", "room"),
        pair(4, "field", "quiet"),
        pair(5, "cafe", "room"),
        pair(6, "quiet", "field"),
    ]
    _write_jsonl(tmp_path / "pairs" / "pairs" / "av" / "test.jsonl", pairs)
    scores = {"p0": 0.9, "p1": 0.1, "p2": 0.8, "p3": 0.7, "p4": 0.2, "p5": None, "p6": 0.6}
    reading = random_mismatch_reading(tmp_path, scores)
    # given away: p1, p3; plausible: p2, p4, p5 (its score failed: no answer), p6 (rain in a field without ambience)
    assert reading["given_away"] == pytest.approx(2 / 6)
    assert reading["ambience_alone"] == pytest.approx((1 + 2 / 6) / 2)
    assert reading["turned_away_given_away"] == 0.5  # p1 turned away, p3 accepted
    assert reading["turned_away_rest"] == pytest.approx(1 / 3)  # p4 of p2, p4, p6
    text = random_mismatch_why(reading)
    assert text.startswith("33% of them") and "reaches 0.67" in text
    assert "turns away 50% of those and 33% of the rest" in text
    only_given_away = random_mismatch_why(
        reading | {"given_away": 1.0, "ambience_alone": 1.0, "turned_away_rest": None}
    )
    assert only_given_away.endswith("turns away 50% of those")


def test_targets_of_judges_not_run_and_types_not_built_are_left_out_or_unmet():
    results = {"av": {"eval_before": _evaluation(filter=0.5), "eval_after": _evaluation(filter=0.99)}}
    rows = check_targets(results)
    assert [row["negative_type"] for row in rows] == ["random_mismatch", "time_shift_medium"]
    assert not any(row["met"] or row["untrained_at_chance"] for row in rows)
    assert "0 of 2 met" in target_lines(rows)[0]
    assert check_targets({"at": results["av"]}) == [] and target_lines([]) == []  # the AT judge has no target
