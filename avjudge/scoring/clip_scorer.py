"""Score clips on dimensions (`avjudge.scoring.dimensions`) through the scoring core: each clip decoded once for every
judge and metric.

Used by the benchmark runner, dataset filtering and the demo. A dimension that cannot run here (no judge
checkpoint, a metric avjudge does not compute yet, a missing metric checkpoint or extra) is skipped
with the reason, once, before any clip is read; a clip that one dimension cannot score gets an error
for that dimension, never a number.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..judges import CheckpointError, Judge
from ..judges.served import ServedEndpoint, load_judge
from ..metrics import CheckpointMissing, Metric, MetricError, get_metric
from ..metrics.checkpoints import checkpoint_root
from ..runtime import ClipJob, checkpoint_identity
from .core import ClipRecord, Scoring
from .dimensions import Dimension, DimensionError
from .jobs import scoring_job
from .scorers import JudgeScorer, MetricScorer

JUDGES_FOLDER = "judges"  # <checkpoint root>/judges/<task>: where judges are found when none is given


def default_judge_dirs() -> dict[str, Path]:
    root = checkpoint_root() / JUDGES_FOLDER
    return {task: root / task for task in ("av", "vt", "at") if (root / task / "config.json").is_file()}


class ClipScorer:
    def __init__(
        self,
        dimensions: list[Dimension],
        judge_dirs: dict[str, Path] | None = None,
        judge_options: dict | None = None,
        workers: int = 2,
        endpoints: dict[str, ServedEndpoint] | None = None,
    ):
        """The judges and metrics of ``dimensions``: judges from ``judge_dirs`` ({task: checkpoint folder}) loaded
        with ``judge_options`` (`Judge.load`'s), or scored by the server ``endpoints`` gives for their task; metrics
        by name. ``workers`` threads decode a batch's clips where the job's engine does not decode them apart."""
        self.dimensions: list[Dimension] = []
        self.skipped: dict[str, str] = {}
        self.judges: dict[str, Judge] = {}
        self.metrics: dict[str, Metric] = {}
        judge_dirs = judge_dirs or {}
        for dim in dimensions:
            reason = (
                self._load_judge(dim, judge_dirs, judge_options or {}, endpoints or {})
                if dim.source == "judge"
                else self._load_metric(dim)
            )
            if reason:
                self.skipped[dim.name] = reason
            else:
                self.dimensions.append(dim)
        if not self.dimensions:
            reasons = "; ".join(f"{k}: {v}" for k, v in self.skipped.items())
            raise DimensionError(f"none of the dimensions asked for can be computed here ({reasons})")
        # the judges and metrics as the scoring core holds them: each clip decoded once for all of them
        scorers = [JudgeScorer(j) for j in self.judges.values()] + [MetricScorer(m) for m in self.metrics.values()]
        self.scoring = Scoring(scorers, workers)

    def _load_judge(self, dim: Dimension, judge_dirs: dict[str, Path], options: dict, endpoints: dict) -> str | None:
        if dim.provider in self.judges:
            return None
        path = judge_dirs.get(dim.provider)
        if path is None:
            return (
                f"no {dim.provider} judge checkpoint: pass --judge {dim.provider}=DIR or put one in "
                f"{checkpoint_root() / JUDGES_FOLDER / dim.provider}"
            )
        try:
            self.judges[dim.provider] = load_judge(dim.provider, path, endpoints.get(dim.provider), **options)
        except CheckpointError as err:  # a folder the user named must be usable: say so, do not skip
            raise DimensionError(f"the {dim.provider} judge at {path} cannot be loaded: {err}") from err
        return None

    def _load_metric(self, dim: Dimension) -> str | None:
        if dim.provider in self.metrics:
            return None
        try:
            self.metrics[dim.provider] = get_metric(dim.provider)
        except (CheckpointMissing, MetricError) as err:
            return str(err)
        return None

    def signature(self) -> str:
        """What scores a clip here, for a resumed job to tell its records apart from another scorer's: the dimensions
        and each judge's checkpoint (its weight files' identity)."""
        judges = [f"{task}={checkpoint_identity(j.adapter.checkpoint)}" for task, j in sorted(self.judges.items())]
        return ",".join(sorted(d.name for d in self.dimensions) + judges)

    def job(self, record: Callable[[dict, dict], dict]) -> ClipJob:
        """A batch job's process that scores each item: ``record(item, scored)`` is what it writes of it."""
        return scoring_job(self.scoring, lambda item, scored: record(item, self.dimension_record(scored)))

    def score(self, items: list[dict]) -> list[dict]:
        """One record per item ({video, captions}): ``scores`` and ``errors`` by dimension, every metric
        output in ``outputs``; a clip that cannot be decoded gets ``error`` and nothing else."""
        return [self.dimension_record(scored) for scored in self.scoring.score(items)]

    def dimension_record(self, scored: ClipRecord) -> dict:
        """What the scorers gave one clip, by dimension."""
        if scored.error is not None:
            return {"error": scored.error}
        record = {"scores": {}, "errors": {}, "outputs": {}}
        for name in self.metrics:
            record["outputs"].update(scored.values.get(name, {}))
        for dim in self.dimensions:
            outcome = scored.outcome(dim.provider)
            if outcome.ok:
                record["scores"][dim.name] = outcome.values[dim.output]
            else:
                record["errors"][dim.name] = outcome.error
        return record
