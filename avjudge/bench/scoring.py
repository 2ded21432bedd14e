"""Score clips on benchmark dimensions: each clip decoded once and shared by every judge and metric.

Used by the benchmark runner and by dataset filtering. A dimension that cannot run here (no judge
checkpoint, a metric avjudge does not compute yet, a missing metric checkpoint or extra) is skipped
with the reason, once, before any clip is read; a clip that one dimension cannot score gets an error
for that dimension, never a number.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..jobs import ClipJob, decode_rows
from ..judges import CheckpointError, Judge
from ..judges.served import ServedEndpoint, load_judge
from ..media import MediaClip
from ..metrics import CheckpointMissing, Metric, MetricError, decode_fps, get_metric
from ..metrics.checkpoints import checkpoint_root
from ..prompts import task as get_task
from .dimensions import BenchError, Dimension

JUDGES_FOLDER = "judges"  # <checkpoint root>/judges/<task>: where judges are found when none is given


def default_judge_dirs() -> dict[str, Path]:
    root = checkpoint_root() / JUDGES_FOLDER
    return {task: root / task for task in ("av", "vt", "at") if (root / task / "config.json").is_file()}


def parse_judge_dirs(specs: list[str] | None, defaults: bool = True) -> dict[str, Path]:
    """``["av=ckpt/av", "vt=ckpt/vt"]`` -> {task: dir}; with ``defaults``, judges not given come from the default
    folder."""
    dirs = default_judge_dirs() if defaults else {}
    for spec in specs or []:
        task, sep, path = spec.partition("=")
        if not sep or not path:
            raise BenchError(f"--judge takes TASK=DIR (e.g. av=runs/av/final), got {spec!r}")
        dirs[get_task(task.strip()).name] = Path(path.strip()).expanduser()
    return dirs


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
        by name. ``workers`` decode clips."""
        self.dimensions: list[Dimension] = []
        self.skipped: dict[str, str] = {}
        self.judges: dict[str, Judge] = {}
        self.metrics: dict[str, Metric] = {}
        self.workers = workers
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
            raise BenchError(f"none of the dimensions asked for can be computed here ({reasons})")

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
            raise BenchError(f"the {dim.provider} judge at {path} cannot be loaded: {err}") from err
        return None

    def _load_metric(self, dim: Dimension) -> str | None:
        if dim.provider in self.metrics:
            return None
        try:
            self.metrics[dim.provider] = get_metric(dim.provider)
        except (CheckpointMissing, MetricError) as err:
            return str(err)
        return None

    # -- decoding ---------------------------------------------------------------------------
    @property
    def decode_options(self) -> dict:
        """`avjudge.media.decode`'s arguments to decode a clip once for every judge and metric."""
        tasks = [j.task for j in self.judges.values()]
        metrics = list(self.metrics.values())
        fps = [j.settings.fps for j in self.judges.values() if j.task.needs_video]
        fps += [m.video_fps for m in metrics if m.video_fps]
        return {
            "video": bool(fps),
            "audio": any(t.needs_audio for t in tasks) or any(m.audio for m in metrics),
            "fps": decode_fps(fps) if fps else None,
        }

    def job(self, record: Callable[[dict, dict], dict]) -> ClipJob:
        """A batch job's process that scores each item: ``record(item, scored)`` is what it writes of it."""

        def score_decoded(chunk: list[dict]) -> list[dict]:
            return [record(item, scored) for item, scored in zip(chunk, self.score_decoded(chunk))]

        return ClipJob(self.decode_options, score_decoded, self.workers)

    # -- scoring ----------------------------------------------------------------------------
    def score(self, items: list[dict]) -> list[dict]:
        """One record per item ({video, captions}): ``scores`` and ``errors`` by dimension, every metric
        output in ``outputs``; a clip that cannot be decoded gets ``error`` and nothing else."""
        return self.score_decoded(decode_rows(self.decode_options, items, self.workers))

    def score_decoded(self, items: list[dict]) -> list[dict]:
        """`score` of items whose ``clip`` is decoded already (`avjudge.jobs.decode_rows`)."""
        clips = [item["clip"] for item in items]
        records = [{"error": c} if isinstance(c, str) else {"scores": {}, "errors": {}, "outputs": {}} for c in clips]
        ok = [i for i, c in enumerate(clips) if isinstance(c, MediaClip)]
        for dim in self.dimensions:
            if dim.source == "judge":
                self._judge(dim, items, clips, records, ok)
            else:
                self._metric(dim, items, clips, records, ok)
        return records

    def _judge(self, dim: Dimension, items, clips, records, ok) -> None:
        judge = self.judges[dim.provider]
        field = judge.task.caption_field
        todo = []
        for i in ok:
            captions = items[i].get("captions") or {}
            if field and not captions.get(field):
                records[i]["errors"][dim.name] = f"no {field} caption for the {dim.provider} judge"
            else:
                todo.append(i)
        if not todo:
            return
        texts = [items[i]["captions"][field] for i in todo] if field else None
        utterances = [(items[i].get("captions") or {}).get("utterance") or None for i in todo]
        results = judge.score([clips[i] for i in todo], texts, utterances if judge.task.name == "at" else None)
        for i, result in zip(todo, results):
            if result.error:
                records[i]["errors"][dim.name] = result.error
            else:
                records[i]["scores"][dim.name] = result.score

    def _metric(self, dim: Dimension, items, clips, records, ok) -> None:
        metric = self.metrics[dim.provider]
        for i in ok:
            outputs = records[i]["outputs"]
            if dim.output not in outputs:
                try:
                    outputs.update(metric.compute(clips[i], captions=items[i].get("captions") or {}))
                except MetricError as err:
                    records[i]["errors"][dim.name] = str(err)
                    continue
            records[i]["scores"][dim.name] = outputs[dim.output]
