"""The AVI-Bench suite: every task metric against values worked by hand, double confirmation, a release converted
and scored end to end (levels from the report), the authors' prediction layout, and bad inputs with clear errors.

The release here is a handful of items written by the test in the task files' format; AVI-Bench's own data is
never in the repository."""

from __future__ import annotations

import io
import json
import math
import wave
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from avjudge.cli import main
from avjudge.data.questions import QuestionError, load_questions, write_questions
from avjudge.judges.choice import check_answerable
from avjudge.omni import SuiteError, get_suite
from avjudge.omni.answer import Endpoint
from avjudge.omni.base import read_answer_jsonl
from avjudge.omni.benchmarks.avibench.levels import TASKS, levels
from avjudge.omni.benchmarks.avibench.measures import (
    CAPTION_SCORERS,
    Captioning,
    Counting,
    Instances,
    Retrieval,
    fense,
    frame_iou,
    full_match,
    literal,
    set_match,
)

from .helpers import RecordingServer

# ---- metrics by hand ------------------------------------------------------------------------------------------------


def test_structured_answers_are_read_as_literals_only():
    assert literal('```json\n{"dog": 2}\n```') == {"dog": 2}
    assert literal("Sure. answer={'dog': 2, 'cat': 1}") == {"dog": 2, "cat": 1}
    assert literal("answer={'frame_0': null}") == {"frame_0": None}
    assert literal("__import__('os').system('true')") is None
    assert literal("no idea") is None


def test_multiple_choice_reads_the_earliest_whole_option_or_the_first_number():
    yes_no = ["yes", "no", "not sure"]
    assert full_match("Yes, the dog is barking.", "yes", yes_no)
    assert not full_match("I am not sure; maybe yes.", "yes", yes_no)  # "not sure" comes first
    assert not full_match("Nobody knows.", "no", yes_no)  # "no" is not a word of "Nobody"
    assert full_match("I count 3 drums.", "3", [])
    assert not full_match("three drums", "3", [])
    assert full_match("**Cube**", "Cube", ["Cone", "Cube"])


def test_avsqa_sets_match_in_any_order_and_case():
    assert set_match("#Red; cube#", "cube;red")
    assert not set_match("#red#", "cube;red")
    assert not set_match("red;cube;cone", "cube;red")
    with pytest.raises(SuiteError, match="';'-separated"):
        set_match("red", ["red", "cube"])


def test_amic_counting_by_hand():
    items = [
        ("answer={'dog': 2, 'bird': 1}", {"dog": 2, "cat": 1}),  # F1 of {dog,bird} vs {dog,cat} = 0.5; E = (0+7)/2
        ("no idea", {"man": 1}),  # nothing read: semantic 0, E = the gold count 1
    ]
    result = Counting(recall_only=False, missing=7)(items)
    counting = 1 - math.tanh(0.3 * math.sqrt((3.5**2 + 1**2) / 2))
    assert result["semantic"] == pytest.approx(0.25)
    assert result["counting"] == pytest.approx(counting)
    assert result["score"] == pytest.approx((0.25 + counting) / 2)


def test_vmic_is_recall_over_gold_categories_and_saturates_at_ten():
    result = Counting(recall_only=True, missing=12, saturates_at=10)(
        [("{'cat': 12, 'tree': 1, 'sky': 1}", {"cat": 15, "tree": 1})]
    )
    assert result["semantic"] == 1.0  # extra categories cost nothing under recall
    assert result["counting"] == 1.0  # 12 against 15: both past ten, no error
    nothing = Counting(recall_only=True, missing=12)([("{'sky': 1}", {"cat": 1})])
    assert nothing["semantic"] == 0.0 and nothing["counting"] == 0.0  # no category right: no counting credit


