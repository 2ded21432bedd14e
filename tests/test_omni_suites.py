"""OmniVideoBench and WorldSense as suites: the release converted with its quirks, each paper's answer rule with its
quirks against hand-worked fixtures, the strict rule beside it, VLMEvalKit result files, and answering with the
suites' own prompts by a tiny judge."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from avjudge.cli import main
from avjudge.data.questions import ChoiceQuestion, load_questions
from avjudge.omni import SuiteError, get_suite, score_answers
from avjudge.omni.answer import answer_with_judge
from avjudge.omni.benchmarks.omnivideobench import duration_bucket, seconds
from avjudge.omni.benchmarks.omnivideobench import paper_answer as omnivideobench_answer
from avjudge.omni.benchmarks.worldsense import paper_answer as worldsense_answer

from .helpers import RecordingServer

OMNIVIDEOBENCH = Path(__file__).resolve().parents[2] / "shared" / "seed_data" / "omnivideobench" / "data.json"


@pytest.mark.skipif(not OMNIVIDEOBENCH.exists(), reason="needs ../shared/seed_data/omnivideobench/data.json")
def test_the_shipped_omnivideobench_file_converts_with_its_quirks(tmp_path, capsys):
    out = tmp_path / "ovb.jsonl"
    argv = ["omni", "convert", "--suite", "omnivideobench", "--input", str(OMNIVIDEOBENCH), "--out", str(out)]
    assert main([*argv, "--media-root", str(tmp_path / "videos")]) == 0
    printed_out = capsys.readouterr().out
    questions = load_questions(out)
    assert len(questions) == 1000 and len({q.media for q in questions}) == 628
    summary = json.loads((tmp_path / "ovb.summary.json").read_text())
    groups = summary["groups"]
    # the group sizes the paper's Table 3 percentages imply for the duration buckets; its Table 1 for audio types
    assert groups["duration"] == {"(0,1] min": 166, "(1,5] min": 343, "(5,10] min": 229, "(10,30] min": 262}
    assert groups["audio_type"] == {"Speech": 762, "Sound": 147, "Music": 91}
    assert len(groups["question_type"]) == 13 and groups["question_type"]["counting"] == 156
    chains = summary["reasoning_chains"]
    assert chains["steps"] == 3581 and round(chains["modality_share"]["vision"], 2) == 0.54  # the paper: 54 % vision
    assert "3 questions whose options are lettered out of order" in printed_out
    assert "step key 'evidece' read as 'evidence'" in printed_out and "modality 'aduio' read as 'audio'" in printed_out
    odd = [q for q in questions if q.id.startswith("video_81_")]
    assert all(q.answer in "ABCD" for q in odd)
    first = questions[0]
    assert first.media == str(tmp_path / "videos" / "video_1.mp4") and not first.options[0].startswith("A.")
    assert first.text.startswith("You are given a video.") and "\nA.Ancient Chinese stories" in first.text
    assert first.text.endswith("must be chosen.Mustn't give any other reason for can not choose!")


def test_durations_and_buckets():
    assert seconds("03:28") == 208 and seconds("1:02:03") == 3723
    assert [duration_bucket(s) for s in (59, 60, 299, 300, 600, 1955)] == [
        "(0,1] min",
        "(1,5] min",
        "(1,5] min",
        "(5,10] min",
        "(10,30] min",
        "(10,30] min",
    ]
    with pytest.raises(ValueError):
        seconds("3 min")


QWEN_TEMPLATE = (
    "system\nYou are Qwen, a virtual human developed by the Qwen Team, Alibaba Group, capable of perceiving auditory "
    "and visual inputs, as well as generating text and speech.\nuser\nYou are given a video. Based on the content "
    "of the video, answer the following question:\n\nQuestion:\nWho speaks first?\n\nOptions:\nA. the man\n"
    "B. the woman\nC. the child\nD. nobody\n\nAnswer with the option's letter directly(e.g., A, B, C, or D).If "
    "your access to the video content is limited, at least one option that is more likely than the others must be "
    "chosen.Mustn't give any other reason for can not choose!\nassistant\nC"
)


@pytest.mark.parametrize(
    "response, paper, gemini, strict",
    [
        ("A", "A", "A", "A"),
        ("b", "B", None, "B"),  # Gemini's fallback reads capitals only
        ("C. the red car", "C", "C", "C"),
        ("(D)", "D", "D", "D"),
        ("\\boxed{B}", "B", "B", None),  # avjudge's strict rule reads no box
        ("The answer is A", None, "A", "A"),  # the authors' own rule: any explanation is wrong
        (QWEN_TEMPLATE, "C", "A", "C"),  # decoded with its chat template: the text after the last "assistant"
        ("You are given a video. ... Mustn't give any other reason for can not choose!\n\nB", "B", "B", "B"),
        ("<think>It could be B, the assistant thinks.</think>\nD", "D", "B", "D"),  # thinking removed
        ('```json\n{"answer": "B", "explanation": "she speaks first"}\n```', None, "B", None),
        ('{"answer": "a/b"}', None, None, None),
        ("\\boxed{\\text{D}}", None, "D", None),
        ("I think it is C because A is wrong", None, "C", None),
    ],
)
def test_omnivideobench_reads_answers_by_each_of_its_authors_rules(response, paper, gemini, strict):
    suite = get_suite("omnivideobench")
    assert [suite.parsers[p](response, ("A", "B", "C", "D"), ()) for p in ("paper", "gemini", "strict")] == [
        paper,
        gemini,
        strict,
    ]
    assert omnivideobench_answer(response) == paper


OPTIONS = ("a red car", "a blue bus", "a dog", "a bicycle")


@pytest.mark.parametrize(
    "response, expected",
    [
        ("C", "C"),
        ("The answer is D.", "D"),
        ("Based on the video, the answer is C", "B"),  # the first capital A-D, inside "Based"
        ("Best answer: C", "B"),  # "Best answer:" is never deleted: its list joins it to the next prefix
        ("The correct option is D", "D"),
        ("i saw a dog running across the street in the rain", "C"),  # no capital: the one option text it contains
        ("it is a red car or maybe a blue bus, hard to tell from here", None),  # two option texts: nothing
        ("no idea", None),
    ],
)
def test_worldsense_reads_answers_as_vlmevalkit_does(response, expected):
    assert worldsense_answer(response, options=OPTIONS) == expected


def _worldsense_file(path: Path) -> Path:
    qa = {
        "v1": {
            "video_duration": 45.0,
            "duration": "<1min",
            "domain": "Sports",
            "sub_category": "Football",
            "audio_class": ["Speech", "Event"],
            "video_caption": "a match",
            "task0": {
                "task_domain": "Recognition",
                "task_type": "Audio Recognition",
                "question": "What is heard?",
                "candidates": ["A. a whistle", "B. a bell", "C. a horn", "D. a drum"],
                "answer": "A",
            },
            "task1": {
                "task_domain": "Reasoning",
                "task_type": "Causal Reasoning",
                "question": "Why do they stop?",
                "candidates": ["A. rain", "B. a foul", "C. the end", "D. a goal"],
                "answer": "B",
            },
        },
        "v2": {
            "video_duration": 300.0,
            "duration": "4-6min",
            "domain": "Music",
            "sub_category": "Covers",
            "audio_class": ["Music"],
            "video_caption": "a song",
            "task0": {
                "task_domain": "Understanding",
                "task_type": "Audio Change",
                "question": "What changes?",
                "candidates": ["A. the key", "B. the tempo", "C. the singer", "D. nothing"],
                "answer": "C",
            },
        },
    }
    path.write_text(json.dumps(qa))
    return path


def test_worldsense_scores_by_hand(tmp_path):
    qa = _worldsense_file(tmp_path / "worldsense_qa.json")
    assert (
        main(["omni", "convert", "--suite", "worldsense", "--input", str(qa), "--out", str(tmp_path / "ws.jsonl")]) == 0
    )
    questions = load_questions(tmp_path / "ws.jsonl")
    assert [q.id for q in questions] == ["v1_task0", "v1_task1", "v2_task0"]
    assert questions[0].groups["audio_class"] == ["Speech", "Event"] and questions[2].extra["index"] == 2
    assert questions[0].text.startswith("Carefully watch this video") and questions[0].text.endswith(
        "D. a drum\nAnswer: "
    )
    rows = [
        {"id": "v1_task0", "model": "m", "response": "Based on the sound, the answer is A."},  # paper: B; strict: A
        {"id": "v1_task1", "model": "m", "response": "B"},  # right under both
        {"id": "v2_task0", "model": "m", "response": "i think the singer changes"},  # paper: C by option text
    ]
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps(r) + "\n" for r in rows))
    suite = get_suite("worldsense")
    paper = score_answers(suite, suite.read_answers(answers), questions, "paper")["models"]["m"]
    assert (paper["correct"], paper["n"]) == (2, 3)
    assert paper["table"]["audio_class"] == {"Speech": 0.5, "Event": 0.5, "Music": 1.0}  # v1 counts in both classes
    assert paper["table"]["duration"]["<1min"] == 0.5 and paper["table"]["domain"]["Music"] == 1.0
    strict = score_answers(suite, suite.read_answers(answers), questions, "strict")["models"]["m"]
    assert (strict["correct"], strict["abstained"]) == (2, 1)


def test_vlmevalkit_result_files_are_answers(tmp_path):
    header = "index\tvideo\tquestion\tprediction\tanswer\tdomain\taudio_class\ttask_domain\tduration\n"
    rows = [
        "0\tv1\tq\tA\tA\tSports\t['Speech', 'Event']\tRecognition\t<1min\n",
        "1\tv1\tq\tThe answer is C\tB\tSports\t['Speech', 'Event']\tReasoning\t<1min\n",
        "2\tv2\tq\t\tC\tMusic\t['Music']\tUnderstanding\t4-6min\n",
    ]
    result = tmp_path / "Qwen2.5-Omni-7B_WorldSense.tsv"
    result.write_text(header + "".join(rows))
    argv = ["omni", "score", "--suite", "worldsense", "--input", str(result), "--out", str(tmp_path / "s")]
    assert main(argv) == 0
    block = json.loads((tmp_path / "s" / "report.json").read_text())["models"]["Qwen2.5-Omni-7B_WorldSense"]
    assert (block["n"], block["correct"], block["errors"]) == (2, 1, 1)  # an empty prediction is an error apart
    assert block["table"]["audio_class"]["Event"] == 0.5 and block["table"]["audio_class"]["Music"] is None
    assert "| Qwen2.5-Omni-7B_WorldSense |" in (tmp_path / "s" / "report.md").read_text()


@pytest.mark.parametrize("suite_name", ["omnivideobench", "worldsense"])
def test_a_tiny_judge_answers_world_questions_in_each_suite_s_prompt(tiny_judges, small_world, tmp_path, suite_name):
    from avjudge.judges import Judge
    from avjudge.omni.benchmarks.questions import world_questions
    from avjudge.world import world_manifest

    suite = get_suite(suite_name)
    asked = []
    for q in world_questions(world_manifest(small_world))[:6]:
        lettered = [f"{letter}. {text}" for letter, text in zip("ABCD", q.options)]
        asked.append(ChoiceQuestion(**{**q.__dict__, "prompt": suite.prompt_for(q.question, lettered)}))
    judge = Judge.load("choice_av", tiny_judges["qwen2_5_omni"], batch_size=2, workers=1)
    out = tmp_path / "answers.jsonl"
    rows = answer_with_judge(judge, asked, out, "tiny", progress=False)
    assert [r["id"] for r in rows] == [q.id for q in asked]
    assert all(r["response"] in "ABCDEFGH"[: len(q.options)] for r, q in zip(rows, asked))
    report = score_answers(suite, suite.read_answers(out), asked, "paper")["models"]["tiny"]
    assert report["n"] == 6 and report["correct"] == sum(r["response"] == q.answer for r, q in zip(rows, asked))


def test_an_ablation_sets_configurations_side_by_side(tmp_path, capsys):
    qa = _worldsense_file(tmp_path / "worldsense_qa.json")
    assert (
        main(["omni", "convert", "--suite", "worldsense", "--input", str(qa), "--out", str(tmp_path / "ws.jsonl")]) == 0
    )
    gold = {q.id: q.answer for q in load_questions(tmp_path / "ws.jsonl")}
    wrong = {"A": "B", "B": "C", "C": "D", "D": "A"}
    runs = {  # a scripted model: vision alone gets v1_task0 right; with audio every item; with subtitles two
        "v": {"v1_task0": True, "v1_task1": False, "v2_task0": False},
        "av": {"v1_task0": True, "v1_task1": True, "v2_task0": True},
        "v_subtitles": {"v1_task0": True, "v1_task1": True, "v2_task0": False},
    }
    for name, right in runs.items():
        rows = [{"id": i, "model": "omni", "response": gold[i] if ok else wrong[gold[i]]} for i, ok in right.items()]
        if name == "av":
            rows.append({"id": "v9_task0", "model": "omni", "response": "A"})  # an item the others never answered
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    compare = ",".join(str(tmp_path / f"{n}.jsonl") for n in runs)
    questions = str(tmp_path / "ws.jsonl")
    argv = ["omni", "score", "--suite", "worldsense", "--questions", questions, "--compare", compare]
    argv += ["--by", "duration", "--out", str(tmp_path / "a")]
    assert main(argv) == 0
    result = json.loads((tmp_path / "a" / "ablation.json").read_text())
    assert result["base"] == "v" and result["items"] == 3  # v9_task0 is in no questions file and no other run
    assert result["runs"]["av"]["all"] == {"accuracy": 1.0, "delta": pytest.approx(2 / 3)}
    assert result["runs"]["v_subtitles"]["<1min"] == {"accuracy": 1.0, "delta": 0.5}
    assert result["runs"]["v_subtitles"]["4-6min"] == {"accuracy": 0.0, "delta": 0.0}
    assert "| av | 100.0 (+66.7) | 100.0 (+100.0) | 100.0 (+50.0) |" in capsys.readouterr().out
    assert main([*argv[:6], "--compare", str(tmp_path / "v.jsonl"), "--out", str(tmp_path / "b")]) == 2
    capsys.readouterr()  # a group the questions do not carry is an error, not an ablation of "all" alone
    assert main([*argv[:-4], "--by", "durration", "--out", str(tmp_path / "c")]) == 2
    assert "no question carries a 'durration' group" in capsys.readouterr().err
    assert not (tmp_path / "c" / "ablation.json").exists()
    # the category every question carries is a group too (it said no question carried one)
    assert main([*argv[:-4], "--by", "category", "--out", str(tmp_path / "d")]) == 0
    by_category = json.loads((tmp_path / "d" / "ablation.json").read_text())["runs"]["v"]
    categories = {json.loads(line)["category"] for line in (tmp_path / "ws.jsonl").read_text().splitlines()}
    assert categories - {"all"} and set(by_category) == {"all", *categories}


# ---- the Yes / No bridge --------------------------------------------------------------------------------------------


def test_the_bridge_chooses_the_option_believed_most(tmp_path):
    from avjudge.omni.bridge import bridge_questions, bridge_summary, expected_calibration_error

    questions = [
        ChoiceQuestion(f"q{i}", "clip.mp4", f"What is {i}?", ("red", "blue", "green"), answer)
        for i, answer in enumerate("ABC")
    ]
    beliefs = {  # a scripted judge: right on q0 and q1, fooled by "red" on q2
        "q0": [0.9, 0.2, 0.1],
        "q1": [0.3, 0.8, 0.1],
        "q2": [0.5, 0.1, 0.4],
    }
    asked = []

    def believe(items):
        asked.extend(i.id for i in items)
        assert all(i.text.startswith('The answer to the question "What is') for i in items)
        return [beliefs[i.id.split("#")[0]]["ABC".index(i.id.split("#")[1])] for i in items]

    rows = bridge_questions(believe, questions, tmp_path / "bridge.jsonl", progress=False)
    assert [r["predicted"] for r in rows] == ["A", "B", "A"] and asked[:3] == ["q0#A", "q0#B", "q0#C"]
    summary = bridge_summary(rows)
    assert summary["accuracy"] == pytest.approx(2 / 3) and summary["chance"] == pytest.approx(1 / 3)
    # right options 0.9, 0.8, 0.4 against wrong 0.2, 0.1, 0.3, 0.1, 0.5, 0.1: 17 of 18 pairs ordered right
    assert summary["auroc_right_vs_wrong"] == pytest.approx(17 / 18)
    assert expected_calibration_error(np.array([0.9, 0.1]), np.array([1, 0])) == pytest.approx(0.1)
    assert len(bridge_questions(believe, questions, tmp_path / "bridge.jsonl", progress=False)) == 3
    assert len(asked) == 9  # resumed: nothing judged twice


def test_a_tiny_vt_judge_bridges_world_questions(tiny_judges, small_world, tmp_path, capsys):
    from avjudge.data.questions import write_questions
    from avjudge.omni.benchmarks.questions import world_questions
    from avjudge.world import world_manifest

    write_questions(world_questions(world_manifest(small_world))[:4], tmp_path / "q.jsonl")
    argv = ["omni", "bridge", "--questions", str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "b")]
    assert main([*argv, "--judge", f"vt={tiny_judges['qwen2_5_omni']}", "--no-progress"]) == 0
    rows = [json.loads(line) for line in (tmp_path / "b" / "bridge.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and all(0 < p < 1 for r in rows for p in r["p_yes"].values())
    assert all(r["predicted"] == max(r["p_yes"], key=r["p_yes"].get) for r in rows)
    assert json.loads((tmp_path / "b" / "report.json").read_text())["answered"] == 4
    assert main([*argv, "--judge", f"av={tiny_judges['qwen2_5_omni']}"]) == 2  # the AV judge reads no text


# ---- endpoint requests as the configuration asks --------------------------------------------------------------------


def test_endpoint_requests_carry_what_the_configuration_asks(small_world, tmp_path):
    import base64
    import io
    import shutil

    from scipy.io import wavfile

    from avjudge.httpjson import RequestCache
    from avjudge.media import probe
    from avjudge.omni.answer import Endpoint, answer_with_endpoint
    from avjudge.omni.benchmarks.questions import world_questions
    from avjudge.omni.request_media import MediaPlan
    from avjudge.world import world_manifest

    source = world_questions(world_manifest(small_world))[0]
    clip = tmp_path / "videos" / "clip.mp4"
    clip.parent.mkdir()
    shutil.copy(source.media, clip)
    (tmp_path / "subtitles").mkdir()
    (tmp_path / "subtitles" / "clip.srt").write_text("1\n00:00:00,000 --> 00:00:01,000\nhello there\n")
    suite = get_suite("worldsense")
    lettered = [f"{letter}. {text}" for letter, text in zip("ABCD", source.options)]
    question = ChoiceQuestion(
        "q",
        str(clip),
        source.question,
        source.options,
        source.answer,
        prompt=suite.prompt_for(source.question, lettered),
    )
    server = RecordingServer()
    try:

        def send(plan: MediaPlan, name: str, cache=None) -> dict:
            endpoint = Endpoint(server.url, "omni", media=plan, cache=cache)
            rows = answer_with_endpoint(endpoint, [question], tmp_path / f"{name}.jsonl", progress=False)
            assert rows[0].get("error") is None, rows[0]
            return server.bodies[-1]["messages"][0]["content"]

        parts = send(MediaPlan("av", "4"), "av4")
        assert [p["type"] for p in parts] == ["image_url"] * 4 + ["input_audio", "text"]
        rate, audio = wavfile.read(io.BytesIO(base64.b64decode(parts[4]["input_audio"]["data"])))
        assert rate == 16000 and audio.ndim == 1 and abs(len(audio) / rate - probe(clip).duration) < 0.1
        assert parts[-1]["text"] == question.prompt
        assert base64.b64decode(parts[0]["image_url"]["url"].split(",")[1])[:3] == b"\xff\xd8\xff"  # JPEG

        parts = send(MediaPlan("v"), "v")
        assert [p["type"] for p in parts] == ["video_url", "text"]  # no audio part without "a"
        assert base64.b64decode(parts[0]["video_url"]["url"].split(",")[1]) == clip.read_bytes()

        parts = send(MediaPlan("v+subtitles", "fps=1"), "vs")
        assert parts[-1]["text"].startswith("This video's subtitles are listed below:\nhello there\n")
        assert "input_audio" not in [p["type"] for p in parts]

        endpoint = Endpoint(server.url, "omni", media=MediaPlan("a+caption"))
        rows = answer_with_endpoint(endpoint, [question], tmp_path / "ac.jsonl", progress=False)
        assert "no video_caption" in rows[0]["error"] and rows[0]["response"] is None

        cache = RequestCache(tmp_path / "cache")
        asked = len(server.bodies)
        send(MediaPlan("av", "8"), "cached_first", cache)
        endpoint = Endpoint(server.url, "omni", media=MediaPlan("av", "8"), cache=cache)
        rows = answer_with_endpoint(endpoint, [question], tmp_path / "cached_again.jsonl", progress=False)
        assert rows[0]["response"] == "A" and len(server.bodies) == asked + 1  # the second run cost nothing
    finally:
        server.close()
    with pytest.raises(SuiteError, match="not one of av, v, a"):
        MediaPlan("video")
    with pytest.raises(SuiteError, match="not a count"):
        MediaPlan("av", "many")


def test_modalities_shape_endpoint_requests_only(tmp_path, capsys):
    questions = _worldsense_file(tmp_path / "qa.json")
    assert (
        main(
            ["omni", "convert", "--suite", "worldsense", "--input", str(questions), "--out", str(tmp_path / "q.jsonl")]
        )
        == 0
    )
    argv = [
        "bench",
        "answer",
        "--suite",
        "worldsense",
        "--questions",
        str(tmp_path / "q.jsonl"),
        "--out",
        str(tmp_path / "a"),
    ]
    assert main([*argv, "--judge", f"choice_av={tmp_path}", "--modalities", "v"]) == 2
    assert "a judge sees what its task reads" in capsys.readouterr().err
    assert main([*argv, "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--frames", "lots"]) == 2
    assert "not a count" in capsys.readouterr().err
    assert main([*argv, "--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--generate", "8"]) == 2
    assert "an endpoint always answers in text" in capsys.readouterr().err


@pytest.mark.parametrize("family", ["qwen2_audio", "qwen2_5_omni"])
def test_a_backbone_writes_its_own_answer(tiny_judges, family, tmp_path):
    """Free generation: the first token the backbone writes is the one its next-token logits put first, and the
    text goes to the suite's parser like an endpoint's."""
    from avjudge.judges import Judge
    from avjudge.judges.adapters import JudgeSample
    from avjudge.omni.benchmarks.sonicbench.generate import make_items

    judge = Judge.load("choice_a", tiny_judges[family], workers=1)
    sample = JudgeSample(audio=np.random.default_rng(1).standard_normal(16000).astype(np.float32) * 0.1, text="A or B?")
    prepared = judge.prepare(sample)
    ids = judge.adapter.generate_ids(prepared, 4)
    logits = judge.adapter.next_token_logits(judge.adapter.collate([prepared]))
    assert len(ids) >= 1 and ids[0] == int(logits[0].argmax())

    make_items(tmp_path / "items", 2, seed=0, attributes=("pitch",), workers=1, progress=False)
    questions = str(tmp_path / "items" / "questions.jsonl")
    argv = [
        "bench",
        "answer",
        "--suite",
        "sonicbench",
        "--questions",
        questions,
        "--judge",
        f"choice_a={tiny_judges[family]}",
    ]
    assert main([*argv, "--generate", "6", "--out", str(tmp_path / "a.jsonl"), "--no-progress"]) == 0
    rows = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and all(isinstance(r["response"], str) and "probs" not in r for r in rows)
    assert (
        main(
            [
                "bench",
                "score",
                "--suite",
                "sonicbench",
                "--input",
                str(tmp_path / "a.jsonl"),
                "--questions",
                questions,
                "--out",
                str(tmp_path / "s"),
            ]
        )
        == 0
    )


def test_a_release_file_of_the_wrong_shape_is_named(tmp_path, capsys):
    (tmp_path / "data.json").write_text("{}")
    argv = ["omni", "convert", "--suite", "omnivideobench", "--input", str(tmp_path / "data.json")]
    assert main([*argv, "--out", str(tmp_path / "q.jsonl")]) == 2
    assert "data.json (a list of videos) must be a JSON list, not a dict" in capsys.readouterr().err
    (tmp_path / "qa.json").write_text("not json")
    argv = ["omni", "convert", "--suite", "worldsense", "--input", str(tmp_path / "qa.json")]
    assert main([*argv, "--out", str(tmp_path / "q.jsonl")]) == 2
    assert "qa.json: not WorldSense's worldsense_qa.json" in capsys.readouterr().err


TOY_SUITE = """
from avjudge.omni import Suite, register
from avjudge.omni.parsing import strict_answer


