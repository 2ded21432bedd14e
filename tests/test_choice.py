"""Multiple-choice questions on clips: the letter head, the question files, world questions with exact answers,
and answering them with tiny Omni and Qwen2-Audio models (resumed, unreadable clips counted apart)."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest
import torch
from transformers import PreTrainedTokenizerFast

from avjudge.data.questions import ChoiceQuestion, QuestionError, load_questions
from avjudge.judges import ChoiceHead, Judge, JudgeSample, render_choice_question
from avjudge.omni.answer import answer_with_judge
from avjudge.omni.benchmarks.questions import Questions, world_questions
from avjudge.omni.score import compare_answers
from avjudge.prompts import CHOICE_QUERY, OPTION_LETTERS
from avjudge.world import MANIFEST


@pytest.fixture(scope="module")
def tokenizer(tiny_judges):
    return PreTrainedTokenizerFast.from_pretrained(str(tiny_judges["qwen2_audio"].parent / "tokenizer"))


def test_the_letter_head_sums_each_letters_variants_and_answers_only_with_offered_letters(tokenizer):
    head = ChoiceHead(("A", "B", "C", "D"), ((1,), (2, 6), (3,), (4,)))  # B has two variants ("B", " B")
    logits = torch.tensor([[0.0, 0.5, 2.0, -1.0, 5.0, 0.0, 1.0, 0.0]])  # D likeliest, but not offered below
    [result] = head.results(logits)
    exp = {"A": np.exp(0.5), "B": np.exp(2.0) + np.exp(1.0), "C": np.exp(-1.0), "D": np.exp(5.0)}
    total = sum(exp.values())
    for letter, value in exp.items():
        assert result.probs[letter] == pytest.approx(value / total, rel=1e-5)
    assert result.mass == pytest.approx(total / np.exp(logits[0].numpy().astype(np.float64)).sum(), rel=1e-5)
    offered = result.offered(3)
    assert list(offered) == ["A", "B", "C"] and sum(offered.values()) == pytest.approx(1.0)
    assert result.answer(3) == "B" and result.answer(4) == "D"

    # from a tokenizer: each letter's one-token variants ("A"; " A" where it is one token)
    built = ChoiceHead.from_tokenizer(tokenizer, OPTION_LETTERS)
    for letter, ids in zip(built.letters, built.ids):
        variants = [tokenizer(v, add_special_tokens=False)["input_ids"] for v in (letter, f" {letter}")]
        assert list(ids) == [v[0] for v in variants if len(v) == 1]


def test_a_question_renders_with_lettered_options_and_needs_two_to_eight():
    assert render_choice_question(" What is heard? ", ["rain ", "wind"]) == "What is heard?\nA. rain\nB. wind"
    for options in (["only one"], [str(i) for i in range(9)]):
        with pytest.raises(ValueError, match="2 to 8 options"):
            render_choice_question("Q?", options)


def test_question_files_resolve_media_beside_them_and_name_the_line_of_a_bad_question(tmp_path):
    good = {"id": "q1", "media": "clips/a.mp4", "question": "How many?", "options": ["one", "two"], "answer": "B"}
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(good) + "\n")
    [q] = load_questions(path)
    assert q.media == str(tmp_path / "clips" / "a.mp4") and q.category == "all" and q.options == ("one", "two")
    for bad, message in (
        ({**good, "answer": "C"}, "not one of the offered letters AB"),
        ({k: v for k, v in good.items() if k != "options"}, "has no options"),
        ({**good, "options": ["one"]}, "2 to 8"),
    ):
        path.write_text(json.dumps(good) + "\n" + json.dumps({**bad, "id": "q2"}) + "\n")
        with pytest.raises(QuestionError, match=rf"q\.jsonl:2: .*{message}"):
            load_questions(path)
    path.write_text((json.dumps(good) + "\n") * 2)
    with pytest.raises(QuestionError, match="q.jsonl:2: id 'q1' appears twice"):
        load_questions(path)


def _caption_answer(category: str, captions: dict) -> str:
    """The right option, read from the world's captions (written apart from the scene the questions read)."""
    video, audio = captions["video"], captions["audio"]
    if category == "object_count":
        return re.search(r"(\w+) shapes? (?:is|are) visible", video).group(1).lower()
    if category == "place":
        return "indoors" if video.startswith("The video shows an indoor") else "outdoors"
    if category == "beat_count":
        found = re.search(r"In all, (\w+) beats? (?:is|are) heard", audio)
        return found.group(1) if found else "none"
    return re.search(r"In the background there is (.+?)\.", audio).group(1)


