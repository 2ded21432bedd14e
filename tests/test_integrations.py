"""avjudge inside the curation engines, run by the engines' own code: data-juicer's executor (locally and on Ray)
with the ``avjudge_filter`` operator its entry point registers, and NeMo Curator's pipeline runner with
``AvjudgeFilterStage``, keep exactly the clips ``avjudge filter`` keeps at the same thresholds, record the same
failures (corrupt files, clips without sound) and give the same statistics (1e-6), on 30 world clips (DNSMOS takes
about 2 s a clip here: 100 clips four times over would take the slow set half an hour)."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow

DIMENSIONS = "av,dnsmos"
BENCHMARK = Path(__file__).resolve().parents[1] / "benchmarks" / "curation_engines.py"


@pytest.fixture(scope="module")
def fixture_clips(tmp_path_factory):
    """30 clips, three of them corrupt and three without sound, as a manifest; and the tiny AV judge."""
    from avjudge.judges.tiny import make_tiny_judges
    from avjudge.media import decode, encode_video
    from avjudge.world import MANIFEST, WorldConfig, make_world

    root = tmp_path_factory.mktemp("curation")
    make_world(WorldConfig(n=24, seed=3, duration=2.0, width=96, height=96, speech="off"), root / "world",
               progress=False)  # fmt: skip
    records = [json.loads(line) for line in (root / "world" / MANIFEST).read_text().splitlines()]
    for record in records:
        record["video"] = str((root / "world" / record["video"]).resolve())
    for k in range(3):
        (root / f"corrupt_{k}.mp4").write_bytes(b"not a video" * (k + 1))
        records.append({"id": f"corrupt_{k}", "video": str(root / f"corrupt_{k}.mp4")})
        clip = decode(records[k]["video"])
        encode_video(root / f"silent_{k}.mp4", clip.frames, clip.fps)  # the picture, no sound track
        records.append({"id": f"silent_{k}", "video": str(root / f"silent_{k}.mp4")})
    manifest = root / "clips.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in records))
    judge = make_tiny_judges(root / "judges")["qwen2_5_omni"]
    return root, manifest, records, str(judge)


@pytest.fixture(scope="module")
def expected(fixture_clips):
    """`avjudge filter`'s verdicts and scores, the thresholds at the median of each dimension (so some clips drop):
    scored once, then filtered again from the same scores."""
    from avjudge.filter import Rule, run_filter
    from avjudge.jsonl import read_jsonl
    from avjudge.scoring.clip_scorer import ClipScorer
    from avjudge.scoring.dimensions import parse_dimensions

    root, manifest, records, judge = fixture_clips
    scorer = ClipScorer(parse_dimensions(DIMENSIONS), {"av": Path(judge)}, {"device": "cpu"})
    out = root / "filter"
    run_filter(manifest, [Rule("av", ">=", -1.0), Rule("dnsmos", ">=", -1.0)], out, scorer, progress=False)
    scores = {r["id"]: r for r in read_jsonl(out / "scores.jsonl")}
    good = [r["scores"] for r in scores.values() if not r.get("error") and len(r.get("scores") or {}) == 2]
    minimum = {d: float(np.median([s[d] for s in good])) for d in ("av", "dnsmos")}
    run_filter(manifest, [Rule(d, ">=", v) for d, v in minimum.items()], out, scorer, progress=False)  # resumed
    kept = [r["id"] for r in read_jsonl(out / "kept.jsonl")]
    failed = [r["id"] for r in read_jsonl(out / "failed.jsonl")]
    assert 0 < len(kept) < len(good) and {f"corrupt_{k}" for k in range(3)} <= set(failed)
    return {"min": minimum, "kept": kept, "failed": failed, "scores": scores}


def _close(stats: dict, expected: dict) -> None:
    if expected.get("error"):
        return
    for dim in ("av", "dnsmos"):
        want = (expected.get("scores") or {}).get(dim)
        got = stats[dim]
        assert (want is None and math.isnan(got)) or abs(got - want) < 1e-6, (dim, got, want)


def _engines():
    """The engine runners of `benchmarks/curation_engines.py` (the engines' own executors)."""
    spec = importlib.util.spec_from_file_location("curation_engines", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("executor", ["default", "ray"])
def test_data_juicer_keeps_what_avjudge_filter_keeps(fixture_clips, expected, tmp_path, executor):
    pytest.importorskip("data_juicer", reason="data-juicer is the datajuicer extra")
    root, manifest, records, judge = fixture_clips
    kept = _engines().data_juicer(records, tmp_path, judge, expected["min"], ray=executor == "ray")
    assert sorted(sample["id"] for sample, _ in kept) == sorted(expected["kept"])
    for sample, stats in kept:
        _close({d: stats[f"avjudge_{d}"][0] for d in ("av", "dnsmos")}, expected["scores"][sample["id"]])


def test_nemo_curator_keeps_what_avjudge_filter_keeps(fixture_clips, expected):
    pytest.importorskip("nemo_curator", reason="NeMo Curator is the curator extra")
    root, manifest, records, judge = fixture_clips
    scores = expected["scores"]
    done = _engines().nemo_curator(records, judge, expected["min"])
    kept = [c for t in done for c in t.data.clips]
    dropped = [c for t in done for c in t.data.filtered_clips]
    assert sorted(c.source_video for c in kept) == sorted(expected["kept"])
    assert {c.source_video for c in dropped if "avjudge" in c.errors} == {
        i for i in expected["failed"] if scores[i].get("error")
    }  # unreadable clips: recorded on the clip, not fatal
    for clip in kept + dropped:
        _close({d: clip.avjudge["scores"].get(d, math.nan) for d in ("av", "dnsmos")}, scores[clip.source_video])
