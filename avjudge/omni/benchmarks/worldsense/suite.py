"""WorldSense (Hong et al. 2025, arXiv:2502.04326) as a benchmark suite: 3,172 four-option questions on 1,662 videos
with their audio, 8 domains, 67 sub-categories, 26 task types, answered and scored as its reference scorer,
VLMEvalKit's ``WorldSense`` dataset, does.

``worldsense_qa.json`` is a dict keyed by video id: ``video_duration``, ``duration`` (the scorer's bucket: ``<1min``
... ``>8min``), ``domain``, ``sub_category``, ``audio_class`` (a list: an item counts under each of its classes),
``video_caption`` and ``task0``, ``task1``, ... each with ``task_domain``, ``task_type``, ``question``,
``candidates`` (``"A. ..."``) and ``answer``. Users download it themselves.

VLMEvalKit's answer rule: strip the response, delete a list of answer prefixes (two pairs of its list lack the
comma between them, so "The correct option is" and "Best answer:" are never deleted), and take the first capital
A-D anywhere, inside a word too ("Based on ..." answers B); a response of more than ten words with no capital A-D
reads nothing. Where nothing is read, exact matching falls back to the one option whose text the response
contains. Accuracy counts every answered item. Its result files (TSV or JSON with ``index, prediction, answer``
and the group columns) are read as answers too.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator
from pathlib import Path

from ....data.questions import ChoiceQuestion
from ....stats import printed
from ...base import Answer, Scored, SuiteError, read_release_json
from ...parsing import strict_answer
from ...score import accuracy, accuracy_in
from ...suite import Suite, register

LETTERS = ("A", "B", "C", "D")
DURATIONS = ("<1min", "1-2min", "2-4min", "4-6min", "6-8min", ">8min")
DOMAINS = (
    "Tech & Science",
    "Culture & Politics",
    "Daily Life",
    "Film & TV",
    "Performance",
    "Games",
    "Sports",
    "Music",
)
AUDIO_CLASSES = ("Speech", "Event", "Music")
TASK_DOMAINS = ("Recognition", "Understanding", "Reasoning")
GROUPS = ("domain", "sub_category", "task_domain", "task_type", "audio_class", "duration")
SYSTEM = (
    "Carefully watch this video and pay attention to every detail. "
    "Based on your observations, select the best option that accurately addresses the question."
)
WITH_AUDIO = (
    "\nThese are the frames of a video and the corresponding audio. Select the best answer to the following "
    "multiple-choice question based on the video. Respond with only the letter (A, B, C, or D) of the correct option.\n"
)
# VLMEvalKit's list as it stands: the missing commas join two pairs into prefixes no answer starts with
ANSWER_PREFIXES = (
    "The best answer is",
    "The correct answer is",
    "The answer is",
    "The answer",
    "The best option isThe correct option is",
    "Best answer:Best option:",
    "Answer:",
    "Option:",
)


def paper_answer(response: str, letters: tuple[str, ...] = LETTERS, options: tuple[str, ...] = ()) -> str | None:
    """VLMEvalKit's reading of a WorldSense answer (``extract_characters_regex``, then exact matching of option
    texts)."""
    text = response.strip()
    for prefix in ANSWER_PREFIXES:
        text = text.replace(prefix, "")
    offered = "".join(letters)
    found = None if len(text.split()) > 10 and not re.search(f"[{offered}]", text) else re.search(f"[{offered}]", text)
    if found:
        return found.group(0)
    lowered = response.lower()
    containing = [letter for letter, option in zip(letters, options) if option and option.lower() in lowered]
    return containing[0] if len(containing) == 1 else None


@register
class WorldSense(Suite):
    name = "worldsense"
    description = "WorldSense: 3,172 four-option questions on videos with audio (8 domains, 26 task types)"
    judge_task = "choice_av"
    letters = LETTERS
    parsers = {"paper": paper_answer, "strict": strict_answer}

    def convert(self, path: Path, media_root: Path | None = None) -> list[ChoiceQuestion]:
        """Every ``task*`` of every video, in the order VLMEvalKit numbers them (``index``); media
        ``<media_root>/videos/<video>.mp4`` (or ``videos/<video>.mp4`` beside the question file)."""
        videos = read_release_json(path, dict, "WorldSense's worldsense_qa.json (a dict keyed by video id)")
        questions = []
        for video, data in videos.items():
            media = (media_root or Path()) / "videos" / f"{video}.mp4"
            for task in [k for k in data if "task" in k]:
                item, where = data[task], f"{path} {video}/{task}"
                candidates = item.get("candidates") or []
                if len(candidates) != 4 or item.get("answer") not in LETTERS:
                    raise SuiteError(f"{where}: needs four candidates and an answer A-D")
                groups = {"domain": data.get("domain"), "sub_category": data.get("sub_category")}
                groups |= {"task_domain": item.get("task_domain"), "task_type": item.get("task_type")}
                groups |= {"audio_class": list(data.get("audio_class") or []), "duration": data.get("duration")}
                questions.append(
                    ChoiceQuestion(
                        id=f"{video}_{task}",
                        media=str(media),
                        question=item["question"],
                        options=tuple(re.sub(r"^\s*[A-D]\s*\.\s*", "", c) for c in candidates),
                        answer=item["answer"],
                        category=str(item.get("task_type") or "all"),
                        prompt=self.prompt_for(item["question"], candidates),
                        groups=groups,
                        extra={"index": len(questions), "video_duration": data.get("video_duration")},
                    )
                )
        return questions

    def prompt_for(self, question: str, options: list[str]) -> str:
        """VLMEvalKit's text for an omni model given the frames and the audio, its parts joined as one message;
        ``options`` as the release prints them ("A. text")."""
        return f"{SYSTEM}\n{WITH_AUDIO}\nQuestion: {question}\n" + "\n".join(options) + "\nAnswer: "

    def read_answers(self, path: Path) -> Iterator[Answer]:
        """avjudge answers JSONL, or a VLMEvalKit result file (``.tsv`` or ``.json``; the model is the file's
        name): its rows carry the gold and the groups, so no questions file is needed; ids are ``index<N>``."""
        if path.suffix not in (".tsv", ".json"):
            yield from super().read_answers(path)
            return
        if not path.is_file():
            raise SuiteError(f"{path}: no such VLMEvalKit result file")
        text = path.read_text(encoding="utf-8")
        rows = json.loads(text) if path.suffix == ".json" else list(csv.DictReader(text.splitlines(), delimiter="\t"))
        if isinstance(rows, dict):  # pandas' column-oriented JSON
            rows = [dict(zip(rows, values)) for values in zip(*(v.values() for v in rows.values()))]
        for line, row in enumerate(rows, start=2 if path.suffix == ".tsv" else 1):
            where = f"{path}:{line}"
            missing = [k for k in ("index", "prediction", "answer") if k not in row]
            if missing:
                yield Answer(where, path.stem, None, f"{where}: row has no {', '.join(missing)}", where=where)
                continue
            groups = {g: row[g] for g in GROUPS if g in row}
            if isinstance(groups.get("audio_class"), str):  # VLMEvalKit writes the list as its repr
                groups["audio_class"] = re.findall(r"'([^']+)'", groups["audio_class"]) or [groups["audio_class"]]
            prediction = row["prediction"]
            yield Answer(
                f"index{row['index']}",
                path.stem,
                None if prediction in (None, "") else str(prediction),
                None if prediction not in (None, "") else f"{where}: no prediction",
                str(row["answer"]),
                groups,
                where,
            )

    def table(self, scored: list[Scored]) -> dict:
        return {
            "average": accuracy(sum(s.correct for s in scored), len(scored)),
            "domain": {d: accuracy_in(scored, "domain", d) for d in DOMAINS},
            "task_domain": {t: accuracy_in(scored, "task_domain", t) for t in TASK_DOMAINS},
            "audio_class": {a: accuracy_in(scored, "audio_class", a) for a in AUDIO_CLASSES},
            "duration": {d: accuracy_in(scored, "duration", d) for d in DURATIONS},
        }

    def markdown(self, report: dict) -> str:
        lines = [
            f"# WorldSense ({report['parser']} answer rule), accuracy in %",
            "",
            "| Model | " + " | ".join(DOMAINS) + " | Avg. |",
            "|---" * (len(DOMAINS) + 2) + "|",
        ]
        for model, block in report["models"].items():
            t = block["table"]
            figures = [printed(None if v is None else 100 * v, 1) for v in [*t["domain"].values(), t["average"]]]
            lines.append(f"| {model} | " + " | ".join(figures) + " |")
        return "\n".join(lines) + "\n"