@register
class Toy(Suite):
    name = "toybench"
    description = "a toy benchmark kept outside avjudge"
    parsers = {"strict": strict_answer}
    default_parser = "strict"
"""

TOY_COMMANDS = """
from avjudge.commands import GROUP_HELP, register

GROUP_HELP["omni toybench"] = "the toy benchmark's own commands"


def _hello_args(p):
    p.add_argument("--name", default="world")


def _hello(args):
    print(f"hello {args.name} from toybench")
    return 0


register("omni toybench hello", "say hello", _hello_args, _hello)
"""


def test_a_benchmark_is_one_folder_found_by_scanning_with_its_own_commands(tmp_path):
    """Adding a benchmark is one folder: a toy one outside avjudge (named by AVJUDGE_OMNI_BENCHMARKS) is listed by
    `omni suites`, scored by its rule and brings its own command, with nothing listed by hand."""
    folder = tmp_path / "more" / "toybench"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(TOY_SUITE)
    (folder / "commands.py").write_text(TOY_COMMANDS)
    env = {**os.environ, "AVJUDGE_OMNI_BENCHMARKS": str(tmp_path / "more")}

    def avjudge(*words: str) -> str:
        run = subprocess.run([sys.executable, "-m", "avjudge.cli", *words], capture_output=True, text=True, env=env)
        assert run.returncode == 0, run.stderr
        return run.stdout

    listed = avjudge("omni", "suites")
    assert "toybench" in listed and "a toy benchmark kept outside avjudge" in listed
    assert {"omnivideobench", "worldsense", "sonicbench", "avibench", "prise", "questions"} <= {
        line.split()[0] for line in listed.splitlines() if line.strip()
    }
    assert avjudge("omni", "toybench", "hello", "--name", "you").strip() == "hello you from toybench"
    without = subprocess.run([sys.executable, "-m", "avjudge.cli", "omni", "suites"], capture_output=True, text=True)
    assert "toybench" not in without.stdout  # found by scanning what the environment names, nowhere else
