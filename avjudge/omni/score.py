"""Scoring answers: parse each with a suite's rule, count per model and group, and lay out the suite's tables.

``report.json`` is ``{"suite", "parser", "models": {MODEL: {"n", "correct", "abstained", "errors", "accuracy",
"answer_rate": {letter: share}, "by": {GROUP: {CATEGORY: {"n", "correct", "accuracy"}}}, "table": {...},
"accuracy_by_parser": {parser: accuracy}, "error_examples": [...]}}}``. ``n`` counts the answers that were given
(an abstention, no letter read, is among them and wrong, as the papers count it); answers with an error (a clip
that could not be read, a failed request, a malformed line) are counted apart in ``errors`` and left out of
``n``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from ..data.questions import ChoiceQuestion
from ..jsonl import write_json
from ..prompts import OPTION_LETTERS
from ..stats import printed
from .base import Answer, Rules, Scored, SuiteError

ERROR_EXAMPLES = 5


def accuracy(correct: int, n: int) -> float | None:
    return correct / n if n else None


def accuracy_in(scored: list[Scored], group: str, category: str) -> float | None:
    """Accuracy over the items that fall in ``category`` of ``group`` (None where none does)."""
    inside = [s for s in scored if category in s.categories(group)]
    return accuracy(sum(s.correct for s in inside), len(inside))


def latest_answers(answers: Iterable[Answer]) -> list[Answer]:
    """One answer per (model, id): the last one written (a resumed run appends its retries)."""
    latest: dict[tuple[str, str], Answer] = {}
    for a in answers:
        latest[(a.model, a.id)] = a
    return list(latest.values())


def _check_parser(suite: Rules, parser: str) -> None:
    if parser not in suite.parsers:
        raise SuiteError(
            f"the {suite.name} suite has no {parser!r} letter rule"
            + (f"; it has {sorted(suite.parsers)}" if suite.parsers else ": it scores its answers its own way")
        )


def _scored(suite: Rules, parser: str, answer: Answer, by_id: dict[str, ChoiceQuestion] | None) -> Scored | str:
    """The answer parsed and judged against its question (or the gold its answer file carries), or why it cannot
    be."""
    if answer.error:
        return answer.error
    question = by_id.get(answer.id) if by_id is not None else None
    where = answer.where or answer.id
    if by_id is not None and question is None:
        return f"{where}: id {answer.id!r} is not in the questions file"
    if question is None and answer.answer is None:
        return f"{where}: no gold answer for {answer.id!r} (give the --questions it answers)"
    gold = question.answer if question else answer.answer
    letters = OPTION_LETTERS[: len(question.options)] if question else suite.letters
    predicted = suite.parsers[parser](answer.response or "", letters, question.options if question else ())
    groups = question.groups if question else answer.groups
    return Scored(answer.id, answer.model, groups, predicted, predicted == gold)


def _by_group(scored: list[Scored]) -> dict:
    counts: dict = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for s in scored:
        for group in s.groups:
            for category in s.categories(group):
                cell = counts[group][str(category)]
                cell[0] += 1
                cell[1] += s.correct
    return {
        group: {c: {"n": n, "correct": k, "accuracy": accuracy(k, n)} for c, (n, k) in sorted(cats.items())}
        for group, cats in sorted(counts.items())
    }


def _per_model(answers: Iterable[Answer]) -> dict[str, list[Answer]]:
    per_model: dict[str, list[Answer]] = defaultdict(list)
    for a in latest_answers(answers):
        per_model[a.model].append(a)
    return per_model


def _baseline_rows(suite: Rules, baseline: Iterable[Answer], by_id, parser: str) -> tuple[str, list[dict]]:
    """The one model of a baseline answers file and its answers as `compare_answers` reads them."""
    per_model = _per_model(baseline)
    if len(per_model) != 1:
        raise SuiteError(f"a baseline holds one model's answers; this one holds {sorted(per_model) or 'none'}")
    (model, rows), *_ = per_model.items()
    scored = [_scored(suite, parser, a, by_id) for a in rows]
    return model, [s.choice_row() for s in scored if isinstance(s, Scored)]


def compare_answers(rows: list[dict], baseline: list[dict]) -> dict:
    """Two models' answers to the same questions (this run's ``rows``, a ``baseline`` run's, e.g. the base model a
    judge was fine-tuned from): on the questions both answered, each one's accuracy and how many answers changed,
    overall and per category."""
    theirs = {r["id"]: r for r in baseline if r.get("error") is None}
    shared = [r for r in rows if r.get("error") is None and r["id"] in theirs]

    def block(mine: list[dict]) -> dict:
        return {
            "questions": len(mine),
            "accuracy": float(np.mean([r["correct"] for r in mine])) if mine else None,
            "baseline_accuracy": float(np.mean([theirs[r["id"]]["correct"] for r in mine])) if mine else None,
            "changed": sum(r["predicted"] != theirs[r["id"]]["predicted"] for r in mine),
        }

    categories = sorted({r["category"] for r in shared})
    return {**block(shared), "per_category": {c: block([r for r in shared if r["category"] == c]) for c in categories}}


def score_answers(
    suite: Rules,
    answers: Iterable[Answer],
    questions: list[ChoiceQuestion] | None = None,
    parser: str = "paper",
    baseline: Iterable[Answer] | None = None,
) -> dict:
    """Every model's results under ``parser`` (the chosen rule's figures; each model's overall accuracy under every
    rule of the suite beside them); with ``baseline`` (another model's answers, e.g. the base model a judge was
    fine-tuned from), each model's accuracy beside the baseline's on the items both answered, and how many answers
    changed, overall and per item group."""
    _check_parser(suite, parser)
    by_id = {q.id: q for q in questions} if questions is not None else None
    reference = _baseline_rows(suite, baseline, by_id, parser) if baseline is not None else None
    models = {}
    for model, rows in sorted(_per_model(answers).items()):
        results = {p: [_scored(suite, p, a, by_id) for a in rows] for p in suite.parsers}
        scored = [r for r in results[parser] if isinstance(r, Scored)]
        errors = [r for r in results[parser] if isinstance(r, str)]
        letters = Counter(s.predicted for s in scored if s.predicted)
        correct = sum(s.correct for s in scored)
        models[model] = {
            "n": len(scored),
            "correct": correct,
            "abstained": sum(s.predicted is None for s in scored),
            "errors": len(errors),
            "accuracy": accuracy(correct, len(scored)),
            "answer_rate": {letter: letters[letter] / len(scored) for letter in sorted(letters)} if scored else {},
            "by": _by_group(scored),
            "table": suite.table(scored),
            "accuracy_by_parser": {
                p: accuracy(sum(r.correct for r in rs if isinstance(r, Scored)), sum(isinstance(r, Scored) for r in rs))
                for p, rs in results.items()
            },
            "error_examples": errors[:ERROR_EXAMPLES],
        }
        if by_id is not None:
            models[model]["unanswered"] = len(by_id) - len({a.id for a in rows} & set(by_id))
        if reference is not None:
            mine = [s.choice_row() for s in scored]
            models[model]["baseline"] = {"model": reference[0], **compare_answers(mine, reference[1])}
    return {"suite": suite.name, "parser": parser, "models": models}


def write_score(suite: Rules, report: dict, out: Path) -> list[Path]:
    """``OUT/report.json`` and ``OUT/report.md`` (the suite's tables)."""
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "report.json", report)
    (out / "report.md").write_text(suite.markdown(report), encoding="utf-8")
    return [out / "report.json", out / "report.md"]