def test_world_questions_have_the_answers_the_captions_give(small_world):
    records = {json.loads(line)["id"]: json.loads(line) for line in (small_world / MANIFEST).read_text().splitlines()}
    questions = world_questions(small_world / MANIFEST)
    assert len(questions) == 4 * len(records)
    letters_used = set()
    for q in questions:
        clip_id, category = q.id.split("/")
        chosen = q.options[OPTION_LETTERS.index(q.answer)]
        assert chosen == _caption_answer(category, records[clip_id]["captions"]), q
        assert len(set(q.options)) == len(q.options)
        letters_used.add(q.answer)
    assert len(letters_used) > 2  # options are shuffled: the answer is not always in one place
    audio_only = world_questions(small_world / MANIFEST, audio_only=True)
    assert {q.category for q in audio_only} == {"beat_count", "background_sound"}


def test_a_world_clip_with_more_beats_than_the_options_hold_is_not_asked_to_count_them(small_world, tmp_path):
    record = json.loads((small_world / MANIFEST).read_text().splitlines()[0])
    record["video"] = str(small_world / record["video"])
    scene = record["scene"]
    sounding = next(i for i, o in enumerate(scene["objects"]) if o["sound"] is not None)
    many = {**record, "id": "many", "scene": {**scene, "events": [{**scene["events"][0], "object": sounding}] * 8}}
    (tmp_path / "w.jsonl").write_text("\n".join(json.dumps(r) for r in (record, many)) + "\n")
    asked = {q.id for q in world_questions(tmp_path / "w.jsonl")}
    assert f"{record['id']}/beat_count" in asked and "many/beat_count" not in asked and "many/place" in asked


def test_a_choice_judge_asks_the_question_and_answers_resumably_counting_unreadable_clips_apart(
    tiny_judges, small_world, tmp_path, monkeypatch
):
    questions = world_questions(small_world / MANIFEST)[:10]
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"not a video")
    questions.insert(3, ChoiceQuestion("broken/place", str(broken), "Where?", ("indoors", "outdoors"), "A", "place"))
    judge = Judge.load("choice_av", tiny_judges["qwen2_5_omni"], batch_size=4, workers=1)
    prompt = judge.adapter.tokenizer.decode(
        judge.prepare(
            JudgeSample(
                frames=np.zeros((2, 56, 56, 3), np.uint8),
                fps=1.0,
                audio=np.zeros(16000, np.float32),
                text=questions[0].text,
            )
        ).input_ids
    )
    assert questions[0].text in prompt and CHOICE_QUERY.format(text="").strip() in prompt

    # the letter probabilities are those of the model's own next-token scores (generate), renormalised over the
    # offered letters' one-token variants
    q = questions[0]
    [via_judge] = judge.score([q.media], [q.text])
    sample = judge.sample(judge.decode(q.media), q.text)
    batch = judge.adapter.to_device(judge.adapter.collate([judge.prepare(sample)]))
    with torch.no_grad():
        out = judge.adapter.model.generate(
            **batch, max_new_tokens=1, output_scores=True, return_dict_in_generate=True, do_sample=False
        )
    probs = torch.softmax(out.scores[0][0].double(), -1)
    offered = {
        letter: sum(probs[i].item() for i in judge.head.ids[k])
        for k, letter in enumerate(OPTION_LETTERS[: len(q.options)])
    }
    total = sum(offered.values())
    for letter, p in via_judge.offered(len(q.options)).items():
        assert p == pytest.approx(offered[letter] / total, rel=1e-4)

    asked = []
    score_samples = judge.score_samples
    monkeypatch.setattr(judge, "score_samples", lambda samples: asked.append(len(samples)) or score_samples(samples))
    out = tmp_path / "answers.jsonl"
    first = answer_with_judge(judge, questions[:6], out, "tiny", progress=False)
    every = answer_with_judge(judge, questions, out, "tiny", progress=False)
    assert asked == [6, 5]  # the second run asks only the five questions the first did not
    assert every[:6] == first and [r["id"] for r in every] == [q.id for q in questions]
    assert len(out.read_text().splitlines()) == len(questions)

    failed = every[3]
    assert failed["error"] and failed["response"] is None
    for q, row in zip(questions, every):
        if row is failed:
            continue
        assert list(row["probs"]) == list(OPTION_LETTERS[: len(q.options)])
        assert sum(row["probs"].values()) == pytest.approx(1.0)
        assert row["response"] == max(row["probs"], key=row["probs"].get)
    suite = Questions()
    report = suite.score(suite.read_answers(out), questions)
    block = report["models"]["tiny"]
    answered = [(r, q) for r, q in zip(every, questions) if r is not failed]
    assert block["errors"] == 1 and block["n"] == len(answered)  # the unreadable clip apart, never wrong
    assert block["accuracy"] == pytest.approx(np.mean([r["response"] == q.answer for r, q in answered]))
    assert report["chance"]["all"] == pytest.approx(np.mean([1 / len(q.options) for q in questions]))
    places = [r for r, q in answered if q.category == "place"]  # the unreadable question is a place question too
    assert block["by"]["category"]["place"]["n"] == len(places)

    yes_no = Judge.load("av", tiny_judges["qwen2_5_omni"])
    with pytest.raises(QuestionError, match="answers Yes or No"):
        answer_with_judge(yes_no, questions, tmp_path / "other.jsonl", "yes_no", progress=False)
    with pytest.raises(ValueError, match="needs a Yes / No judge"):
        judge.score_differentiable(torch.zeros(2, 56, 56, 3), 1.0, torch.zeros(16000))


