"""The AVI-Bench suite: a user's download of its task files in avjudge's question format, answers scored with the
paper's metric for each task (`metrics`), double confirmation, and the four levels (`levels`) from the scores.

A task file (``levels/<stage>/<TASK>/data.json``) is a JSON list of ``{"id", "task", "subtask"?, "input":
{"question": {"prompt", "text", "options"}, "video"?, "image_list"?, "audio_list"?}, "output":
{"question_answer"}}``; ``options`` names a list of the release's vocabulary (``vocabulary.json`` beside this module).
Entries whose id is ``pre_<id>`` are presence checks ("Can you hear any sound?") for the items of that id. Ids repeat
within a file (AVQA, AVLG, VSQA_V), and the authors' prediction files (``<TASK>.json``: ``[{"id", "predict"}]``)
answer the task file position by position, so an item's avjudge id is ``<TASK>-<position>``.

Every AVI-Bench question is open: the model answers in text (an endpoint, or a judge's backbone with ``--generate``),
and the task's metric reads that text. Its data is CC BY-ND 4.0 with an anti-training addendum: avjudge reads a
user's own download for evaluation only, never ships it and never trains on it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from importlib.resources import files
from pathlib import Path
from typing import Any

from ....data.questions import ChoiceQuestion
from ....stats import printed
from ...base import Answer, SuiteError, read_answer_jsonl, read_release_json
from ...score import ERROR_EXAMPLES, latest_answers
from ...suite import Suite, register
from . import levels as taxonomy
from .measures import Captioning, Counting, Instances, Retrieval, frame_iou, full_match, set_match

# Item metrics judge one answer (double confirmation works on them); corpus metrics score a task's answers together.
ITEM_METRICS: dict[str, Callable[[str | None, Any, list[str]], bool]] = {
    **dict.fromkeys(("ASQA", "VSQA_I", "VSQA_V", "AVM", "AVH", "VAH", "AVQA"), full_match),
    "AVSQA": set_match,
}
CORPUS_METRICS: dict[str, Callable] = {
    "AMIC": Counting(recall_only=False, missing=7),
    "VMIC": Counting(recall_only=True, missing=12, saturates_at=10),
    "AVL": Instances(),
    "VAR": Retrieval(),
    "AVR": Retrieval(),
    "AVLG": frame_iou,
    "AVC": Captioning(),
}
RELEASE_TASKS = (*ITEM_METRICS, *CORPUS_METRICS)
POOLED = {"VSQA_I": "VSQA", "VSQA_V": "VSQA"}  # the paper scores the image and video halves as one task
STAGE_OF = {
    **{t: stage for stage, tasks in taxonomy.STAGES.items() for t in tasks},
    **dict.fromkeys(taxonomy.PRISE, "sensation"),
}
CHECK_PREFIX = "pre_"

VOCABULARY = json.loads(files(__package__).joinpath("vocabulary.json").read_text(encoding="utf-8"))
ANSWER_FORMS = {  # avjudge's wording of the authors' answer instructions; the answer forms are theirs
    "AVSQA": "You may choose several options, separated by semicolons, between # marks, e.g. #red;cube#.",
    "AMIC": "There may be one or more sounding objects. Possible categories: {categories}. Answer only in the form "
    "answer={{'category': count, ...}}, e.g. answer={{'dog': 2, 'cat': 1}}.",
    "VMIC": "There may be one or more visible objects. Possible categories: {categories}. Answer only in the form "
    "answer={{'category': count, ...}}, e.g. answer={{'dog': 2, 'cat': 1}}.",
    "AVL": "Name each sounding instance category_id (ids from 1, e.g. dog_1, dog_2) with categories from "
    "{categories}, and give its box [x_min, y_min, x_max, y_max] normalised to [0, 1]. Answer only in the form "
    "answer={{'dog_1': [0.1, 0.2, 0.4, 0.6]}}.",
    "VAR": "Answer with the indices of the matching candidates, from 0: e.g. [], [0, 3] or [1, 4, 9].",
    "AVR": "Answer with the indices of the matching candidates, from 0: e.g. [], [0, 3] or [1, 4, 9].",
    "AVLG": "Give the referred object's box in every frame, frame_0 to frame_9, as [x_min, y_min, x_max, y_max] "
    "normalised to [0, 1], or None where it is not there. Answer only in the form "
    "answer={{'frame_0': [0.1, 0.2, 0.4, 0.6], 'frame_1': None, ...}}.",
}


def prompt(task: str, question: str, choices: list[str]) -> str:
    """What a model is asked: the question, the options it picks from, and the answer form its task's metric
    reads."""
    lines = [question]
    if choices:
        lines.append(f"Available options are: {', '.join(choices)}.")
    form = ANSWER_FORMS.get(task, "Answer with one of the options." if choices else "")
    categories = VOCABULARY["categories"].get(task, [])
    lines.append(form.format(categories=", ".join(categories)))
    return "\n".join(line for line in lines if line)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


class _Reader:
    """One task file read into questions, its quirks collected as notes."""

    def __init__(self, path: Path, media_root: Path, notes: list[str]):
        self.path, self.media_root, self.notes = path, media_root, notes

    def media(self, entry: dict) -> tuple[str, list[str]]:
        """The item's main clip (its video, else its first audio, else its first image) and its other inputs."""
        inputs = entry.get("input") or {}
        files = [inputs["video"]] if isinstance(inputs.get("video"), str) else []
        files += [f for key in ("audio_list", "image_list") for f in inputs.get(key) or [] if isinstance(f, str)]
        resolved = [str(self.media_root / f.removeprefix("./")) for f in files]
        return (resolved[0], resolved[1:]) if resolved else ("", [])

    def choices(self, task: str, options: Any, where: str) -> list[str]:
        if options is None or options == "":
            return []
        if isinstance(options, list):
            return [str(o) for o in options]
        known = VOCABULARY["options"].get(task, {})
        if options not in known:
            self.notes.append(
                f"{where}: options {options!r} are not in avjudge's AVI-Bench vocabulary; answers are "
                "matched to the gold as whole texts"
            )
            return []
        return list(known[options])

    def read(self) -> list[ChoiceQuestion]:
        entries = read_release_json(self.path, list, "an AVI-Bench task file (a JSON list of items)")
        questions, formal_ids = [], defaultdict(list)
        for position, entry in enumerate(entries):
            where = f"{self.path}[{position}]"
            if not isinstance(entry, dict):
                raise SuiteError(f"{where}: an item is a JSON object, not {type(entry).__name__}")
            task = entry.get("task")
            if task not in RELEASE_TASKS:
                raise SuiteError(f"{where}: unknown AVI-Bench task {task!r} (known: {', '.join(RELEASE_TASKS)})")
            question = (entry.get("input") or {}).get("question") or {}
            gold = (entry.get("output") or {}).get("question_answer")
            release_id = str(entry.get("id", ""))
            is_check = release_id.startswith(CHECK_PREFIX)
            if is_check and (gold is None or not _text(question.get("text"))):
                self.notes.append(f"{where}: presence check with no question or answer; left out, as the authors do")
                continue
            if gold is None:
                raise SuiteError(f"{where}: item has no output.question_answer (the gold answer)")
            media, inputs = self.media(entry)
            choices = self.choices(task, question.get("options"), where)
            scored_as = POOLED.get(task, task)
            item = ChoiceQuestion(
                id=f"{task}-{position}",
                media=media,
                question=_text(question.get("text")),
                options=(),
                answer=gold,
                category=scored_as,
                prompt=prompt(task, _text(question.get("text")), choices),
                groups={"task": scored_as, "stage": STAGE_OF[scored_as], "role": "check" if is_check else "formal"},
                extra={"release_task": task, "release_id": release_id, "choices": choices, "inputs": inputs},
            )
            if is_check:
                checked = formal_ids.get(release_id[len(CHECK_PREFIX) :], [])
                if not checked:
                    self.notes.append(f"{where}: presence check {release_id!r} has no item before it; left out")
                    continue
                for formal in checked:
                    formal.extra["check"] = item.id
            else:
                formal_ids[release_id].append(item)
            questions.append(item)
        return questions