def test_avl_matches_instances_greedily_within_their_category():
    gold = {
        "bbox": {"dog_1": [0, 0, 50, 50], "dog_2": [50, 50, 50, 50], "cat_1": [0, 50, 10, 10]},
        "original_wh": [100, 100],
    }
    answer = "answer={'dog_1': [0.5, 0.5, 1.0, 1.0], 'dog_2': [0, 0, 250, 500], 'bird_1': [0, 0, 1, 1]}"  # 0-1000 grid
    result = Instances()([(answer, gold)])
    # gold dog_1 takes predicted dog_2 (IoU 0.5), gold dog_2 predicted dog_1 (IoU 1), cat_1 is unmatched
    assert result["miou"] == pytest.approx(1.5 / 3)
    assert result["instance"] == pytest.approx(1 - math.tanh(1.0))  # one unmatched instance: RMSE 1
    assert result["score"] == pytest.approx(0.7 * 0.5 + 0.3 * (1 - math.tanh(1.0)))
    assert Instances()([("not a dict", gold)])["score"] == 0.0


def test_retrieval_recall_f1_confidence_and_repeat_penalty():
    items = [("[2, 0]", [0, 1]), ("1", [1]), ("0 1 2 3 4 5 6 7", [3])]
    result = Retrieval()(items)
    confidence = (1 + 1 + 0.3) / 3  # the third names more than six candidates
    assert result["repeat_penalty"] == 1.0
    assert result["recall@1"] == pytest.approx(1 / 3 * confidence)
    assert result["recall@3"] == pytest.approx(2 / 3 * confidence)
    assert result["f1"] == pytest.approx((0.5 + 1 + 2 / 9) / 3 * confidence)
    r1, r3, f1 = result["recall@1"], result["recall@3"], result["f1"]
    assert result["score"] == pytest.approx(((r1 + r3) / 2 + f1) / 2)
    repeated = Retrieval()([("[0]", [0])] * 10)  # nine of ten repeat: r = 0.9, penalty 1 - (0.9 - 0.8)
    assert repeated["repeat_penalty"] == pytest.approx(0.9) and repeated["score"] == pytest.approx(0.9)


def test_avlg_per_frame_iou_with_absent_frames():
    gold = {
        "bbox": {"frame_0": [0, 0, 10, 10], "frame_1": None, "frame_2": [0, 0, 10, 10], "frame_3": None},
        "original_wh": [20, 20],
    }
    answer = "answer={'frame_0': [0, 0, 0.5, 0.5], 'frame_1': None, 'frame_2': None, 'frame_3': [0, 0, 1, 1]}"
    assert frame_iou([(answer, gold)])["score"] == pytest.approx((1 + 1 + 0 + 0) / 4)
    assert frame_iou([("garbage", gold)])["score"] == pytest.approx(0.5)  # both absent frames agree with no answer
    with pytest.raises(SuiteError, match="original_wh"):
        frame_iou([("{}", {"frame_0": [0, 0, 1, 1]})])


def _exact_caption(captions, references):
    return [float(c in refs) for c, refs in zip(captions, references)]


def test_captioning_goes_through_the_scorer_interface(monkeypatch):
    monkeypatch.setitem(CAPTION_SCORERS, "exact", _exact_caption)
    result = Captioning("exact")([("a dog barks", ["a dog barks", "barking"]), ("a cat", "a dog barks")])
    assert result["score"] == 0.5
    with pytest.raises(SuiteError, match="unknown caption scorer"):
        Captioning("nope")([("a", ["a"])])
    try:
        import aac_metrics  # noqa: F401
    except ImportError:
        with pytest.raises(SuiteError, match="pip install aac-metrics"):
            fense(["a dog"], [["a dog"]])


# ---- a release written in the task files' format ---------------------------------------------------------------------

