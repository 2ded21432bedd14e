"""avjudge's operators for data-juicer (``py-data-juicer`` 1.6.1; the ``datajuicer`` extra), registered when
data-juicer starts through its ``data_juicer.ops`` entry point (avjudge's ``pyproject.toml``), so a recipe names them
like any other operator:

```yaml
process:
  - avjudge_filter:
      dimensions: av,dnsmos                  # judges, metrics and AVBench dimensions (avjudge.scoring.dimensions)
      judges: {av: /ckpt/av}                 # judge folders by task
      min: {av: 0.7, dnsmos: 3.0}            # keep a video at or above these ...
      max: {}                                # ... and at or below these
      any_or_all: any                        # over a sample's videos
```

``avjudge_filter`` writes each video's scores under ``__dj__stats__``: ``avjudge_<dimension>`` (a list, one value a
video; NaN where a video could not be scored), ``avjudge_error`` (why, ``""`` where it was scored) and
``avjudge_passed`` (whether the video passes the thresholds), then keeps a
sample whose videos pass (``any`` or ``all``) by `avjudge.filter.verdict`'s rule: a video that failed never passes,
and the job never stops for one. ``avjudge_stats`` writes the same statistics and keeps every sample (for analysis).
Read from data-juicer @ 1.6.1: ``data_juicer/ops/base_op.py`` (``Filter``: ``compute_stats_batched`` /
``process_batched``, ``_accelerator``, ``_batched_op``), ``data_juicer/ops/__init__.py`` (``load_op_plugins``),
``data_juicer/utils/constant.py`` (``Fields.stats``)."""

from __future__ import annotations

from data_juicer.ops.base_op import OPERATORS, Filter
from data_juicer.utils.constant import Fields
from data_juicer.utils.mm_utils import remove_special_tokens

from ..scoring import captions_of
from .engine_scorer import EngineScorer, stat_key

FILTER, STATS = "avjudge_filter", "avjudge_stats"
ANY_OR_ALL = ("any", "all")


class _AvjudgeOperator(Filter):
    """The shared operator: scores every video of a batch of samples through avjudge's scoring core."""

    _accelerator = "cuda"  # data-juicer gives a GPU actor where there is one; without, the CPU
    _batched_op = True

    def __init__(
        self,
        dimensions: str = "av",
        judges: dict | None = None,
        min: dict | None = None,
        max: dict | None = None,
        any_or_all: str = "any",
        caption_key: str | None = None,
        device: str = "auto",
        judge_batch_size: int = 8,
        *args,
        **kwargs,
    ):
        """
        :param dimensions: comma-separated avjudge dimensions (``avjudge.scoring.dimensions``).
        :param judges: judge checkpoint folders by task, e.g. ``{av: /ckpt/av}``.
        :param min: the lowest score kept, by dimension.
        :param max: the highest score kept, by dimension.
        :param any_or_all: keep a sample where any, or all, of its videos pass.
        :param caption_key: the field holding each sample's caption (a vt / at judge's text); default its text,
            data-juicer's special tokens removed.
        :param device: where the models run: auto (CUDA where there is one), cpu, cuda.
        :param judge_batch_size: clips in one forward pass of a judge.
        """
        super().__init__(*args, **kwargs)
        if any_or_all not in ANY_OR_ALL:
            raise ValueError(f"any_or_all is any or all, not {any_or_all!r}")
        self.any_or_all, self.caption_key = any_or_all, caption_key
        self.engine = EngineScorer(dimensions, dict(judges or {}), dict(min or {}), dict(max or {}), device,
                                   judge_batch_size)  # fmt: skip

    def _caption(self, samples: dict, i: int) -> str | None:
        text = samples[self.caption_key][i] if self.caption_key else samples.get(self.text_key, [None] * (i + 1))[i]
        return remove_special_tokens(text) if isinstance(text, str) and text else None

    def compute_stats_batched(self, samples, rank=None, context=False):
        videos = samples[self.video_key]
        where = [(i, video) for i, paths in enumerate(videos) for video in paths or []]
        captions = [captions_of(self._caption(samples, i)) for i, _ in where]
        records = self.engine.score([video for _, video in where], captions)
        by_sample: dict[int, list[dict]] = {i: [] for i in range(len(videos))}
        for (i, _), record in zip(where, records):
            by_sample[i].append(record)
        for i, found in by_sample.items():
            stats = samples[Fields.stats][i]
            each = [self.engine.statistics(r) for r in found]
            for name in (*self.engine.names, "error"):
                stats[stat_key(name)] = [s[stat_key(name)] for s in each]
            stats[stat_key("passed")] = [self.engine.passes(r) for r in found]
        return samples

    def process_batched(self, samples):
        decide = any if self.any_or_all == "any" else all
        return [
            bool(stats[stat_key("passed")]) and decide(stats[stat_key("passed")]) for stats in samples[Fields.stats]
        ]


@OPERATORS.register_module(FILTER)
class AvjudgeFilter(_AvjudgeOperator):
    """Keep samples whose videos avjudge's judges and metrics score within ``min`` / ``max``."""


@OPERATORS.register_module(STATS)
class AvjudgeStats(_AvjudgeOperator):
    """avjudge's scores of every video as statistics; every sample kept."""

    def process_batched(self, samples):
        return [True] * len(samples[Fields.stats])
