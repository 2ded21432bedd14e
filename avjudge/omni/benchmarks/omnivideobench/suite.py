"""OmniVideoBench (Li et al. 2025, arXiv:2510.10689) as a benchmark suite: 1,000 four-option questions on 628 videos
with their audio, 13 question types, three audio types, four duration buckets and an annotated reasoning chain per
question.

The release's question file (``data.json``: a list of videos, each with its questions) converts with every question
kept: option letters come from position (three questions of ``video_81`` letter theirs A, B, A, B), the gold is
``correct_option`` as the authors' scorer uses it (the free-text ``answer`` differs from that option's text in 76
questions, case, spacing and punctuation aside), and reasoning-step keys and modalities with typos (``evidece``,
``nModality``, ``aduio``) are read by their nearest name. Each quirk is counted in the suite's notes.

Three answer rules: ``paper``, the authors' open-model scorer (`extracted_answer`: the text after the chat
template's last "assistant", thinking removed, a boxed letter unwrapped; then `clean_text`: lower case, "X." to "X",
punctuation and spaces away; right only if what is left is the correct letter, so an answer with any explanation is
wrong); ``gemini``, their Gemini script's (the JSON ``answer`` its prompt asks for, else a boxed letter, else the first
capital letter standing alone); ``strict``, avjudge's. The prompt is their code's, its missing spaces between
sentences included.
"""

from __future__ import annotations

import difflib
import json
import re
import string
from collections import Counter
from pathlib import Path

from ....data.questions import ChoiceQuestion
from ....stats import printed
from ...base import Scored, SuiteError, read_release_json
from ...parsing import strict_answer
from ...score import accuracy, accuracy_in
from ...suite import Suite, register

LETTERS = ("A", "B", "C", "D")
AUDIO_TYPES = ("Music", "Sound", "Speech")
DURATION_BUCKETS = ((60, "(0,1] min"), (300, "(1,5] min"), (600, "(5,10] min"), (float("inf"), "(10,30] min"))
PROMPT = (
    "You are given a video. Based on the content of the video, answer the following question:\n\n"
    "Question:\n{question}\n\nOptions:\n{options}\n\n"
    "Answer with the option's letter directly(e.g., A, B, C, or D)."
    "If your access to the video content is limited, at least one option that is more likely than the others must "
    "be chosen.Mustn't give any other reason for can not choose!"
)
PROMPT_END = "Mustn't give any other reason for can not choose!"  # the last words of their prompt
STEP_FIELDS = ("modality", "evidence", "inference")
MODALITIES = ("vision", "audio")


def seconds(duration: str) -> int:
    """``MM:SS`` or ``HH:MM:SS`` in seconds."""
    if not re.fullmatch(r"\d+(:\d{1,2}){1,2}", str(duration)):
        raise ValueError(f"duration {duration!r} is not MM:SS or HH:MM:SS")
    total = 0
    for part in str(duration).split(":"):
        total = total * 60 + int(part)
    return total


def duration_bucket(duration_seconds: float) -> str:
    """The paper's four groups: a video of exactly 1, 5 or 10 minutes counts in the longer one (this rule gives
    the group sizes the paper's Table 3 percentages imply: 166, 343, 229, 262)."""
    return next(label for limit, label in DURATION_BUCKETS if duration_seconds < limit)


def extracted_answer(response: str) -> str:
    """The authors' ``extract_model_answer_thinking`` (the plain one is the same without its first step): the
    ``<think>...</think>`` blocks removed (the response as it is if nothing else is left); the text after the last
    "assistant" (a response decoded with its chat template), else after their prompt where the response repeats it;
    then ``/box{X}`` or ``\\boxed{X}`` unwrapped."""
    text = re.sub(r"<think>.*?</think>", "", response, flags=re.DOTALL).strip() or response
    if "assistant" in text:
        text = text.split("assistant")[-1].strip()
    elif PROMPT_END in text:
        text = text.split(PROMPT_END)[-1].strip()
    for pattern in (r"/box\{([^}]+)\}", r"\\boxed\{([^}]+)\}"):
        boxed = re.search(pattern, text)
        if boxed:
            text = boxed.group(1).strip()
    return text


