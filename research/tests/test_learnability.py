"""`research/learnability.py`: its batch drawing (epochs of shuffled examples, fresh random mismatches made by
giving one clip's prompt another clip's audio), and a probe run end to end on a tiny world."""

import random
from pathlib import Path

import numpy as np
import pytest

from avjudge.judges.adapters import PreparedSample
from avjudge.judges.tiny import AUDIO_DIR
from research import learnability
from research.decidability import EDIT_KINDS

pytestmark = pytest.mark.research  # the study's tests: `pytest -m research`


def clip_example(clip: int, answer: int, frames: int = 10) -> PreparedSample:
    """A stand-in prepared AV example: clip ``clip``'s media (every value its number), answered ``answer``."""
    return PreparedSample(
        input_ids=[clip, answer],
        pixel_values_videos=np.full((4, 3), clip),
        input_features=np.full((2, frames), clip),
        feature_attention_mask=np.ones(frames, int),
        labels=[-100, answer],
    )


def test_shuffled_batches_cover_every_example_once_per_epoch():
    batches = learnability.shuffled_batches(list(range(12)), 4, random.Random(0))
    epoch = [x for _ in range(3) for x in next(batches)]
    assert sorted(epoch) == list(range(12))
    assert sorted(x for _ in range(3) for x in next(batches)) == list(range(12))


def test_fresh_mismatches_hear_another_clip_and_answer_no():
    own = [clip_example(c, 1) for c in range(6)]
    answered_no = [clip_example(c, 0) for c in range(6)]
    batches = learnability.fresh_mismatch_batches(own, answered_no, 8, random.Random(0))
    pairs = set()
    for _ in range(50):
        batch = next(batches)
        assert [e.labels[1] for e in batch] == [1] * 4 + [0] * 4
        for example in batch[:4]:  # own audio
            assert example.input_features[0, 0] == example.pixel_values_videos[0, 0]
        for example in batch[4:]:  # another clip's audio with this clip's frames and prompt
            picture, sound = example.pixel_values_videos[0, 0], example.input_features[0, 0]
            assert picture != sound and example.input_ids[0] == picture
            pairs.add((picture, sound))
    assert len(pairs) > 20  # drawn afresh, not a fixed handful
    assert answered_no[0].input_features[0, 0] == 0  # the originals are left as they were


def test_fresh_mismatches_refuse_clips_of_different_lengths():
    with pytest.raises(ValueError, match="clips of one length"):
        learnability.with_audio_of(clip_example(0, 0, frames=10), clip_example(1, 1, frames=12))


def world_record(objects: list[tuple[str, dict | None]]) -> dict:
    return {"scene": {"objects": [{"colour": colour, "sound": sound} for colour, sound in objects]}}


def test_presence_reply_names_each_colour_and_pitched_note_once():
    record = world_record(
        [
            ("red", {"timbre": "sine", "f0": 110.0}),
            ("blue", {"timbre": "square", "f0": 196.2}),
            ("red", {"timbre": "sine", "f0": 110.0}),
            ("green", None),
            ("cyan", {"timbre": "noise_burst", "f0": 440.0}),
        ]
    )
    assert learnability.presence_reply(record, "av") == "I see blue cyan green red. I hear 110 196."
    assert learnability.presence_reply(record, "vt") == "I see blue cyan green red."
    assert learnability.presence_reply(world_record([("pink", None)]), "av") == "I see pink. I hear no note."


def test_positive_clips_keep_each_positive_clip_once():
    items = [
        (1, {"label": 1, "negative_type": "positive", "source_id": "a"}, "clip a"),
        (1, {"label": 1, "negative_type": "positive", "source_id": "a"}, "clip a"),
        (0, {"label": 0, "negative_type": "random_mismatch", "source_id": "b"}, "clip b with c's audio"),
        (1, {"label": 1, "negative_type": "positive", "source_id": "c"}, "clip c"),
    ]
    assert learnability.positive_clips(items) == [("a", "clip a"), ("c", "clip c")]


def test_the_probe_runs_on_the_demos_av_config(tmp_path):
    """The probe trains with the demo's AV config, whatever it sets (it redraws negatives, which restricts the
    training pool to the training split; the probe's held-out pairs still find their clips)."""
    pairs = learnability.make_pairs(tmp_path, clips=8, pairs=48, tasks={"av"})
    world = {r["id"]: r for r in learnability.read_jsonl(tmp_path / "world" / learnability.MANIFEST)}
    curve = learnability.run_probe(
        "random_mismatch", pairs, world, steps=2, every=2, overrides=["per_device_train_batch_size=2"], out=tmp_path
    )
    assert [step for step, *_ in curve] == [2]
    assert np.isfinite(curve[0][1])