def _task_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    files = sorted(path.rglob("data.json"))
    if not files:
        raise SuiteError(f"{path}: no AVI-Bench task file (levels/<stage>/<TASK>/data.json) under it")
    return files


def read_predictions(path: Path) -> Iterator[Answer]:
    """The authors' prediction files (``<TASK>.json`` under ``<model>/tasks/`` or ``<model>/``): one list per
    task, answering its task file position by position; a slot with no prediction is an answer with an error."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*.json") if p.stem in RELEASE_TASKS)
    if not files:
        raise SuiteError(f"{path}: no prediction files (<TASK>.json, e.g. AVQA.json) under it")
    for file in files:
        if file.stem not in RELEASE_TASKS:
            raise SuiteError(f"{file}: a prediction file is named after its task (one of {', '.join(RELEASE_TASKS)})")
        model = (file.parent.parent if file.parent.name == "tasks" else file.parent).name
        slots = read_release_json(file, list, "an AVI-Bench prediction file (a JSON list of {id, predict})")
        for position, slot in enumerate(slots):
            where = f"{file}[{position}]"
            prediction = slot.get("predict") if isinstance(slot, dict) else None
            yield Answer(
                id=f"{file.stem}-{position}",
                model=model,
                response=prediction if isinstance(prediction, str) else None,
                error=None if isinstance(prediction, str) else f"{where}: no prediction in this slot",
                groups={"release_id": str(slot.get("id"))} if isinstance(slot, dict) else {},
                where=where,
            )


@register
class AviBench(Suite):
    """AVI-Bench's 14 tasks (15 release files: VSQA comes as an image and a video half), each scored by its metric."""

    name = "avibench"
    description = "AVI-Bench (14 tasks: structured answers, double confirmation, four levels); your own download"
    judge_task = "choice_av"
    parsers: dict = {}  # no letters to read: each task's metric reads the answers (`score`)
    caption_scorer = "fense"  # AVC's scorer, a name in metrics.CAPTION_SCORERS

    def convert(self, path: Path, media_root: Path | None = None) -> list[ChoiceQuestion]:
        questions, seen = [], set()
        for file in _task_files(path):
            read = _Reader(file, media_root or file.parent, self.notes).read()
            tasks = {q.extra["release_task"] for q in read}
            if tasks & seen:
                raise SuiteError(f"{file}: task {sorted(tasks & seen)} already read from another file")
            seen |= tasks
            questions += read
        return questions

    def read_answers(self, path: Path) -> Iterator[Answer]:
        yield from (read_answer_jsonl(path) if path.suffix == ".jsonl" else read_predictions(path))

    def score(
        self,
        answers: Iterable[Answer],
        questions: list[ChoiceQuestion] | None,
        parser: str | None = None,
        baseline: Iterable[Answer] | None = None,
    ) -> dict:
        parser = parser or self.default_parser
        if questions is None:
            raise SuiteError("avibench scores against its task files: give --questions (omni convert's output)")
        if parser != "paper" or baseline is not None:
            raise SuiteError("avibench has one answer rule per task, the paper's, and no --baseline")
        strangers = [q.id for q in questions if q.extra.get("release_task") not in RELEASE_TASKS]
        if strangers:
            raise SuiteError(
                f"{len(strangers)} questions (e.g. {strangers[0]}) are not AVI-Bench items with a known task: "
                "convert the task files with avjudge omni convert --suite avibench"
            )
        per_model: dict[str, list[Answer]] = defaultdict(list)
        for a in latest_answers(answers):
            per_model[a.model].append(a)
        models = {model: self._score_model(model, rows, questions) for model, rows in sorted(per_model.items())}
        return {"suite": self.name, "parser": parser, "models": models}

    def _score_model(self, model: str, rows: list[Answer], questions: list[ChoiceQuestion]) -> dict:
        by_id = {q.id: q for q in questions}
        usable, errors = {}, []
        for a in rows:
            question = by_id.get(a.id)
            release_id = a.groups.get("release_id")
            if a.error:
                errors.append(a.error)
            elif question is None:
                errors.append(f"{a.where or a.id}: id {a.id!r} is not in the questions file")
            elif release_id is not None and release_id != question.extra["release_id"]:
                errors.append(
                    f"{a.where}: holds item {release_id!r} where the task file has {question.extra['release_id']!r} "
                    "(predictions answer the task file position by position)"
                )
            else:
                usable[a.id] = a.response
        answered = {a.id for a in rows}
        _require_whole_tasks(model, answered, questions)
        tasks: dict[str, list[ChoiceQuestion]] = defaultdict(list)
        for q in questions:
            if q.id in answered:
                tasks[q.groups["task"]].append(q)
        results = {task: self._score_task(task, items, usable) for task, items in sorted(tasks.items())}
        scores = {t: 100 * r["score"] for t, r in results.items() if r.get("score") is not None}
        missing = [t for t in taxonomy.TASKS if t not in scores]
        return {
            "tasks": results,
            "scores": scores,
            "levels": None if missing else taxonomy.levels(scores),
            "levels_missing": missing,
            "errors": len(errors),
            "error_examples": errors[:ERROR_EXAMPLES],
        }

    def _score_task(self, task: str, items: list[ChoiceQuestion], usable: dict[str, str | None]) -> dict:
        answered = [q for q in items if q.id in usable]
        formal = [q for q in answered if q.groups["role"] == "formal"]
        result = {"n": len(formal), "errors": sum(q.groups["role"] == "formal" for q in items) - len(formal)}
        if not formal:
            return {**result, "score": None, "why": "no usable answer"}
        release_task = formal[0].extra["release_task"]
        if release_task in ITEM_METRICS:
            return {**result, **_double_confirmed(answered, usable)}
        metric = Captioning(self.caption_scorer) if task == "AVC" else CORPUS_METRICS[task]
        try:
            return {**result, **metric([(usable[q.id], q.answer) for q in formal])}
        except SuiteError as err:
            if task == "AVC":  # FENSE's weights are the user's to install; the other tasks still score
                return {**result, "score": None, "why": str(err)}
            raise SuiteError(f"{task}: {err}") from err

    def markdown(self, report: dict) -> str:
        columns = list(taxonomy.TASKS)
        lines = [
            "# AVI-Bench: task scores (%, with double confirmation) and the four levels",
            "",
            "| Model | " + " | ".join(columns) + " | L1 | L2 | L3 | L4 |",
            "|---" * (len(columns) + 5) + "|",
        ]
        for model, block in report["models"].items():
            levels = block["levels"] or {}
            cells = [printed(block["scores"].get(t)) for t in columns]
            cells += [printed(levels.get(level)) for level in ("L1", "L2", "L3", "L4")]
            lines.append(f"| {model} | " + " | ".join(cells) + " |")
        lines += [
            "",
            "## Double confirmation (Table 8's w/ and w/o)",
            "",
            "| Model | Task | w/ | w/o |",
            "|---|---|---|---|",
        ]
        for model, block in report["models"].items():
            for task, r in block["tasks"].items():
                if "unconfirmed_score" in r:
                    lines.append(
                        f"| {model} | {task} | {printed(100 * r['score'])} | {printed(100 * r['unconfirmed_score'])} |"
                    )
        return "\n".join(lines) + "\n"

    def summary(self, report: dict) -> list[str]:
        lines = []
        for model, block in report["models"].items():
            scores = "  ".join(f"{t} {printed(s, 1)}" for t, s in block["scores"].items())
            lines.append(f"{model}: {scores}  ({block['errors']} errors)")
            lines += [f"    {e}" for e in block["error_examples"]]
            for task, r in block["tasks"].items():
                if r.get("score") is None:
                    lines.append(f"    {task} not scored: {r['why']}")
            if block["levels"]:
                lines.append("    " + "  ".join(f"{k} {printed(block['levels'][k])}" for k in ("L1", "L2", "L3", "L4")))
            else:
                lines.append(f"    levels need every task's score; missing: {', '.join(block['levels_missing'])}")
        return lines