def clean_text(text: str) -> str:
    """The authors' ``clean_text``: lower case, ``/box{X}`` unwrapped, "X. ..." cut to "X", punctuation and extra
    spaces away."""
    text = text.lower()
    boxed = re.search(r"/box\{([^}]+)\}", text)
    if boxed:
        text = boxed.group(1)
    if len(text) > 1 and text[1] == ".":
        text = text[0]
    return " ".join(text.translate(str.maketrans("", "", string.punctuation)).split())


def _letter(cleaned: str, letters: tuple[str, ...]) -> str | None:
    return cleaned.upper() if cleaned.upper() in letters else None


def paper_answer(response: str, letters: tuple[str, ...] = LETTERS, options: tuple[str, ...] = ()) -> str | None:
    """The authors' open-model scorer: `extracted_answer`, then `clean_text`; right only if what is left is the
    correct letter, so an answer with any explanation is wrong."""
    return _letter(clean_text(extracted_answer(response)), letters)


def gemini_answer(response: str, letters: tuple[str, ...] = LETTERS, options: tuple[str, ...] = ()) -> str | None:
    """The authors' Gemini script: the ``answer`` of the JSON object the prompt asks for (a ```json fence around it
    stripped), else the letter of a ``\\boxed{X}``, else the first capital letter standing alone; then lower case,
    punctuation and spaces away, and it must be a letter. Where their script finds nothing it fails the item (left
    out of its accuracy); here that answer reads no letter."""
    text = response.removeprefix("```json\n").removesuffix("\n```")
    try:
        data = json.loads(text)
    except ValueError:
        offered = "".join(letters)
        found = re.search(rf"\\boxed\{{(?:\\text\{{)?([{offered}])\}}?\}}", response) or re.search(
            rf"\b([{offered}])\b", response
        )
        return found.group(1) if found else None
    answer = data.get("answer") if isinstance(data, dict) else None
    if not isinstance(answer, str):
        return None
    return _letter(" ".join(answer.lower().translate(str.maketrans("", "", string.punctuation)).split()), letters)


def _words(text) -> str:
    return " ".join(re.findall(r"\w+", str(text).lower()))


def _nearest(word: str, names: tuple[str, ...]) -> str | None:
    word = re.sub(r"[^a-z]", "", word.lower())
    if word.startswith("n") and word[1:] in names:  # "nModality": a stray newline escape
        word = word[1:]
    found = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    return found[0] if found else None


def reasoning_steps(raw: list, fixes: Counter) -> list[dict]:
    """The steps with their keys and modality read by nearest name; each fix counted in ``fixes``."""
    steps = []
    for step in raw or []:
        fixed = {}
        for key, value in step.items():
            name = _nearest(key, STEP_FIELDS)
            if name != key:
                fixes[f"step key {key!r} read as {name!r}"] += 1
            if name:
                fixed[name] = value
        modality = _nearest(str(fixed.get("modality", "")), MODALITIES)
        if modality != fixed.get("modality"):
            fixes[f"modality {fixed.get('modality')!r} read as {modality!r}"] += 1
        steps.append({**fixed, "modality": modality})
    return steps


def chain_statistics(questions: list[ChoiceQuestion]) -> dict:
    """Steps per question and the modalities of the steps, over the questions' reasoning chains."""
    steps = [s for q in questions for s in q.extra.get("reasoning_steps", [])]
    modalities = Counter(s["modality"] for s in steps)
    return {
        "questions": len(questions),
        "steps": len(steps),
        "steps_per_question": len(steps) / len(questions) if questions else None,
        "modality_share": {m: modalities[m] / len(steps) for m in (*MODALITIES, None)} if steps else {},
    }