def test_report_line_gives_the_answers_at_one_half_beside_the_ranking():
    # ranked well (AUROC 0.75) yet answered at chance: one positive and one negative on each side of 0.5
    measured = learnability.binary_metrics(np.array([0.9, 0.6, 0.4, 0.2]), np.array([1, 0, 1, 0]))
    line = learnability.report_line("probe", 500, 0.25, measured, {"event count": 0.5})
    assert "held-out AUROC 0.750  balanced accuracy 0.500  answers Yes 50%  event count 0.500" in line
    measured = learnability.binary_metrics(np.array([0.9, 0.7, 0.6, 0.2]), np.array([1, 1, 0, 0]))
    line = learnability.report_line("probe", 500, 0.25, measured, {})
    assert line.endswith("held-out AUROC 1.000  balanced accuracy 0.750  answers Yes 75%")


def test_object_phrases_name_an_object_of_the_clip_or_a_colour_it_lacks():
    scene = {
        "objects": [
            {"colour": "red", "size": "small", "shape": "circle"},
            {"colour": "blue", "size": "large", "shape": "ring"},
        ]
    }
    asked = [
        learnability._object_phrase({"id": f"p{i}", "label": 1, "negative_type": "positive", "text": "caption"}, scene)
        for i in range(40)
    ]
    shown = {"The video shows a small red circle.", "The video shows a large blue ring."}
    assert {r["text"] for r in asked if r["label"] == 1} == shown
    for record in (r for r in asked if r["label"] == 0):
        size, colour, shape = record["text"].removeprefix("The video shows a ").rstrip(".").split()
        assert colour not in ("red", "blue") and (size, shape) in {("small", "circle"), ("large", "ring")}
    assert 10 < sum(r["label"] for r in asked) < 30
    negative = {"id": "n", "label": 0, "negative_type": "appearance", "text": "caption"}
    assert learnability._object_phrase(negative, scene) is None


def test_sound_phrases_name_a_sound_of_the_clip_or_a_timbre_it_lacks():
    scene = {
        "objects": [
            {"sound": {"timbre": "sine", "f0": 110.0}},
            {"sound": {"timbre": "saw", "f0": 523.0}},
            {"sound": None},
        ]
    }
    asked = [
        learnability._sound_phrase({"id": f"p{i}", "label": 1, "negative_type": "positive", "text": "caption"}, scene)
        for i in range(40)
    ]
    heard = {"A low pure sine tone sounds.", "A high bright sawtooth tone sounds."}
    assert {r["text"] for r in asked if r["label"] == 1} == heard
    lacked = {r["text"] for r in asked if r["label"] == 0}
    assert 10 < sum(r["label"] for r in asked) < 30 and len(lacked) > 2
    for text in lacked:  # another timbre, never one the clip has; a noise burst has no pitch word
        assert "sine" not in text and "sawtooth" not in text
        assert text in ("A short noise burst sounds.",) or text.split()[1] in ("low", "high")
    assert (
        learnability._sound_phrase({"id": "q", "label": 1, "negative_type": "positive"}, {"objects": [{"sound": None}]})
        is None
    )  # a silent clip: nothing to ask
    assert learnability._sound_phrase({"id": "n", "label": 0, "negative_type": "degree"}, scene) is None


def test_a_first_probe_trains_the_judge_before_the_probe_asks_at_step_0(tmp_path):
    pairs = learnability.make_pairs(tmp_path, clips=8, pairs=48, tasks={"vt"})
    world = {r["id"]: r for r in learnability.read_jsonl(tmp_path / "world" / learnability.MANIFEST)}
    curve = learnability.run_probe(
        "caption_edits",
        pairs,
        world,
        steps=2,
        every=2,
        overrides=["per_device_train_batch_size=2"],
        out=tmp_path,
        first=(("object_phrase", 2), ("object_list", 1)),
    )
    assert [step for step, *_ in curve] == [0, 2]
    assert np.isnan(curve[0][1]) and np.isfinite(curve[1][1])
    # held-out AUROC per edited dimension, and per kind of edit (which words it changed)
    dimensions = {record["negative_type"] for record in learnability.load_pairs(pairs, "vt", "test")} - {"positive"}
    assert dimensions and dimensions <= set(curve[1][3])
    kinds = set(curve[1][3]) - dimensions
    assert kinds and kinds <= set(EDIT_KINDS)


