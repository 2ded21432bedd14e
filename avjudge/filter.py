"""Dataset filtering, one of avjudge's three uses: score a source manifest with judges and metrics first (through the
scoring core), then split it by rules into kept, dropped and failed clips.

Rules look like ``av>=0.7,nisqa>=3.0`` (dimension names from avjudge.scoring.dimensions; >=, >, <=, <).
A clip passes when every rule holds. A clip a rule's dimension could not score (an unreadable file, no
audio...) is neither kept nor dropped: it goes to ``failed.jsonl`` with the reason.

With ``shard=(i, n)`` a run scores every n-th clip starting at i into ``shards/i-of-n.jsonl``; when every
shard's scores are complete, the kept / dropped / failed manifests are written from all of them, in
manifest order, exactly as one run would have written them.
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass
from pathlib import Path

from .data import input_items
from .errors import AvjudgeError
from .jsonl import JsonlWriter, read_jsonl, write_json
from .runtime import Engine, media_identity, run_job, summary_path
from .scoring.clip_scorer import ClipScorer
from .scoring.dimensions import DIMENSIONS, Dimension, parse_dimensions

OPERATORS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}
OUTPUTS = ("kept", "dropped", "failed")


class FilterError(AvjudgeError):
    """Filtering that cannot run as asked (rules, shards, outputs); the message names the input and the fix."""


@dataclass(frozen=True)
class Rule:
    dimension: str
    op: str
    threshold: float

    def holds(self, value: float) -> bool:
        return OPERATORS[self.op](value, self.threshold)

    def __str__(self) -> str:
        return f"{self.dimension}{self.op}{self.threshold:g}"


def parse_rules(text: str) -> list[Rule]:
    """The rules of ``text`` (``av>=0.7,nisqa>=3.0``).

    Raises:
        FilterError: a rule it cannot read, none given, or rules no score can pass (``av>=0.5,av<=0.2``; a judge's
            score above 1): a run would drop every clip.
    """
    rules = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        m = re.fullmatch(r"([a-z_]+)\s*(>=|<=|>|<)\s*(-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e-?[0-9]+)?)", part)
        if not m:
            raise FilterError(f"cannot read rule {part!r}; rules look like av>=0.7,nisqa>=3.0")
        # the dimension's own name (a short alias becomes it); an unknown name fails here, listing the known
        rules.append(Rule(parse_dimensions(m.group(1))[0].name, m.group(2), float(m.group(3))))
    if not rules:
        raise FilterError("no rules given; e.g. --rules 'av>=0.7,nisqa>=3.0'")
    for dimension in dict.fromkeys(r.dimension for r in rules):
        _passable(dimension, [r for r in rules if r.dimension == dimension])
    return rules


def _passable(dimension: str, rules: list[Rule]) -> None:
    """Refuse ``dimension``'s rules where no score passes them all (a judge's score lies in [0, 1])."""
    judge = DIMENSIONS[dimension].source == "judge"
    low, low_open, high, high_open = (0.0, False, 1.0, False) if judge else (-math.inf, False, math.inf, False)
    for rule in rules:
        if rule.op in (">=", ">") and (rule.threshold, rule.op == ">") > (low, low_open):
            low, low_open = rule.threshold, rule.op == ">"
        if rule.op in ("<=", "<") and (rule.threshold, rule.op != "<") < (high, not high_open):
            high, high_open = rule.threshold, rule.op == "<"
    if low > high or (low == high and (low_open or high_open)):
        scale = " (a judge's score lies in [0, 1])" if judge else ""
        raise FilterError(
            f"no {dimension} score passes {', '.join(map(str, rules))}{scale}: every clip would be dropped"
        )


def rule_dimensions(rules: list[Rule]) -> list[Dimension]:
    return parse_dimensions(",".join(r.dimension for r in rules))


def parse_shard(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    m = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not m or int(m.group(2)) < 1 or int(m.group(1)) >= int(m.group(2)):
        raise FilterError(f"--shard takes i/n with 0 <= i < n (e.g. 0/4), got {text!r}")
    return int(m.group(1)), int(m.group(2))


def scores_path(out: Path, shard: tuple[int, int] | None) -> Path:
    return out / "scores.jsonl" if shard is None else out / "shards" / f"{shard[0]}-of-{shard[1]}.jsonl"


def verdict(record: dict, rules: list[Rule]) -> tuple[str, list[str]]:
    """("kept" | "dropped" | "failed", the rules that dropped it or the reasons it failed)."""
    if record.get("error"):
        return "failed", [record["error"]]
    scores, errors = record.get("scores") or {}, record.get("errors") or {}
    unscored = [f"{r.dimension}: {errors.get(r.dimension, 'not scored')}" for r in rules if r.dimension not in scores]
    if unscored:
        return "failed", unscored
    broken = [str(r) for r in rules if not r.holds(scores[r.dimension])]
    return ("dropped", broken) if broken else ("kept", [])


def write_outcome(records: list[dict], scored: dict[str, dict], rules: list[Rule], out: Path) -> dict[str, int]:
    """kept / dropped / failed manifests, in manifest order, each record with its scores."""
    counts = dict.fromkeys(OUTPUTS, 0)
    for name in OUTPUTS:  # a merge killed before its end left partial files: start them afresh
        (out / f"{name}.jsonl.tmp").unlink(missing_ok=True)
    writers = {name: JsonlWriter(out / f"{name}.jsonl.tmp") for name in OUTPUTS}
    try:
        for record in records:
            result = scored[record["id"]]
            where, why = verdict(result, rules)
            line = {**record, "scores": result.get("scores") or {}}
            if where == "dropped":
                line["dropped_by"] = why
            elif where == "failed":
                line["failed_because"] = why
            writers[where].write(line)
            counts[where] += 1
    finally:
        for w in writers.values():
            w.close()
    for name in OUTPUTS:
        (out / f"{name}.jsonl.tmp").replace(out / f"{name}.jsonl")
    return counts


def _complete(path: Path, expected: int) -> bool:
    return summary_path(path).exists() and sum(1 for _ in read_jsonl(path)) >= expected


def run_filter(
    manifest: str | Path | list,
    rules: list[Rule],
    out: str | Path,
    scorer: ClipScorer,
    shard: tuple[int, int] | None = None,
    chunk_size: int = 16,
    progress: bool = True,
    engine: Engine | None = None,
) -> dict:
    """Keep the clips whose scores pass every rule; resumable, and shardable across machines.

    Args:
        manifest: what `avjudge.data.input_items` reads: a manifest, a folder of clips, a file, or a list of them.
        rules: from `parse_rules` (``"av>=0.7,nisqa>=3.0"``).
        out: folder for ``kept.jsonl``, ``dropped.jsonl`` and ``failed.jsonl``.
        scorer: a `ClipScorer` for the dimensions the rules name (`rule_dimensions`).
        shard: ``(i, n)``: score every n-th clip from i; the shard that completes the set writes the result.
        chunk_size: clips decoded and scored together.
        progress: show a progress bar.
        engine: what scores the chunks (default: this process; `avjudge.runtime.make_engine`).

    Returns:
        The summary: counts of kept, dropped and failed clips (a clip that cannot be scored fails, never drops).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    missing = [r.dimension for r in rules if r.dimension in scorer.skipped]
    if missing:
        raise FilterError(
            "rules use dimension(s) that cannot be computed here: "
            + "; ".join(f"{d}: {scorer.skipped[d]}" for d in missing)
        )
    records = input_items(manifest)
    mine = records if shard is None else records[shard[0] :: shard[1]]
    path = scores_path(out, shard)
    path.parent.mkdir(parents=True, exist_ok=True)

    process = scorer.job(lambda item, scored: {"id": item["id"], **scored})
    job = run_job(mine, path, process, chunk_size=chunk_size, progress=progress, desc="filter", engine=engine,
                  identity=media_identity(scorer.signature()))  # fmt: skip
    summary = {
        "rules": [str(r) for r in rules],
        "shard": None if shard is None else f"{shard[0]}/{shard[1]}",
        "scored_here": job["total"],
        "errors": job["errors"],
    }
    parts = (
        [(path, len(mine))]
        if shard is None
        else [(scores_path(out, (i, shard[1])), len(records[i :: shard[1]])) for i in range(shard[1])]
    )
    if all(_complete(p, n) for p, n in parts):
        scored = {r["id"]: r for p, _ in parts for r in read_jsonl(p)}
        summary["counts"] = write_outcome(records, scored, rules, out)
        summary["outputs"] = {name: str(out / f"{name}.jsonl") for name in OUTPUTS}
        write_json(out / "filter_summary.json", {**summary, "manifest": str(manifest)})
    else:
        summary["waiting_for_shards"] = [str(p) for p, n in parts if not _complete(p, n)]
    return summary
