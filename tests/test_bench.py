"""AVBench runner, reports, human alignment, curation and filtering."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from avjudge.bench import BenchError, PromptEntry, discover, load_prompts
from avjudge.bench.align import align, load_judgments
from avjudge.bench.curate import curate, text_hash
from avjudge.bench.prompt_files import write_prompts
from avjudge.bench.report import normalized, write_report
from avjudge.bench.runner import SAMPLES, run_bench
from avjudge.bench.synthetic import make_model_folders, world_prompts
from avjudge.filter import FilterError, parse_rules, parse_shard, run_filter
from avjudge.jsonl import read_jsonl
from avjudge.scoring.clip_scorer import ClipScorer
from avjudge.scoring.dimensions import DimensionError, parse_dimensions

from .helpers import refused, rendered_dom, requires_chromium, requires_espeak, table_rows

# ---- human alignment: every number below is worked out by hand in the comments --------------

JUDGMENTS = """prompt_id,model_a,model_b,dimension,winner,annotator
p1,m1,m2,av,A,ann1
p1,m2,m3,av,a,ann1
p1,m1,m3,av,tie,ann2
p2,m1,m2,av,B,ann2
p2,m2,m3,av,A,ann1
p2,m1,m3,av,B,ann2
p3,m1,m2,av,A,ann1
"""
SCORES = {
    ("m1", "p1"): {"av": 0.9},
    ("m2", "p1"): {"av": 0.5},
    ("m3", "p1"): {"av": 0.2},
    ("m1", "p2"): {"av": 0.4},
    ("m2", "p2"): {"av": 0.6},
    ("m3", "p2"): {"av": 0.6},
}


def test_alignment_statistics_equal_hand_computed_values(tmp_path):
    path = tmp_path / "judgments.csv"
    path.write_text(JUDGMENTS)
    result = align(load_judgments(path), SCORES, bootstrap=200)["av"]
    # p3 has no scores: left out
    assert (result["judgments"], result["unscored"], result["used"]) == (7, 1, 6)
    # human:  m1 W T L L -> 1.5/4; m2 L W W W -> 3/4; m3 L T L W -> 1.5/4
    # metric: m1 W W L L -> 2/4;   m2 L W W T -> 2.5/4; m3 L L T W -> 1.5/4 (p2 m2 = m3 is a metric tie)
    wr = result["models"]
    assert [wr[m]["human_win_ratio"] for m in ("m1", "m2", "m3")] == pytest.approx([0.375, 0.75, 0.375])
    assert [wr[m]["metric_win_ratio"] for m in ("m1", "m2", "m3")] == pytest.approx([0.5, 0.625, 0.375])
    assert result["pearson"]["value"] == pytest.approx(np.sqrt(3) / 2)
    assert result["spearman"]["value"] == pytest.approx(np.sqrt(3) / 2)
    assert result["kendall"]["value"] == pytest.approx(2 / np.sqrt(6))  # tau-b: 2 concordant, 1 tie in y
    lo, hi = result["pearson"]["ci95"]
    assert -1 <= lo <= hi <= 1
    # human winners on 5 judgments (the tie left out): 4 agree, 1 metric tie counts half
    assert result["accuracy_2afc"] == pytest.approx(4.5 / 5)
    # acc_eq at eps 0: the human tie (metric says A) and the metric tie (human says A) disagree
    assert result["tie_aware_accuracy"]["value"] == pytest.approx(4 / 6)
    assert result["tie_calibrated_accuracy"] == {"eps": 0.0, "value": pytest.approx(4 / 6)}


def test_every_metric_dimension_has_a_registered_metric():
    from avjudge.metrics import METRICS
    from avjudge.scoring.dimensions import DIMENSIONS

    assert [d.provider for d in DIMENSIONS.values() if d.source == "metric" and d.provider not in METRICS] == []


def test_lower_is_better_dimensions_flip_the_metric_outcome():
    from avjudge.bench.align import Judgment, align

    # A's clip scores 0.9 and B's 0.5 on both: more sync (av) is better, more offset (desync) is worse
    judgments = [Judgment("p1", "A", "B", dim, "A") for dim in ("av", "desync")]
    scores = {("A", "p1"): {"av": 0.9, "desync": 0.9}, ("B", "p1"): {"av": 0.5, "desync": 0.5}}
    results = align(judgments, scores, bootstrap=0)
    assert results["av"]["models"]["A"]["metric_win_ratio"] == 1.0
    assert results["desync"]["models"]["A"]["metric_win_ratio"] == 0.0
    assert align(judgments, scores, eps=0.5, bootstrap=0)["av"]["models"]["A"]["metric_win_ratio"] == 0.5  # a tie


def test_judgments_csv_errors_name_the_line(tmp_path):
    path = tmp_path / "j.csv"
    path.write_text("prompt_id,model_a,model_b,dimension,winner\np1,m1,m2,av,maybe\n")
    with pytest.raises(BenchError, match=r"j.csv:2: winner must be A, B or tie"):
        load_judgments(path)
    path.write_text("prompt_id,model_a,dimension,winner\n")
    with pytest.raises(BenchError, match="model_b"):
        load_judgments(path)


# ---- suites, discovery, curation --------------------------------------------------------------


def _entry(i, **attrs):
    return PromptEntry(id=str(i), prompt_vision=f"video {i}", prompt_audio=f"audio {i}", attributes=attrs)


def test_suite_format_splits_and_errors(tmp_path):
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "normal.json").write_text(
        json.dumps(
            [
                {
                    "id": 1,
                    "prompt_vision": "v",
                    "prompt_audio": "a",
                    "utterance": "hi",
                    "full_prompt": "f",
                    "language": "en",
                }
            ]
        )
    )
    (folder / "hard.json").write_text(json.dumps([{"id": "2", "prompt_vision": "v", "prompt_audio": "a"}]))
    entries = load_prompts(folder)
    assert {(e.id, e.split) for e in entries} == {("1", "normal"), ("2", "hard")}
    assert entries[-1].attributes == {"language": "en"} and entries[-1].captions()["utterance"] == "hi"
    (folder / "hard.json").write_text(json.dumps([{"id": "1", "prompt_vision": "v", "prompt_audio": "a"}]))
    with pytest.raises(BenchError, match="repeat"):
        load_prompts(folder)
    (folder / "hard.json").write_text(json.dumps([{"id": "3", "prompt_audio": "a"}]))
    with pytest.raises(BenchError, match=r"hard.json entry 0: entry has no 'prompt_vision'"):
        load_prompts(folder)
    # a prompt that is not text was read as it was (a judge then scored against "5"); an empty file scored nothing
    (folder / "hard.json").write_text(json.dumps([{"id": "3", "prompt_vision": 5, "prompt_audio": "a"}]))
    with pytest.raises(BenchError, match=r"hard.json entry 0: prompt_vision must be text, got \[5\]"):
        load_prompts(folder)
    (folder / "normal.json").write_text("[]")
    (folder / "hard.json").unlink()
    with pytest.raises(BenchError, match="no prompt entries in it"):
        load_prompts(folder)


def test_discovery_matches_ids_exactly_and_lists_missing(tmp_path):
    for name in ("m1/12.mp4", "m1/120.mp4", "m2/12_seed3.mp4", "m2/12_seed1.mp4"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    found = discover([_entry(12), _entry(120), _entry(7)], tmp_path)
    assert found.clips["m1"]["12"].name == "12.mp4" and found.clips["m1"]["120"].name == "120.mp4"
    assert found.clips["m2"]["12"].name == "12_seed1.mp4" and "120" not in found.clips["m2"]
    assert found.missing == {"m1": ["7"], "m2": ["120", "7"]}
    assert found.ambiguous == {"m2": {"12": ["m2/12_seed1.mp4", "m2/12_seed3.mp4"]}}
    with pytest.raises(BenchError, match="no folder for model"):
        discover([_entry(1)], tmp_path, ["m9"])
    # not one clip of any prompt: a run would score nothing and exit 0 (clips named by another id scheme)
    with pytest.raises(BenchError, match=r"no clip of any of the 2 prompts in m1, m2: .* e.g. m1/p1.mp4"):
        discover([_entry("p1"), _entry("p2")], tmp_path)


def test_curation_respects_the_cap_and_drops_training_prompts(tmp_path):
    langs = ["en"] * 30 + ["zh"] * 6 + ["es"] * 4
    candidates = [_entry(i, language=lang, speakers=1 + i % 2) for i, lang in enumerate(langs)]
    chosen, report = curate(candidates, 10, ["language", "speakers"], cap=0.5, seed=3)
    assert len(chosen) == 10 and report["shortfall"] == 0
    counts = {v: d["count"] for v, d in report["distribution"]["language"].items()}
    assert counts["en"] == 5 and sum(counts.values()) == 10  # en alone could fill it: capped at half
    assert max(d["count"] for d in report["distribution"]["speakers"].values()) <= 5
    assert counts == {lang: sum(e.attributes["language"] == lang for e in chosen) for lang in counts}
    # a candidate whose caption a training manifest holds (up to case and punctuation) is never chosen
    train = tmp_path / "train.jsonl"
    train.write_text(json.dumps({"id": "t", "video": "t.mp4", "captions": {"video": "VIDEO 31!"}}) + "\n")
    from avjudge.bench.curate import training_hashes

    assert text_hash("VIDEO 31!") == text_hash("video 31")
    chosen, report = curate(candidates, 40, ["language"], cap=1.0, exclude_hashes=training_hashes(train))
    assert report["duplicates_of_training"] == 1 and "31" not in {e.id for e in chosen}
    # too few of every value: the shortfall is reported, the cap still holds
    chosen, report = curate(candidates, 30, ["language"], cap=0.5)
    assert report["shortfall"] == 30 - 15 - 6 - 4 and report["distribution"]["language"]["en"]["count"] == 15


# ---- runner, report, filter -------------------------------------------------------------------


@pytest.fixture(scope="module")
def bench_input(small_world, tmp_path_factory):
    root = tmp_path_factory.mktemp("bench_input")
    manifest = small_world / "world.jsonl"
    suite = write_prompts(world_prompts(manifest), root / "suite.json")
    make_model_folders(manifest, root / "videos", ["reference", "noisy"])
    return suite, root / "videos", manifest


@pytest.fixture(scope="module")
def scorer(tiny_judges):
    return ClipScorer(
        parse_dimensions("av,at,dnsmos,syncnet,dover"),
        {"av": tiny_judges["qwen2_5_omni"], "at": tiny_judges["qwen2_audio"]},
        {"batch_size": 4},
    )


def test_scorer_skips_what_cannot_run_with_the_reason(scorer, tmp_path, monkeypatch):
    assert [d.name for d in scorer.dimensions] == ["av", "at", "dnsmos"]
    assert "DOVER_plus_plus.pth is missing" in scorer.skipped["dover"]
    assert "syncnet_v2.model is missing" in scorer.skipped["syncnet"]  # no weights in ./checkpoints
    monkeypatch.setenv("AVJUDGE_CHECKPOINTS", str(tmp_path))
    with pytest.raises(DimensionError, match=r"none of the dimensions.*--judge vt=DIR"):
        ClipScorer(parse_dimensions("vt"))


@requires_espeak  # its checks read DNSMOS on the clips with speech
def test_bench_run_scores_every_model_resumes_and_reports(bench_input, scorer, tmp_path):
    suite, videos, _ = bench_input
    entries = load_prompts(suite)
    videos_copy = tmp_path / "videos"
    shutil.copytree(videos, videos_copy)
    broken = videos_copy / "noisy" / f"{entries[0].id}.mp4"
    broken.write_bytes(b"not a video")  # one bad clip: an error, never a 0, and the batch goes on
    (videos_copy / "noisy" / f"{entries[1].id}.mp4").unlink()  # a missing clip is listed
    out = tmp_path / "bench"
    summary = run_bench(entries, videos_copy, out, scorer, progress=False)
    n = len(entries)
    assert summary["clips"] == 2 * n - 1 and summary["decode_errors"] == 1
    assert summary["missing"] == {"noisy": [entries[1].id]}
    records = list(read_jsonl(out / SAMPLES))
    bad = next(r for r in records if r["video"] == str(broken))
    assert "scores" not in bad and bad["error"]
    for r in records:
        if r is not bad:
            assert set(r["scores"]) == {"av", "at", "dnsmos"}
            assert all(0 < r["scores"][d] < 1 for d in ("av", "at"))
    # the summary's statistics are those of the per-sample records
    split = entries[2].split
    for model in ("reference", "noisy"):
        values = [
            r["scores"]["dnsmos"] for r in records if r["model"] == model and r["split"] == split and "scores" in r
        ]
        cell = summary["results"][model][split]["dnsmos"]
        assert cell["n"] == len(values) and cell["mean"] == pytest.approx(np.mean(values))
    errors = sum(summary["results"]["noisy"][s]["dnsmos"]["errors"] for s in summary["results"]["noisy"])
    assert errors == 1
    # noise at 0-5 dB SNR lowers DNSMOS on the clips with speech (real DNSMOS weights)
    speech = {e.id for e in entries if e.utterance} - {entries[0].id, entries[1].id}
    by = {(r["model"], r["prompt_id"]): r for r in records}
    assert speech and all(
        by[("noisy", p)]["scores"]["dnsmos"] < by[("reference", p)]["scores"]["dnsmos"] for p in speech
    )

    # killed mid-write: a torn last line and half the records; the rerun completes without duplicates
    lines = (out / SAMPLES).read_text().splitlines(keepends=True)
    (out / SAMPLES).write_text("".join(lines[: len(lines) // 2]) + lines[len(lines) // 2][:20])
    again = run_bench(entries, videos_copy, out, scorer, progress=False)
    ids = [r["id"] for r in read_jsonl(out / SAMPLES)]
    assert len(ids) == len(set(ids)) == 2 * n - 1
    for model, cells in summary["results"].items():
        for s, dims in cells.items():
            for d, cell in dims.items():
                assert again["results"][model][s][d]["n"] == cell["n"]
                assert again["results"][model][s][d]["mean"] == pytest.approx(cell["mean"], abs=1e-6)

    written = write_report(out)
    md = (out / f"leaderboard_{split}.md").read_text()
    assert "| reference |" in md and "Audio Quality (DNSMOS)" in md and " ± " in md and "(n=" in md
    assert all((out / f"radar_{s}.png").stat().st_size > 1000 for s in summary["results"]["reference"])
    assert written["html"] == [str(out / "report.html")]
    from avjudge.pages import STYLE

    assert STYLE in (out / "report.html").read_text()  # the one style of every page (the reward audit's too)


@requires_chromium
def test_html_report_renders_in_headless_chromium(tmp_path):
    records = [
        {
            "id": f"{m}/{p}",
            "model": m,
            "prompt_id": p,
            "split": s,
            "video": str(tmp_path / m / f"{p}.mp4"),
            "scores": {"av": 0.1 * k},
            "errors": {},
        }
        for k, (m, p, s) in enumerate([("a", "1", "normal"), ("a", "2", "hard"), ("b", "1", "normal")])
    ]
    records.append(
        {"id": "b/2", "model": "b", "prompt_id": "2", "split": "hard", "video": "x.mp4", "error": "x.mp4: cannot open"}
    )
    summary = {
        "dimensions": ["av"],
        "labels": {"av": "AV-Consistency"},
        "higher_is_better": {"av": True},
        "skipped_dimensions": {},
        "models": ["a", "b"],
        "prompts": {"normal": 1, "hard": 1},
        "clips": 4,
        "samples": SAMPLES,
        "results": {
            m: {s: {"av": {"mean": 0.5, "std": 0.0, "n": 1, "errors": 0}} for s in ("normal", "hard")}
            for m in ("a", "b")
        },
    }
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / SAMPLES).write_text("".join(json.dumps(r) + "\n" for r in records))
    written = write_report(tmp_path)
    dom = rendered_dom(tmp_path / "report.html", tmp_path / "chromium")
    rows = table_rows(dom)
    # the drill-down rows exist only if the page's script ran in the browser; the splits are a table, not JSON
    assert rows == {"splits": [3], "leaderboard": [3, 3], "samples": [4 + 1]}
    assert "4 samples" in dom and dom.count('class="err"') == 1 and "<video" in dom
    assert '{"normal"' not in dom and "0.500 ± 0.000 (n=1)" in dom  # each cell's spread and clip count
    # one prompt a split: no best is crowned, and the page says why
    assert 'class="best"' not in dom and "class=best" not in dom and dom.count("too few (under 5)") == 2
    # one dimension: bars, not a radar (a radar of one axis is a point)
    assert written["normal"][-1].endswith("bars_normal.png") and "bar chart, normal split" in dom


def test_report_normalises_each_dimension_over_models():
    summary = {
        "models": ["a", "b", "c"],
        "dimensions": ["x", "y"],
        "higher_is_better": {"x": True, "y": False},
        "results": {
            m: {"normal": {"x": {"mean": vx}, "y": {"mean": vy}}}
            for m, vx, vy in (("a", 1.0, 5.0), ("b", 3.0, 5.0), ("c", 2.0, None))
        },
    }
    models, values = normalized(summary, "normal")
    assert models == ["a", "b", "c"]
    assert values[:, 0] == pytest.approx([0.0, 1.0, 0.5])
    assert values[:, 1] == pytest.approx([0.5, 0.5, 0.0])  # a tie is 0.5; nothing scored is 0


def test_filter_shards_combine_into_the_single_run_result(bench_input, tiny_judges, tmp_path):
    _, _, manifest = bench_input
    records = [json.loads(line) for line in manifest.read_text().splitlines()]
    records[2]["video"] = "clips/does_not_exist.mp4"
    broken_manifest = manifest.parent / "filter_manifest.jsonl"
    broken_manifest.write_text("".join(json.dumps(r) + "\n" for r in records))
    rules = parse_rules("at>=0.5, dnsmos>1.5")
    scorer = ClipScorer(parse_dimensions("at,dnsmos"), {"at": tiny_judges["qwen2_audio"]})
    single = run_filter(broken_manifest, rules, tmp_path / "single", scorer, progress=False)
    assert sum(single["counts"].values()) == len(records) and single["counts"]["failed"] == 1
    first = run_filter(broken_manifest, rules, tmp_path / "sharded", scorer, shard=(1, 3), progress=False)
    assert "counts" not in first and len(first["waiting_for_shards"]) == 2
    for i in (2, 0):
        last = run_filter(broken_manifest, rules, tmp_path / "sharded", scorer, shard=(i, 3), progress=False)
    assert last["counts"] == single["counts"]
    for name in ("kept", "dropped", "failed"):
        a = list(read_jsonl(tmp_path / "single" / f"{name}.jsonl"))
        b = list(read_jsonl(tmp_path / "sharded" / f"{name}.jsonl"))
        assert [r["id"] for r in a] == [r["id"] for r in b]
        for ra, rb in zip(a, b):
            assert rb["scores"] == pytest.approx(ra["scores"], abs=1e-5)
    dropped = list(read_jsonl(tmp_path / "single" / "dropped.jsonl"))
    kept = list(read_jsonl(tmp_path / "single" / "kept.jsonl"))
    for r in dropped:
        assert r["dropped_by"] == [str(rule) for rule in rules if not rule.holds(r["scores"][rule.dimension])]
    assert all(r["scores"]["at"] >= 0.5 and r["scores"]["dnsmos"] > 1.5 for r in kept)
    failed = list(read_jsonl(tmp_path / "single" / "failed.jsonl"))
    assert failed[0]["id"] == records[2]["id"] and "does_not_exist" in failed[0]["failed_because"][0]


def test_filter_rules_and_shards_are_checked():
    assert [str(r) for r in parse_rules("av>=0.7,nisqa<4")] == ["av>=0.7", "nisqa<4"]
    with pytest.raises(DimensionError, match="unknown dimension"):
        parse_rules("loudness>=3")
    with pytest.raises(FilterError, match="rules look like"):
        parse_rules("av=>0.7")
    with pytest.raises(FilterError, match="rules look like"):  # was float()'s ValueError traceback
        parse_rules("av>=1.2.3")
    # rules no score can pass dropped every clip, exit 0; a judge's score lies in [0, 1]
    for never in ("av>=0.5,av<=0.2", "av>=0.5,av<0.5", "av>1", "vt>=1.5", "at<0", "nisqa>=3,nisqa<2.5"):
        with pytest.raises(FilterError, match="every clip would be dropped"):
            parse_rules(never)
    for passable in ("av>=0.5,av<=0.5", "av>=1", "av>0.2,av<0.3", "nisqa>=30", "desync<=0.2", "av>=.5"):
        assert parse_rules(passable)
    assert parse_shard("2/4") == (2, 4)
    with pytest.raises(FilterError, match="0 <= i < n"):
        parse_shard("4/4")


@requires_espeak  # its checks read DNSMOS on the clips with speech
def test_bench_commands_end_to_end(small_world, tmp_path, capsys, monkeypatch):
    from avjudge.cli import main

    monkeypatch.setenv("AVJUDGE_CHECKPOINTS", str(tmp_path / "no_checkpoints"))
    assert main(["bench", "synth", "--input", str(small_world), "--out", str(tmp_path / "in")]) == 0
    assert sorted(p.name for p in (tmp_path / "in" / "videos").iterdir()) == [
        "mismatched",
        "noisy",
        "reference",
        "shifted",
    ]
    out = tmp_path / "bench"
    assert (
        main(
            [
                "bench",
                "run",
                "--prompts",
                str(tmp_path / "in" / "prompts.json"),
                "--input",
                str(tmp_path / "in" / "videos"),
                "--models",
                "reference,noisy",
                "--dims",
                "av,dnsmos",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "skipping av: no av judge checkpoint: pass --judge av=DIR" in printed
    assert main(["bench", "report", "--input", str(out)]) == 0
    assert "| reference |" in capsys.readouterr().out and (out / "report.html").exists()
    # people preferred the reference on every prompt: DNSMOS agrees on the clips with speech
    prompts = [e["id"] for e in json.loads((tmp_path / "in" / "prompts.json").read_text()) if e["utterance"]]
    csv_path = tmp_path / "human.csv"
    csv_path.write_text(
        "prompt_id,model_a,model_b,dimension,winner,annotator\n"
        + "".join(f"{p},reference,noisy,dnsmos,A,x\n" for p in prompts)
    )
    assert main(["bench", "align", "--input", str(out), "--judgments", str(csv_path), "--bootstrap", "50"]) == 0
    result = json.loads((out / "align.json").read_text())["dnsmos"]
    assert result["accuracy_2afc"] == 1.0 and result["models"]["reference"]["human_win_ratio"] == 1.0
    assert (out / "align_dnsmos.png").exists()
    capsys.readouterr()
    votes = tmp_path / "votes.csv"  # the same preference as published vote counts: three votes a prompt
    votes.write_text(
        "prompt_id,model_a,model_b,dimension,votes_a,votes_b\n"
        + "".join(f"{p},reference,noisy,dnsmos,3,0\n" for p in prompts)
    )
    args = [
        "bench",
        "align",
        "--input",
        str(out),
        "--judgments",
        str(votes),
        "--bootstrap",
        "50",
        "--resample",
        "prompt",
    ]
    assert main(args) == 0
    result = json.loads((out / "align.json").read_text())["dnsmos"]
    assert result["used"] == 3 * len(prompts) and result["accuracy_2afc_ci95"] == [1.0, 1.0]
    assert result["resampling"] == {"unit": "prompt", "clusters": len(prompts), "draws": 50}
    assert f"resampling {len(prompts)} prompts" in capsys.readouterr().out
    assert (
        main(
            [
                "bench",
                "run",
                "--prompts",
                str(tmp_path / "in" / "prompts.json"),
                "--input",
                str(tmp_path / "in" / "videos"),
                "--dims",
                "av",
                "--out",
                str(out),
            ]
        )
        == 2
    )
    assert "none of the dimensions" in capsys.readouterr().err


def test_a_filter_rerun_scores_a_new_dimension_and_a_rewritten_clip_again(bench_input, tiny_judges, tmp_path):
    """Rerun on one --out: a rule on a dimension the first run did not score is scored for every clip (not failed as
    unscored), and a clip overwritten with garbage since is scored again and fails instead of staying kept."""
    _, _, manifest = bench_input
    records = [json.loads(line) for line in manifest.read_text().splitlines()]
    copy = tmp_path / "clips"
    copy.mkdir()
    for r in records:
        source = manifest.parent / r["video"]
        (copy / source.name).write_bytes(source.read_bytes())
        r["video"] = str(copy / source.name)
    local = tmp_path / "manifest.jsonl"
    local.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "filtered"
    first = run_filter(local, parse_rules("dnsmos>0"), out, ClipScorer(parse_dimensions("dnsmos")), progress=False)
    assert first["counts"]["failed"] == 0
    scorer = ClipScorer(parse_dimensions("at,dnsmos"), {"at": tiny_judges["qwen2_audio"]})
    second = run_filter(local, parse_rules("at>=0,dnsmos>0"), out, scorer, progress=False)
    assert second["counts"] == {"kept": len(records), "dropped": 0, "failed": 0}
    assert all(set(r["scores"]) == {"at", "dnsmos"} for r in read_jsonl(out / "kept.jsonl"))
    Path(records[0]["video"]).write_bytes(b"not a video any more")
    third = run_filter(local, parse_rules("at>=0,dnsmos>0"), out, scorer, progress=False)
    assert third["counts"] == {"kept": len(records) - 1, "dropped": 0, "failed": 1}
    (failed,) = read_jsonl(out / "failed.jsonl")
    assert failed["id"] == records[0]["id"]


def _scored_bench(folder: Path, scores: dict[tuple[str, str], float]) -> Path:
    """A bench run's folder as `bench run` leaves it: each (model, prompt)'s DNSMOS score."""
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps({"samples": SAMPLES}))
    rows = [{"model": m, "prompt_id": p, "scores": {"dnsmos": s}} for (m, p), s in scores.items()]
    (folder / SAMPLES).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_alignment_refuses_judgments_that_match_no_scored_pair_and_rows_missing_a_column(tmp_path, capsys):
    from avjudge.bench.align import align_bench

    bench = _scored_bench(tmp_path / "bench", {("ref", "p1"): 3.5, ("noisy", "p1"): 2.0, ("ref", "p2"): float("nan"),
                                               ("noisy", "p2"): 2.5})  # fmt: skip
    judgments = tmp_path / "human.csv"
    header = "prompt_id,model_a,model_b,dimension,winner,annotator\n"
    judgments.write_text(header + "p1,ref,noisy,dnsmoss,A,x\n")  # a dimension the run never scored: all unscored
    with pytest.raises(BenchError, match=r"none of its 1 judgments pairs two scored clips .* dimensions \['dnsmoss'\]"):
        align_bench(bench, judgments)
    judgments.write_text(header + "p1,ref\n")  # a row cut short was an AttributeError
    with pytest.raises(BenchError, match=r"human.csv:2: no model_b, dimension, winner"):
        load_judgments(judgments)
    # a score that is not a number is no score: the judgment is unscored, never a metric tie
    judgments.write_text(header + "p1,ref,noisy,dnsmos,A,x\np2,ref,noisy,dnsmos,A,x\n")
    result = align_bench(bench, judgments, bootstrap=0)["dnsmos"]
    assert result["used"] == 1 and result["unscored"] == 1 and result["accuracy_2afc"] == 1.0
    for option, value in (("--eps", "-0.1"), ("--bootstrap", "-1")):
        err = refused(["bench", "align", "--input", str(bench), "--judgments", str(judgments), option, value], capsys)
        assert option in err


def test_a_best_model_is_marked_only_beyond_the_interval_of_its_lead():
    """The issue's case: a "best" named on a gap of 1/30 of a standard deviation. A lead within the 95 % interval of
    the difference of the two means marks none and says so; a clear one is marked."""
    from avjudge.bench.report import leaderboard_markdown

    def summary(gap: float) -> dict:
        cells = {"a": 0.60 + gap, "b": 0.60}
        return {
            "dimensions": ["av"], "labels": {"av": "AV"}, "higher_is_better": {"av": True}, "models": ["a", "b"],
            "prompts": {"normal": 30},
            "results": {m: {"normal": {"av": {"mean": v, "std": 0.15, "n": 30, "errors": 0}}}
                        for m, v in cells.items()},
        }  # fmt: skip

    close = leaderboard_markdown(summary(0.15 / 30), "normal")
    assert "**" not in close and "the first model's lead is within the 95 % interval" in close
    # a lead of 1.96 * sqrt(2 * 0.15² / 30) = 0.076 is the edge: 0.1 is beyond it
    clear = leaderboard_markdown(summary(0.1), "normal")
    assert "| a | **0.700 ± 0.150 (n=30)** |" in clear and "within the 95 % interval" not in clear
