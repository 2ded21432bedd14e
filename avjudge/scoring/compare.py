"""`avjudge compare`: which of two clips a judge prefers, for every pair of a file.

A pairs file is JSONL, a line per pair: ``{"id", "a": PATH, "b": PATH, "text"?, "utterance"?}`` (relative paths
from the file's folder). Each pair's clips are decoded together (in the job's decoding processes, ahead of the
model) and scored by the judge through the scoring core, and each pair gets P(A ≻ B), P(tie), P(B ≻ A) from the two
log-odds through the judge's preference model (`avjudge.judges.preference`). Written as it goes and resumable; a pair
whose clip fails gets the error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..config import ConfigError
from ..jsonl import read_jsonl
from ..judges import Judge
from ..judges.preference import compare_deltas
from ..runtime import ClipJob, Engine, checkpoint_identity, run_job
from ..runtime.jobs import file_identity
from .core import Decoder, Scoring
from .jobs import judge_row
from .scorers import JudgeScorer, captions_of


def read_pairs(path: str | Path) -> list[dict]:
    """The pairs of a pairs file, checked: each an id and two clips (relative paths from the file's folder)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such pairs file (JSONL of {{id, a, b, text?}})")
    try:
        records = list(read_jsonl(path, strict=True))
    except ValueError as err:
        raise ConfigError(str(err)) from None
    if not records:
        raise ConfigError(f"{path}: no pairs in it (each line: {{id, a, b, text?}})")
    pairs, seen = [], {}
    for line, record in enumerate(records, 1):
        missing = [k for k in ("id", "a", "b") if not isinstance(record.get(k), str) or not record[k]]
        if missing:
            raise ConfigError(f"{path}:{line}: a pair needs {', '.join(missing)} (each line: {{id, a, b, text?}})")
        if record["id"] in seen:  # results are kept by id: a second would overwrite the first, or resume as done
            raise ConfigError(
                f"{path}:{line}: id {record['id']!r} is line {seen[record['id']]}'s too; give each its own"
            )
        seen[record["id"]] = line
        for key in ("text", "utterance"):
            if record.get(key) is not None and not isinstance(record[key], str):
                raise ConfigError(f"{path}:{line}: {key} is a text")
        sides = {k: str(Path(record[k]) if Path(record[k]).is_absolute() else path.parent / record[k]) for k in "ab"}
        pairs.append({**record, **sides})
    return pairs


@dataclass(frozen=True)
class PairDecoder:
    """A compare job's decoding stage: each pair with its two ``clips`` (a `MediaClip`, or why it could not be
    decoded), a clip both sides name decoded once."""

    decoder: Decoder

    def __call__(self, pairs: list[dict]) -> list[dict]:
        sides = self.decoder([{"video": pair[side]} for pair in pairs for side in "ab"])
        return [{**pair, "clips": (sides[2 * k]["clip"], sides[2 * k + 1]["clip"])} for k, pair in enumerate(pairs)]


def compare_pairs(
    judge: Judge,
    pairs: list[dict],
    out: str | Path,
    chunk_size: int = 16,
    progress: bool = True,
    engine: Engine | None = None,
):
    """Each pair's preference by ``judge``, written to ``out`` (JSONL) as it goes; the job's summary. ``engine``: what
    runs the chunks (default: this process, decoding ahead of the judge)."""
    if judge.task.name not in ("av", "vt", "at"):
        raise ConfigError(f"comparing clips needs a Yes / No judge (av, vt or at), not {judge.task.name}")
    task = judge.task.name
    scoring = Scoring([JudgeScorer(judge)], judge.settings.workers, judge.settings.decode_processes)
    model = judge.preference
    scorer = f"{task}:{checkpoint_identity(judge.adapter.checkpoint)}:{json.dumps(model.to_dict())}"

    def score(chunk: list[dict]) -> list[dict]:
        items = [
            {"clip": clip, "captions": captions_of(pair.get("text"), pair.get("utterance"))}
            for pair in chunk
            for clip in pair["clips"]
        ]
        rows = [judge_row(record, task) for record in scoring.score_decoded(items)]
        out_rows = []
        for k, pair in enumerate(chunk):
            a, b = rows[2 * k], rows[2 * k + 1]
            comparison = compare_deltas(model, a["delta"], b["delta"], (a["error"], b["error"]))
            out_rows.append({"id": pair["id"], "a": pair["a"], "b": pair["b"], **comparison.to_dict()})
        return out_rows

    def identity(pair: dict) -> str:
        return "|".join([scorer, file_identity(pair["a"]), file_identity(pair["b"])])

    def summarize(records: list[dict]) -> dict:
        done = [r for r in records if r.get("error") is None]
        return {
            "judge": task,
            "checkpoint": str(judge.adapter.checkpoint),
            "preference": model.to_dict(),
            "prefers_a": sum(r["p_a"] > max(r["p_b"], r["p_tie"]) for r in done),
            "prefers_b": sum(r["p_b"] > max(r["p_a"], r["p_tie"]) for r in done),
            "error_reasons": sorted({r["error"] for r in records if r.get("error")})[:20],
        }

    return run_job(
        pairs,
        out,
        ClipJob(PairDecoder(scoring.decoder()), score, decode_apart=scoring.holds_interpreter),
        chunk_size=chunk_size,
        progress=progress,
        desc=f"compare {task}",
        summarize=summarize,
        identity=identity,
        engine=engine,
    )