STAGE = {
    "ASQA": "sensation",
    "VSQA_I": "sensation",
    "VSQA_V": "sensation",
    "AVSQA": "sensation",
    "AMIC": "perception",
    "VMIC": "perception",
    "AVL": "perception",
    "AVM": "perception",
    "VAR": "understand",
    "AVR": "understand",
    "AVC": "understand",
    "AVH": "reasoning",
    "VAH": "reasoning",
    "AVQA": "reasoning",
    "AVLG": "reasoning",
}
BOX = {"bbox": {"dog_1": [0, 0, 50, 50]}, "original_wh": [100, 100]}
FRAMES = {"bbox": {"frame_0": [0, 0, 10, 10], "frame_1": None}, "original_wh": [20, 20]}
# task -> (options key, gold, a right answer)
ITEMS = {
    "ASQA": ("options_sound_clarity", "first", "The first one."),
    "VSQA_I": ("get_from_color", "red", "red"),
    "VSQA_V": ("what_shape", "Cube", "It is a cube."),
    "AVSQA": ("avsqa_options_list_color", "red;cube", "#cube; red#"),
    "AMIC": ("amic_cls_list", {"dog": 2}, "answer={'dog': 2}"),
    "VMIC": ("vmic_cls_list", {"cat": 1}, "answer={'cat': 1}"),
    "AVL": (None, BOX, "answer={'dog_1': [0, 0, 0.5, 0.5]}"),
    "AVM": ("avm_options_list", "yes", "yes"),
    "VAR": (None, [0, 2], "[0, 2]"),
    "AVR": (None, [1], "[1]"),
    "AVC": (None, ["a dog barks"], "a dog barks"),
    "AVH": ("avh_options_list", "no", "No."),
    "VAH": ("vah_options_list", "yes", "Yes."),
    "AVQA": (None, "2", "There are 2 instruments."),
    "AVLG": (None, FRAMES, "answer={'frame_0': [0, 0, 0.5, 0.5], 'frame_1': None}"),
}
CHECKED = ("ASQA", "VSQA_I", "AVSQA")  # tasks whose items come with a presence check


def _entry(task, item_id, options, gold, text=None):
    text = text or f"Which one ({task})?"
    return {
        "id": item_id,
        "task": task,
        "input": {
            "question": {"prompt": None, "text": text, "options": options},
            "audio_list": ["./input/wavs/a.wav"],
            "image_list": ["./input/images/0.jpg"],
        },
        "output": {"question_answer": gold},
    }


def write_release(root: Path) -> Path:
    for task, (options, gold, _) in ITEMS.items():
        entries = [_entry(task, "00000", options, gold)]
        if task in CHECKED:
            entries.append(_entry(task, "pre_00000", "options_yes_no", "yes", "Can you perceive anything?"))
        folder = root / "levels" / STAGE[task] / task
        folder.mkdir(parents=True)
        (folder / "data.json").write_text(json.dumps(entries))
    return root / "levels"


def right_answers(questions, model="omni"):
    """Each item answered right; checks answered yes."""
    rows = []
    for q in questions:
        task = q.extra["release_task"]
        rows.append({"id": q.id, "model": model, "response": "yes" if q.groups["role"] == "check" else ITEMS[task][2]})
    return rows