def ablation(
    suite: Rules,
    runs: dict[str, Iterable[Answer]],
    questions: list[ChoiceQuestion] | None,
    parser: str = "paper",
    group: str | None = None,
) -> dict:
    """Configurations of one model side by side (each run's answers: video alone, with audio, with subtitles, more
    frames...), as the papers' ablation tables set them: accuracy overall and per category of ``group`` on the items
    every run answered, and each run's difference from the first (the base)."""
    if len(runs) < 2:
        raise SuiteError("an ablation compares two or more runs (answers files), the first being the base")
    _check_parser(suite, parser)
    by_id = {q.id: q.category_grouped() for q in questions} if questions is not None else None
    scored: dict[str, dict[str, Scored]] = {}
    for name, answers in runs.items():
        models = _per_model(answers)
        if len(models) != 1:
            raise SuiteError(f"run {name!r} holds the answers of {sorted(models) or 'no model'}; give one model a run")
        rows = [_scored(suite, parser, a, by_id) for a in next(iter(models.values()))]
        scored[name] = {s.id: s for s in rows if isinstance(s, Scored)}
    common = sorted(set.intersection(*(set(s) for s in scored.values())))
    if not common:
        raise SuiteError("the runs answered no item in common")

    first = scored[next(iter(scored))]
    if group and not any(first[i].categories(group) for i in common):
        raise SuiteError(
            f"--by {group}: no question carries a {group!r} group; give a group the questions carry, or leave --by out"
        )

    def cells(items: dict[str, Scored]) -> dict:
        chosen = [items[i] for i in common]
        out = {"all": accuracy(sum(s.correct for s in chosen), len(chosen))}
        if group:
            categories = sorted({str(c) for s in chosen for c in s.categories(group)})
            for c in categories:
                inside = [s for s in chosen if c in map(str, s.categories(group))]
                out[c] = accuracy(sum(s.correct for s in inside), len(inside))
        return out

    table = {name: cells(items) for name, items in scored.items()}
    base = next(iter(table))
    return {
        "suite": suite.name,
        "parser": parser,
        "group": group,
        "base": base,
        "items": len(common),
        "runs": {
            name: {
                c: {"accuracy": a, "delta": None if a is None or table[base][c] is None else a - table[base][c]}
                for c, a in row.items()
            }
            for name, row in table.items()
        },
    }


def ablation_markdown(result: dict) -> str:
    """The ablation as a table: a row per run, accuracy (and its difference from the base) per column."""
    columns = list(next(iter(result["runs"].values())))
    lines = [
        f"# {result['suite']} ablation on {result['items']} items "
        f"({result['parser']} answer rule; base: {result['base']})",
        "",
        "| Run | " + " | ".join(columns) + " |",
        "|---" * (len(columns) + 1) + "|",
    ]
    for name, row in result["runs"].items():
        cells = []
        for c in columns:
            a, d = row[c]["accuracy"], row[c]["delta"]
            cells.append(
                printed(None if a is None else 100 * a, 1)
                + ("" if name == result["base"] or d is None else f" ({100 * d:+.1f})")
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_ablation(result: dict, out: Path) -> str:
    """``OUT/ablation.json`` and ``OUT/ablation.md``; returns the table."""
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "ablation.json", result)
    table = ablation_markdown(result)
    (out / "ablation.md").write_text(table, encoding="utf-8")
    return table
