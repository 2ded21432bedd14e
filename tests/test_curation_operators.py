"""The curation-engine operators on a few clips, in the default set (the engines' own executors run them in
`tests/test_integrations.py`, slow): data-juicer finds the operators through the entry point alone and builds them
from the shipped recipe; their statistics are the scoring core's; the keep rule over a sample's videos; bad clips
and bad parameters."""

from __future__ import annotations

import math
import uuid
from pathlib import Path

import pytest
import yaml

RECIPE = Path(__file__).resolve().parents[1] / "data_recipes" / "engines" / "datajuicer_avjudge.yaml"


@pytest.fixture(scope="module")
def core_scores(world_records, tiny_judges):
    """The scoring core's AV scores of the first two world clips: what the operators must report."""
    from avjudge.scoring.clip_scorer import ClipScorer
    from avjudge.scoring.dimensions import parse_dimensions

    scorer = ClipScorer(parse_dimensions("av"), {"av": tiny_judges["qwen2_5_omni"]}, {"device": "cpu"})
    records = scorer.score([{"video": r["video"], "captions": {}} for r in world_records[:2]])
    scores = [r["scores"]["av"] for r in records]
    assert scores[0] != scores[1]  # a threshold between them tells the clips apart
    return scores


def _samples(videos: list[list[str]]) -> dict:
    return {"videos": videos, "text": [""] * len(videos), "__dj__stats__": [{} for _ in videos]}


def test_data_juicer_builds_the_shipped_recipe_through_the_entry_point():
    pytest.importorskip("data_juicer", reason="data-juicer is the datajuicer extra")
    from data_juicer.ops import load_ops

    from avjudge.integrations.datajuicer import AvjudgeFilter

    steps = yaml.safe_load(RECIPE.read_text())["process"]
    (op,) = load_ops(steps)  # no import of avjudge in the recipe: the entry point registered the name
    assert type(op) is AvjudgeFilter
    assert op.engine.names == ["av", "dnsmos"]
    assert {(r.dimension, r.op, r.threshold) for r in op.engine.rules} == {("av", ">=", 0.7), ("dnsmos", ">=", 3.0)}


def test_data_juicer_statistics_are_the_scoring_core_scores(world_records, tiny_judges, corrupt, core_scores):
    pytest.importorskip("data_juicer", reason="data-juicer is the datajuicer extra")
    from avjudge.integrations.datajuicer import AvjudgeStats

    first, second = (r["video"] for r in world_records[:2])
    op = AvjudgeStats(dimensions="av", judges={"av": str(tiny_judges["qwen2_5_omni"])}, device="cpu")
    samples = op.compute_stats_batched(_samples([[first, corrupt], [second], []]))
    stats = samples["__dj__stats__"]
    assert stats[0]["avjudge_av"][0] == pytest.approx(core_scores[0], abs=1e-6)
    assert stats[1]["avjudge_av"] == [pytest.approx(core_scores[1], abs=1e-6)]
    assert math.isnan(stats[0]["avjudge_av"][1]) and "corrupt.mp4" in stats[0]["avjudge_error"][1]
    assert stats[0]["avjudge_error"][0] == "" and stats[2]["avjudge_av"] == []  # a sample without videos: no values
    assert op.process_batched(samples) == [True, True, True]  # the statistics operator keeps everything


@pytest.mark.parametrize("any_or_all, kept", [("any", [True, False, False]), ("all", [False, False, False])])
def test_data_juicer_keeps_by_avjudge_filter_rule(world_records, tiny_judges, corrupt, core_scores, any_or_all, kept):
    """A threshold between the two clips' scores: the better clip passes, the corrupt clip never does, a sample
    without videos is not kept."""
    pytest.importorskip("data_juicer", reason="data-juicer is the datajuicer extra")
    from avjudge.integrations.datajuicer import AvjudgeFilter

    low, high = sorted(core_scores)
    better, worse = (world_records[core_scores.index(s)]["video"] for s in (high, low))
    op = AvjudgeFilter(dimensions="av", judges={"av": str(tiny_judges["qwen2_5_omni"])}, min={"av": (low + high) / 2},
                       any_or_all=any_or_all, device="cpu")  # fmt: skip
    samples = op.compute_stats_batched(_samples([[better, corrupt], [worse], []]))
    assert samples["__dj__stats__"][0]["avjudge_passed"] == [True, False]
    assert op.process_batched(samples) == kept


def test_operators_refuse_bad_parameters():
    pytest.importorskip("data_juicer", reason="data-juicer is the datajuicer extra")
    from avjudge.config import ConfigError
    from avjudge.integrations.datajuicer import AvjudgeFilter

    with pytest.raises(ConfigError, match="dnsmos"):
        AvjudgeFilter(dimensions="av", min={"dnsmos": 3.0})  # a threshold on a dimension not scored
    with pytest.raises(ValueError, match="any or all"):
        AvjudgeFilter(dimensions="av", any_or_all="most")


def test_nemo_curator_stage_moves_failing_clips_aside(world_records, tiny_judges, core_scores):
    """Clips scored from their encoded buffers; one below the threshold, one unreadable and one without a buffer
    move to ``filtered_clips`` with the reason, none stops the stage."""
    pytest.importorskip("nemo_curator", reason="NeMo Curator is the curator extra")
    from nemo_curator.tasks.video import Clip, Video, VideoTask

    from avjudge.integrations.nemo_curator import AvjudgeFilterStage

    def clip(name: str, buffer: bytes | None) -> Clip:
        return Clip(uuid=uuid.uuid5(uuid.NAMESPACE_URL, name), source_video=name, span=(0.0, 1.0), buffer=buffer)

    buffers = [Path(r["video"]).read_bytes() for r in world_records[:2]]
    clips = [clip("first", buffers[0]), clip("second", buffers[1])]
    clips += [clip("garbage", b"not a video"), clip("empty", None)]
    task = VideoTask(dataset_name="t", data=Video(input_video=Path(world_records[0]["video"]), clips=clips))
    low, high = sorted(core_scores)
    stage = AvjudgeFilterStage(dimensions="av", judges={"av": str(tiny_judges["qwen2_5_omni"])},
                               min={"av": (low + high) / 2}, device="cpu")  # fmt: skip
    stage.setup()
    video = stage.process(task).data
    better = ["first", "second"][core_scores.index(high)]
    assert [c.source_video for c in video.clips] == [better]
    assert video.clips[0].avjudge["scores"]["av"] == pytest.approx(high, abs=1e-6)
    failed = {c.source_video: c.errors.get("avjudge") for c in video.filtered_clips}
    assert set(failed) == {"first", "second", "garbage", "empty"} - {better}
    assert failed["garbage"] and "no buffer" in failed["empty"]