def _require_whole_tasks(model: str, answered: set[str], questions: list[ChoiceQuestion]) -> None:
    """A task is scored on all its items or not at all: a prediction list shorter than its task file is an error."""
    per_task: dict[str, list[str]] = defaultdict(list)
    for q in questions:
        per_task[q.extra["release_task"]].append(q.id)
    for task, ids in per_task.items():
        missing = [i for i in ids if i not in answered]
        if missing and len(missing) < len(ids):
            raise SuiteError(
                f"{model} answered {len(ids) - len(missing)} of the {len(ids)} {task} items (no answer for "
                f"{', '.join(missing[:3])}{'...' if len(missing) > 3 else ''}): a task is scored on all its items; "
                "finish the answers (omni answer resumes) or leave the task's answers out"
            )


def _double_confirmed(items: list[ChoiceQuestion], usable: dict[str, str | None]) -> dict:
    """Accuracy with double confirmation (a formal item counts only if its presence check was answered right; a
    check with no usable answer does not confirm) and without it."""
    correct = {}
    for q in items:
        try:
            correct[q.id] = ITEM_METRICS[q.extra["release_task"]](usable[q.id], q.answer, q.extra["choices"])
        except SuiteError as err:
            raise SuiteError(f"question {q.id}: {err}") from err
    formal = [q for q in items if q.groups["role"] == "formal"]
    checked = [q for q in formal if "check" in q.extra]
    confirmed = [correct[q.id] and correct.get(q.extra.get("check"), "check" not in q.extra) for q in formal]
    return {
        "score": sum(confirmed) / len(formal),
        "unconfirmed_score": sum(correct[q.id] for q in formal) / len(formal),
        "checks": len(checked),
        "checks_failed": sum(not correct.get(q.extra["check"], False) for q in checked),
    }