def test_caption_colour_changes_one_objects_colour_at_every_mention_to_one_the_clip_lacks():
    scene = {
        "objects": [
            {"colour": "red", "size": "small", "shape": "circle"},
            {"colour": "blue", "size": "large", "shape": "ring"},
        ]
    }
    caption = "Two shapes: a small red circle and a large blue ring. The red circle flashes white twice."
    asked = [
        learnability._caption_colour({"id": f"p{i}", "label": 1, "negative_type": "positive", "text": caption}, scene)
        for i in range(40)
    ]
    assert all(r["text"] == caption for r in asked if r["label"] == 1)
    changed = [r["text"] for r in asked if r["label"] == 0]
    assert 10 < len(changed) < 30
    for text in changed:
        new_words = set(text.split()) - set(caption.split())
        assert len(new_words) == 1 and new_words.isdisjoint({"red", "blue", "white"})
        new = new_words.pop()
        # one object's name changed at each of its mentions, the other's kept
        assert (
            text.count(f"{new} circle") == 2
            and "blue ring" in text
            or text.count(f"{new} ring") == 1
            and text.count("red circle") == 2
        )


def test_object_lists_name_every_object_with_one_colour_changed_for_no():
    scene = {
        "objects": [
            {"colour": "red", "size": "small", "shape": "circle"},
            {"colour": "blue", "size": "large", "shape": "ring"},
            {"colour": "pink", "size": "small", "shape": "square"},
        ]
    }
    asked = [
        learnability._object_list({"id": f"p{i}", "label": 1, "negative_type": "positive"}, scene) for i in range(40)
    ]
    truth = "The video shows a small red circle, a large blue ring and a small pink square."
    assert {r["text"] for r in asked if r["label"] == 1} == {truth}
    no = [r["text"] for r in asked if r["label"] == 0]
    assert 10 < len(no) < 30
    for text in no:
        changed = [(a, b) for a, b in zip(truth.split(), text.split()) if a != b]
        assert len(changed) == 1 and changed[0][0] in ("red", "blue", "pink")
        assert changed[0][1] not in ("red", "blue", "pink")
    assert len({text for text in no}) > 3  # which object, and its new colour, vary


def test_a_mixed_probe_trains_on_both_probes_examples_and_decodes_each_pair_once(tmp_path, monkeypatch):
    pairs = learnability.make_pairs(tmp_path, clips=8, pairs=48, tasks={"vt"})
    world = {r["id"]: r for r in learnability.read_jsonl(tmp_path / "world" / learnability.MANIFEST)}
    pools = []
    shuffled = learnability.shuffled_batches
    monkeypatch.setattr(
        learnability, "shuffled_batches", lambda examples, *a: pools.append(examples) or shuffled(examples, *a)
    )
    decoded = []
    getitem = learnability.PairDataset.__getitem__
    # the dataset itself, not its id: a dataset freed before the next is made can hand its id on, and two datasets'
    # items then looked like one item decoded twice
    monkeypatch.setattr(
        learnability.PairDataset, "__getitem__", lambda self, i: decoded.append((self, i)) or getitem(self, i)
    )
    for mix in (None, "object_list"):
        decoded.clear()
        learnability.run_probe(
            "caption_edits",
            pairs,
            world,
            steps=1,
            every=1,
            overrides=["per_device_train_batch_size=2"],
            out=tmp_path,
            mix=mix,
            first=(("object_phrase", 1),),
        )
        assert len(decoded) == len(set(decoded))  # the probe, its stage and its mix decode each pair once
    train = learnability.load_pairs(pairs, "vt", "train")
    positives = sum(r["negative_type"] == "positive" for r in train)
    # stage pools first, then the probe's: a list per positive record joins it with the mix
    assert [len(pool) for pool in pools] == [positives, len(train), positives, len(train) + positives]


def test_curriculum_stages_are_given_as_probe_and_steps():
    assert learnability.stage_argument("object_list:4000") == ("object_list", 4000)
    for bad in ("object_list", "object_list:0", "nowhere:10", "object_list:ten"):
        with pytest.raises(learnability.argparse.ArgumentTypeError, match="PROBE:N"):
            learnability.stage_argument(bad)


def test_at_probes_train_the_tiny_qwen2_audio_judge(tmp_path, monkeypatch):
    pairs = learnability.make_pairs(tmp_path, clips=8, pairs=48, tasks={"at"})
    world = {r["id"]: r for r in learnability.read_jsonl(tmp_path / "world" / learnability.MANIFEST)}
    models = []
    build = learnability.build_training
    monkeypatch.setattr(learnability, "build_training", lambda config: models.append(config.model) or build(config))
    curve = learnability.run_probe(
        "at_caption_edits", pairs, world, steps=2, every=2, overrides=["per_device_train_batch_size=2"], out=tmp_path
    )
    assert [Path(model).name for model in models] == [AUDIO_DIR]
    dimensions = {record["negative_type"] for record in learnability.load_pairs(pairs, "at", "test")} - {"positive"}
    assert len(dimensions) > 1 and dimensions <= set(curve[0][3])  # held-out AUROC per edited dimension