@register
class OmniVideoBench(Suite):
    name = "omnivideobench"
    description = "OmniVideoBench: 1,000 four-option questions on videos with audio (13 types, 3 audio types)"
    judge_task = "choice_av"
    letters = LETTERS
    parsers = {"paper": paper_answer, "gemini": gemini_answer, "strict": strict_answer}

    def convert(self, path: Path, media_root: Path | None = None) -> list[ChoiceQuestion]:
        """Every question of ``data.json``; media ``<media_root>/<video>.mp4`` (or ``<video>.mp4`` beside the
        question file)."""
        videos = read_release_json(path, list, "OmniVideoBench's data.json (a list of videos)")
        questions, quirks, fixes = [], Counter(), Counter()
        for v, video in enumerate(videos):
            where = f"{path} video {v} ({video.get('video', '?')})"
            try:
                duration = seconds(video["duration"])
                items = video["questions"]
            except (KeyError, TypeError, ValueError) as err:
                raise SuiteError(f"{where}: needs video, duration (MM:SS) and questions ({err})") from err
            media = (media_root / f"{video['video']}.mp4") if media_root else Path(f"{video['video']}.mp4")
            for j, item in enumerate(items):
                options = item.get("options") or []
                gold = item.get("correct_option")
                if len(options) != 4 or gold not in LETTERS:
                    raise SuiteError(f"{where} question {j}: needs four options and correct_option A-D")
                printed_letters = [o.strip()[:1] for o in options]
                if printed_letters != list(LETTERS):
                    quirks["questions whose options are lettered out of order (letters taken from position)"] += 1
                texts = [re.sub(r"^\s*[A-D]\s*[.:)]\s*", "", o) for o in options]
                if _words(item.get("answer", "")) != _words(texts[LETTERS.index(gold)]):
                    quirks["questions whose answer text differs from correct_option's text (scored by the letter)"] += 1
                questions.append(
                    ChoiceQuestion(
                        id=f"{video['video']}_q{j}",
                        media=str(media),
                        question=item["question"],
                        options=tuple(texts),
                        answer=gold,
                        category=item.get("question_type", "all"),
                        prompt=self.prompt_for(item["question"], options),
                        groups={
                            "question_type": item.get("question_type"),
                            "audio_type": item.get("audio_type"),
                            "duration": duration_bucket(duration),
                            "video_type": video.get("video_type"),
                        },
                        extra={
                            "duration_seconds": duration,
                            "answer_text": item.get("answer"),
                            "reasoning_steps": reasoning_steps(item.get("reasoning_steps"), fixes),
                        },
                    )
                )
        self.notes += [f"{n} {what}" for what, n in quirks.items()]
        self.notes += [f"{n} x {what}" for what, n in sorted(fixes.items())]
        return questions

    def prompt_for(self, question: str, options: list[str]) -> str:
        """The authors' prompt; ``options`` as the release prints them ("A.text")."""
        return PROMPT.format(question=question, options="\n".join(options))

    def describe(self, questions: list[ChoiceQuestion]) -> dict:
        return {**super().describe(questions), "reasoning_chains": chain_statistics(questions)}

    def table(self, scored: list[Scored]) -> dict:
        """The paper's Table 3 columns (audio type, duration bucket, average) and the 13 question types."""
        types = sorted({s.groups.get("question_type") for s in scored if s.groups.get("question_type")})
        return {
            "average": accuracy(sum(s.correct for s in scored), len(scored)),
            "audio_type": {a: accuracy_in(scored, "audio_type", a) for a in AUDIO_TYPES},
            "duration": {label: accuracy_in(scored, "duration", label) for _, label in DURATION_BUCKETS},
            "question_type": {t: accuracy_in(scored, "question_type", t) for t in types},
        }

    def markdown(self, report: dict) -> str:
        columns = [*AUDIO_TYPES, *(label for _, label in DURATION_BUCKETS)]
        lines = [
            f"# OmniVideoBench ({report['parser']} answer rule), accuracy in %",
            "",
            "| Model | " + " | ".join(columns) + " | Avg. |",
            "|---" * (len(columns) + 2) + "|",
        ]
        for model, block in report["models"].items():
            t = block["table"]
            cells = [*(t["audio_type"][a] for a in AUDIO_TYPES), *(t["duration"][d] for _, d in DURATION_BUCKETS)]
            figures = [printed(None if c is None else 100 * c) for c in [*cells, t["average"]]]
            lines.append(f"| {model} | " + " | ".join(figures) + " |")
        return "\n".join(lines) + "\n"