def _jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_release_converts_with_its_checks_and_vocabulary(tmp_path):
    suite = get_suite("avibench")
    levels_dir = write_release(tmp_path)
    avqa = levels_dir / "reasoning" / "AVQA" / "data.json"
    avqa.write_text(
        json.dumps(
            [
                _entry("AVQA", "7", "avqa_options_list_is", "yes"),
                _entry("AVQA", "7", None, "2"),  # ids repeat in AVQA: positions tell items apart
                _entry("AVQA", "pre_9", "options_yes_no", "yes"),  # a check with no item of its id
                {**_entry("AVQA", "pre_7", "options_yes_no", None)},  # an empty check, as the release has some
            ]
        )
    )
    questions = suite.convert(levels_dir, media_root=tmp_path / "media")
    by_id = {q.id: q for q in questions}
    assert by_id["AVQA-0"].extra["release_id"] == by_id["AVQA-1"].extra["release_id"] == "7"
    assert by_id["AVQA-0"].extra["choices"] == ["yes", "no", "not sure"] and by_id["AVQA-1"].extra["choices"] == []
    assert "AVQA-2" not in by_id and "AVQA-3" not in by_id
    assert any("pre_9" in n for n in suite.notes) and any(
        "empty check" in n or "no question or answer" in n for n in suite.notes
    )
    asqa = by_id["ASQA-0"]
    assert asqa.extra["check"] == "ASQA-1" and by_id["ASQA-1"].groups["role"] == "check"
    assert asqa.groups == {"task": "ASQA", "stage": "sensation", "role": "formal"}
    assert by_id["VSQA_V-0"].groups["task"] == "VSQA"  # the two halves are one task
    assert asqa.media == str(tmp_path / "media" / "input" / "wavs" / "a.wav")
    assert asqa.extra["inputs"] == [str(tmp_path / "media" / "input" / "images" / "0.jpg")]
    assert "Available options are: first, last, same, not sure." in asqa.prompt
    assert "answer={'category': count" in by_id["AMIC-0"].prompt and "hair-dryer" in by_id["AMIC-0"].prompt
    # written and read back as avjudge questions, gold of any shape included
    write_questions(questions, tmp_path / "q.jsonl")
    again = {q.id: q for q in load_questions(tmp_path / "q.jsonl")}
    assert again["AVL-0"].answer == BOX and again["AVL-0"].is_open and again["ASQA-0"].extra["check"] == "ASQA-1"


def test_bad_release_files_fail_naming_the_file(tmp_path):
    suite = get_suite("avibench")
    bad = tmp_path / "data.json"
    bad.write_text(json.dumps([_entry("AVXX", "0", None, "yes")]))
    with pytest.raises(SuiteError, match=r"data.json\[0\]: unknown AVI-Bench task 'AVXX'"):
        suite.convert(bad)
    bad.write_text(json.dumps({"items": []}))
    with pytest.raises(SuiteError, match="must be a JSON list"):
        suite.convert(bad)
    (tmp_path / "empty").mkdir()
    with pytest.raises(SuiteError, match="no AVI-Bench task file"):
        suite.convert(tmp_path / "empty")


@pytest.fixture
def converted(tmp_path, monkeypatch):
    monkeypatch.setitem(CAPTION_SCORERS, "exact", _exact_caption)
    monkeypatch.setattr(type(get_suite("avibench")), "caption_scorer", "exact")
    suite = get_suite("avibench")
    questions = suite.convert(write_release(tmp_path), tmp_path)
    write_questions(questions, tmp_path / "q.jsonl")
    return suite, questions


