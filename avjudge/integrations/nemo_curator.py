"""avjudge's stages for NeMo Curator's video pipelines (``nemo-curator`` 1.4.0; the ``curator`` extra), shaped like its
``ClipAestheticFilterStage``: ``AvjudgeScoreStage`` scores every clip of a video (its encoded ``clip.buffer``,
decoded once by avjudge, the sound too: a NeMo ``Clip`` has no audio of its own) and ``AvjudgeFilterStage`` then
moves the clips outside ``min`` / ``max`` (or not scored) to ``video.filtered_clips``.

Each clip keeps its figures in ``clip.avjudge`` (``{"scores": {dimension: S}, "errors": {dimension: why}}``; a clip
that could not be read: ``clip.errors["avjudge"]``); ``video.clip_stats`` has no place for them, so the filter's
count is ``clip.avjudge["passed"]`` over the clips. Models load once per worker (``setup``), on its GPU where
``gpus`` asks for one.

```python
pipeline = Pipeline(name="curate", stages=[..., ClipTranscodingStage(...),
                    AvjudgeFilterStage(dimensions="av,dnsmos", judges={"av": "/ckpt/av"}, min={"av": 0.7}, gpus=1.0)])
```
Read from NeMo Curator @ 1.4.0: ``nemo_curator/stages/video/filtering/clip_aesthetic_filter.py``,
``nemo_curator/stages/base.py`` (``ProcessingStage``: ``inputs``, ``outputs``, ``resources``, ``setup``,
``process``), ``nemo_curator/tasks/video.py`` (``VideoTask``, ``Video``, ``Clip``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from nemo_curator.stages.base import ProcessingStage
from nemo_curator.stages.resources import Resources
from nemo_curator.tasks.video import VideoTask

from .engine_scorer import EngineScorer


@dataclass
class AvjudgeScoreStage(ProcessingStage[VideoTask, VideoTask]):
    """avjudge's dimensions of every clip of a video, kept on the clip (``clip.avjudge``)."""

    dimensions: str = "av"
    judges: dict[str, str] = field(default_factory=dict)
    min: dict[str, float] = field(default_factory=dict)
    max: dict[str, float] = field(default_factory=dict)
    gpus: float = 0.0
    cpus: float = 1.0
    device: str = "auto"
    judge_batch_size: int = 8
    name: str = "avjudge_score"

    def __post_init__(self) -> None:
        self.resources = Resources(cpus=self.cpus, gpus=self.gpus)
        self.engine = EngineScorer(self.dimensions, dict(self.judges), dict(self.min), dict(self.max), self.device,
                                   self.judge_batch_size)  # fmt: skip

    def inputs(self) -> tuple[list[str], list[str]]:
        return ["data"], ["clips"]

    def outputs(self) -> tuple[list[str], list[str]]:
        return ["data"], ["clips"]

    def setup(self, worker_metadata=None) -> None:  # noqa: ARG002 - the models load here, once per worker
        self.engine.scorer()

    def process(self, task: VideoTask) -> VideoTask:
        clips = task.data.clips
        readable = [clip for clip in clips if clip.buffer]
        for clip in clips:
            if not clip.buffer:
                clip.errors["avjudge"] = "the clip has no buffer (encoded bytes) to score"
                clip.avjudge = {"scores": {}, "errors": {}, "passed": False}
        captions = [{} for _ in readable]  # NeMo's clips carry no prompt; its captions come later, per window
        for clip, record in zip(readable, self.engine.score([clip.buffer for clip in readable], captions)):
            if record.get("error"):
                clip.errors["avjudge"] = record["error"]
            clip.avjudge = {"scores": record.get("scores") or {}, "errors": record.get("errors") or {},
                            "passed": self.engine.passes(record)}  # fmt: skip
        return task


@dataclass
class AvjudgeFilterStage(AvjudgeScoreStage):
    """`AvjudgeScoreStage`, then the clips that do not pass (`avjudge.filter.verdict`: within ``min`` / ``max``,
    scored) moved to ``video.filtered_clips``."""

    name: str = "avjudge_filter"

    def process(self, task: VideoTask) -> VideoTask:
        task = super().process(task)
        video = task.data
        video.filtered_clips.extend(clip for clip in video.clips if not clip.avjudge["passed"])
        video.clips = [clip for clip in video.clips if clip.avjudge["passed"]]
        return task