def test_world_audio_questions_asked_of_two_models_and_scored_side_by_side(tiny_judges, small_world, tmp_path):
    """`omni answer` and `omni score` on the built-in questions suite; the old `bench choice` spelling warns and
    writes the same report."""
    out = tmp_path / "choice"
    alias = [sys.executable, "-m", "avjudge.cli", "bench", "choice", "--input", str(small_world)]
    alias += ["--judge", f"choice_a={tiny_judges['qwen2_audio']}", "--out", str(out), "--no-progress"]
    for _ in range(2):
        run = subprocess.run(alias, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
    assert "bench choice is deprecated" in run.stderr and "omni answer --suite questions" in run.stderr
    report = json.loads((out / "report.json").read_text())
    (model,) = report["models"]
    n_clips = len((small_world / MANIFEST).read_text().splitlines())
    assert report["models"][model]["n"] == 2 * n_clips  # the world's audio questions: beats and background
    assert set(report["models"][model]["by"]["category"]) == {"beat_count", "background_sound"}
    assert len((out / "answers.jsonl").read_text().splitlines()) == 2 * n_clips  # the rerun asked nothing again

    # the same questions asked of another model through the omni grammar, beside the first run's answers
    questions, other = out / "questions.jsonl", tmp_path / "other.jsonl"
    answer = ["omni", "answer", "--suite", "questions", "--questions", str(questions), "--out", str(other)]
    cli = [sys.executable, "-m", "avjudge.cli"]
    run = subprocess.run(
        [*cli, *answer, "--judge", f"choice_a={tiny_judges['qwen2_5_omni']}", "--no-progress"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    score = ["omni", "score", "--suite", "questions", "--input", str(other), "--questions", str(questions)]
    run = subprocess.run(
        [*cli, *score, "--baseline", str(out / "answers.jsonl"), "--out", str(tmp_path / "s")],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    first = {r["id"]: r for r in map(json.loads, (out / "answers.jsonl").read_text().splitlines())}
    second = [json.loads(line) for line in other.read_text().splitlines()]
    gold = {q.id: q.answer for q in load_questions(questions)}
    compared = json.loads((tmp_path / "s" / "report.json").read_text())["models"][second[0]["model"]]["baseline"]
    assert compared["questions"] == 2 * n_clips
    assert compared["baseline_accuracy"] == pytest.approx(report["models"][model]["accuracy"])
    assert compared["accuracy"] == pytest.approx(np.mean([r["response"] == gold[r["id"]] for r in second]))
    assert compared["changed"] == sum(r["response"] != first[r["id"]]["response"] for r in second)
    assert "answers changed" in run.stdout and "| beat_count |" in (tmp_path / "s" / "report.md").read_text()
    missing = subprocess.run([*alias, "--baseline", str(tmp_path / "nowhere")], capture_output=True, text=True)
    assert missing.returncode != 0 and "--baseline takes the --out folder" in missing.stderr


def test_a_clips_questions_share_one_decode(tiny_judges, small_world, tmp_path, monkeypatch):
    questions = world_questions(small_world / MANIFEST)[:8]  # two clips, four questions each
    judge = Judge.load("choice_av", tiny_judges["qwen2_5_omni"], workers=1)
    import avjudge.scoring.core as core

    decoded = []
    clip_of = core.clip_of  # the scoring core's one decode
    monkeypatch.setattr(core, "clip_of", lambda item, *a: decoded.append(item["video"]) or clip_of(item, *a))
    rows = answer_with_judge(judge, questions, tmp_path / "answers.jsonl", "tiny", progress=False)
    assert sorted(decoded) == sorted({q.media for q in questions}) and len(decoded) == 2
    assert all(r.get("error") is None for r in rows)


def test_two_runs_compare_on_the_questions_both_answered():
    def row(qid, category, predicted, answer="A", error=None):
        return {
            "id": qid,
            "category": category,
            "answer": answer,
            "error": error,
            "predicted": None if error else predicted,
            "correct": None if error else predicted == answer,
        }

    mine = [row("q1", "x", "A"), row("q2", "x", "B"), row("q3", "y", "A"), row("q4", "y", None, error="unreadable")]
    theirs = [row("q1", "x", "B"), row("q2", "x", "B"), row("q3", "y", "B", error="unreadable"), row("q4", "y", "A")]
    compared = compare_answers(mine, theirs)
    # q1 and q2 only: q3 failed in the baseline, q4 in this run
    assert compared["questions"] == 2 and compared["changed"] == 1
    assert compared["accuracy"] == 0.5 and compared["baseline_accuracy"] == 0.0
    assert set(compared["per_category"]) == {"x"}