def test_right_answers_score_full_marks_and_give_the_levels(converted, tmp_path, capsys):
    suite, questions = converted
    answers = _jsonl(tmp_path / "a.jsonl", right_answers(questions))
    out = tmp_path / "report"
    assert (
        main(
            [
                "bench",
                "score",
                "--suite",
                "avibench",
                "--input",
                str(answers),
                "--questions",
                str(tmp_path / "q.jsonl"),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    report = json.loads((out / "report.json").read_text())["models"]["omni"]
    assert set(report["scores"]) == set(TASKS) and all(s == pytest.approx(100) for s in report["scores"].values())
    assert report["levels"]["L4"] == pytest.approx(100)
    assert "| omni |" in (out / "report.md").read_text()
    assert (
        main(["omni", "avibench", "levels", "--input", str(out / "report.json"), "--out", str(tmp_path / "l.csv")]) == 0
    )
    assert "L4 100.00" in capsys.readouterr().out


def test_double_confirmation_zeroes_an_item_whose_check_fails(converted, tmp_path):
    suite, questions = converted
    rows = right_answers(questions)
    for row in rows:
        if row["id"] == "ASQA-1":
            row["response"] = "No, nothing."  # the presence check answered wrong
        if row["id"] == "VAR-0":
            row["response"] = "[1]"
    report = suite.score(read_answer_jsonl(_jsonl(tmp_path / "a.jsonl", rows)), questions)["models"]["omni"]
    asqa = report["tasks"]["ASQA"]
    assert asqa["score"] == 0.0 and asqa["unconfirmed_score"] == 1.0 and asqa["checks_failed"] == 1
    assert report["tasks"]["VAR"]["score"] == 0.0
    assert report["levels"] == levels(report["scores"])


def test_without_fense_avc_is_left_unscored_and_the_levels_say_why(converted, tmp_path, monkeypatch):
    suite, questions = converted

    def no_weights(captions, references):
        raise SuiteError("AVC is scored by FENSE, which needs aac-metrics and its weights")

    monkeypatch.setitem(CAPTION_SCORERS, "exact", no_weights)
    report = suite.score(read_answer_jsonl(_jsonl(tmp_path / "a.jsonl", right_answers(questions))), questions)
    block = report["models"]["omni"]
    assert block["tasks"]["AVC"]["score"] is None and "aac-metrics" in block["tasks"]["AVC"]["why"]
    assert block["levels"] is None and block["levels_missing"] == ["AVC"]
    assert any("AVC not scored" in line for line in suite.summary(report))


def test_a_prediction_list_shorter_than_its_task_is_an_error(converted, tmp_path):
    suite, questions = converted
    rows = [r for r in right_answers(questions) if r["id"] != "ASQA-1"]
    with pytest.raises(SuiteError, match=r"answered 1 of the 2 ASQA items \(no answer for ASQA-1\)"):
        suite.score(read_answer_jsonl(_jsonl(tmp_path / "a.jsonl", rows)), questions)
    partial = [r for r in right_answers(questions) if not r["id"].startswith("AVLG")]  # a whole task left out is fine
    block = suite.score(read_answer_jsonl(_jsonl(tmp_path / "b.jsonl", partial)), questions)["models"]["omni"]
    assert "AVLG" not in block["tasks"] and block["levels_missing"] == ["AVLG"]


def test_malformed_gold_names_the_question(converted, tmp_path):
    suite, questions = converted
    questions = [replace(q, answer=["red", "cube"]) if q.id == "AVSQA-0" else q for q in questions]
    with pytest.raises(SuiteError, match=r"question AVSQA-0: an AVSQA gold answer is a ';'-separated text"):
        suite.score(read_answer_jsonl(_jsonl(tmp_path / "a.jsonl", right_answers(questions))), questions)
    with pytest.raises(SuiteError, match="give --questions"):
        suite.score(read_answer_jsonl(tmp_path / "a.jsonl"), None)
    stranger = [replace(questions[0], extra={})]
    with pytest.raises(SuiteError, match="not AVI-Bench items with a known task"):
        suite.score(read_answer_jsonl(tmp_path / "a.jsonl"), stranger)


def test_the_authors_prediction_files_answer_by_position(converted, tmp_path):
    suite, questions = converted
    tasks = tmp_path / "refined" / "gemini" / "tasks"
    tasks.mkdir(parents=True)
    for task, (_, _, right) in ITEMS.items():
        slots = [{"id": "00000", "predict": right}]
        if task in CHECKED:
            slots.append({"id": "pre_00000", "predict": "Yes"})
        (tasks / f"{task}.json").write_text(json.dumps(slots))
    (tasks / "AVM.json").write_text(json.dumps([{"id": "00001", "predict": "yes"}]))  # out of step with its file
    (tasks / "AVH.json").write_text(json.dumps([None]))  # an empty slot
    (tasks / "notes.json").write_text("[]")  # not a task's predictions: passed over in a folder, refused by name
    with pytest.raises(SuiteError, match="named after its task"):
        list(suite.read_answers(tasks / "notes.json"))
    report = suite.score(suite.read_answers(tmp_path / "refined"), questions)["models"]["gemini"]
    assert report["scores"]["ASQA"] == pytest.approx(100) and report["scores"]["VSQA"] == pytest.approx(100)
    assert report["errors"] == 2
    assert any("holds item '00001' where the task file has '00000'" in e for e in report["error_examples"])
    assert report["tasks"]["AVM"]["score"] is None and report["tasks"]["AVM"]["errors"] == 1


# ---- answering open questions ----------------------------------------------------------------------------------------


def test_open_questions_are_not_answered_by_letter(converted):
    _, questions = converted

    class LetterJudge:
        class task:
            choices = ("A", "B")
            name = "choice_av"

    with pytest.raises(QuestionError, match="--generate"):
        check_answerable(LetterJudge(), questions)


def test_convert_answer_score_and_levels_through_an_endpoint(tmp_path, monkeypatch, capsys):
    """The whole grammar on a written release: convert, a scripted endpoint that answers each item right (it sees
    the item's clip, its other inputs and its prompt), score, and the levels from the report."""
    from PIL import Image

    monkeypatch.setitem(CAPTION_SCORERS, "exact", _exact_caption)
    monkeypatch.setattr(type(get_suite("avibench")), "caption_scorer", "exact")
    levels_dir = write_release(tmp_path / "AVIBench")
    (tmp_path / "AVIBench" / "input" / "wavs").mkdir(parents=True)
    (tmp_path / "AVIBench" / "input" / "images").mkdir(parents=True)
    (tmp_path / "AVIBench" / "input" / "wavs" / "a.wav").write_bytes(_wav_bytes())
    Image.new("RGB", (8, 8)).save(tmp_path / "AVIBench" / "input" / "images" / "0.jpg")
    questions = tmp_path / "avibench.jsonl"
    argv = ["omni", "convert", "--suite", "avibench", "--input", str(levels_dir)]
    assert main([*argv, "--media-root", str(tmp_path / "AVIBench"), "--out", str(questions)]) == 0

    def right(body):
        content = body["messages"][0]["content"]
        assert [p["type"] for p in content] == ["input_audio", "image_url", "text"]
        text = content[-1]["text"]
        if text.startswith("Can you perceive"):
            return "Yes"
        return next(answer for task, (_, _, answer) in ITEMS.items() if text.startswith(f"Which one ({task})?"))

    server = RecordingServer(right)
    try:
        argv = ["omni", "answer", "--suite", "avibench", "--questions", str(questions), "--endpoint", server.url]
        assert main([*argv, "--model", "omni", "--out", str(tmp_path / "a.jsonl"), "--no-progress"]) == 0
    finally:
        server.close()
    assert len(server.bodies) == len(ITEMS) + len(CHECKED)
    argv = ["omni", "score", "--suite", "avibench", "--input", str(tmp_path / "a.jsonl"), "--questions"]
    assert main([*argv, str(questions), "--out", str(tmp_path / "report")]) == 0
    argv = ["omni", "avibench", "levels", "--input", str(tmp_path / "report" / "report.json")]
    assert main([*argv, "--out", str(tmp_path / "levels.csv")]) == 0
    assert "L1 100.00" in capsys.readouterr().out


def _wav_bytes() -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000)
        w.writeframes(np.zeros(1600, dtype=np.int16).tobytes())
    return buffer.getvalue()


def test_an_endpoint_request_carries_every_input_in_order(converted, tmp_path):
    from PIL import Image

    _, questions = converted
    var = next(q for q in questions if q.id == "VAR-0")
    (tmp_path / "input" / "wavs").mkdir(parents=True)
    (tmp_path / "input" / "images").mkdir(parents=True)
    (tmp_path / "input" / "wavs" / "a.wav").write_bytes(_wav_bytes())
    Image.new("RGB", (8, 8), (255, 0, 0)).save(tmp_path / "input" / "images" / "0.jpg")
    body = Endpoint("http://127.0.0.1:9/v1", "m").request_body(var)
    kinds = [part["type"] for part in body["messages"][0]["content"]]
    assert kinds == ["input_audio", "image_url", "text"]
    assert body["messages"][0]["content"][1]["image_url"]["url"].startswith("data:image/jpeg;base64,")
    assert "indices of the matching candidates" in body["messages"][0]["content"][2]["text"]
