import hashlib
import json
from pathlib import Path

import pytest

from avjudge.cli import COMMANDS, build_parser, main
from avjudge.demo import DemoSize
from avjudge.jsonl import read_jsonl
from avjudge.media import decode, encode_audio

from .helpers import CHROMIUM, click_track, rendered_dom, table_rows


def test_every_command_has_help(capsys):
    for words in COMMANDS:
        with pytest.raises(SystemExit) as exit_:
            main([*words, "--help"])
        assert exit_.value.code == 0
        out = capsys.readouterr().out
        assert "usage: avjudge " + " ".join(words) in out
        assert COMMANDS[words].description.splitlines()[0] in out
        assert "(default: None)" not in out  # an unset default is explained in words, or not at all


def test_help_shows_real_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "(default: demo_out)" in out and f"(default {DemoSize.clips})" in out


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "avjudge demo" in capsys.readouterr().out


def test_world_make_and_probe(tmp_path, capsys):
    assert (
        main(
            [
                "world",
                "make",
                "--out",
                str(tmp_path / "w"),
                "--n",
                "2",
                "--duration",
                "2",
                "--size",
                "64x48",
                "--speech",
                "off",
                "--no-progress",
            ]
        )
        == 0
    )
    assert json.loads((tmp_path / "w" / "world_summary.json").read_text())["clips"] == 2
    capsys.readouterr()
    clip = next((tmp_path / "w" / "clips").iterdir())
    encode_audio(tmp_path / "a.wav", click_track([0.1], 1.0, 8000), 8000)
    (tmp_path / "bad.mp4").write_text("not media")
    assert (
        main(
            [
                "media",
                "probe",
                "--input",
                str(clip),
                "--input",
                str(tmp_path / "a.wav"),
                "--input",
                str(tmp_path / "bad.mp4"),
            ]
        )
        == 1
    )
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0]["video"]["width"] == 64 and lines[0]["video"]["height"] == 48
    assert lines[1]["video"] is None and lines[1]["audio"]["sample_rate"] == 8000
    assert "not a readable" in lines[2]["error"]


def test_bad_configuration_is_a_clear_error(tmp_path, capsys):
    assert main(["world", "make", "--out", str(tmp_path), "--size", "63x64", "--no-progress"]) == 2
    assert "even" in capsys.readouterr().err


def test_bad_size_flag():
    with pytest.raises(SystemExit):
        build_parser().parse_args(["world", "make", "--out", "x", "--size", "big"])


def test_quick_demo_runs_the_whole_pipeline(tmp_path, capsys, tiny_judges):
    cache = tiny_judges["qwen2_5_omni"].parent.parent
    assert main(["demo", "--out", str(tmp_path), "--quick", "--cache", str(cache)]) == 0
    report = json.loads((tmp_path / "demo_report.json").read_text())
    checks = report["verification"]
    assert checks["clips"] == checks["clips_ok"] == 8 and not checks["errors"]
    assert checks["visual_found"] == checks["visual_events"] > 0
    for task in ("av", "vt", "at"):
        judge = report["judges"][task]
        assert judge["eval_before"]["per_type"] and judge["eval_after"]["per_type"]
        assert (tmp_path / "train" / task / "final" / "config.json").exists()
        for kind, points in judge["curves"].items():  # from step 0 (untrained) to the last step (trained)
            assert points[0] == [0, judge["eval_before"]["per_type"][kind]["balanced_accuracy"]]
            assert points[-1] == [
                judge["eval_after"]["step"],
                judge["eval_after"]["per_type"][kind]["balanced_accuracy"],
            ]
    assert (tmp_path / "demo_report.png").stat().st_size > 10000
    # the held-out examples: the first positive and the first negative of each type, with the evaluations' scores
    pairs = {
        task: {r["id"]: r for r in read_jsonl(tmp_path / "pairs" / "pairs" / task / "test.jsonl")}
        for task in ("av", "vt", "at")
    }
    for task in ("av", "vt", "at"):
        examples = [e for e in report["examples"] if e["judge"] == task]
        judge = report["judges"][task]
        kinds = [
            "positive",
            *sorted(
                {
                    pairs[task][i]["negative_type"]
                    for i, s in judge["eval_after"]["scores"].items()
                    if s is not None and pairs[task][i]["label"] == 0
                }
            ),
        ]
        assert [e["kind"] for e in examples] == kinds
        for e in examples:
            first = next(
                r for r in pairs[task].values() if ("positive" if r["label"] else r["negative_type"]) == e["kind"]
            )
            assert e["id"] == first["id"] and e["text"] == first.get("text")
            assert e["after"] == judge["eval_after"]["scores"][e["id"]]
            assert e["before"] == judge["eval_before"]["scores"][e["id"]]
            media = tmp_path / e["media"]
            assert media.is_file() and (media.parent.name == "av") == (task == "av")  # the window the AV judge saw
    negative = next(e for e in report["examples"] if e["judge"] == "av" and e["label"] == 0)
    shown = decode(tmp_path / negative["media"])  # the window's picture with the negative's sound
    assert shown.frames is not None and shown.duration == pytest.approx(
        pairs["av"][negative["id"]]["window"]["duration_s"], abs=0.1
    )
    for task in ("av", "vt", "at"):  # every judge's card: its pairs' shortcut audit and its reward audit
        card = report["judges"][task]["card"]
        assert card["judge"] == task and card["reward_audit"]["before"] and card["reward_audit"]["after"]
        assert (tmp_path / "train" / task / "judge_card.md").is_file()
    out = capsys.readouterr().out
    assert "held-out figures per negative type" in out and "demo_report.html" in out
    assert all(f"{task} judge card:" in out for task in ("av", "vt", "at"))
    assert "target" not in out and "issue" not in out
    # the generators benchmarked by the AV judge, untrained and trained: each mean is its samples' mean
    generators = report["generators"]
    assert generators["clips"] == 3 and set(generators["mean_av"]) == {"reference", "shifted", "noisy", "mismatched"}
    for name in ("untrained", "trained"):
        samples = list(read_jsonl(tmp_path / "bench" / name / "samples.jsonl"))
        assert len(samples) == 4 * 3 and (tmp_path / "bench" / name / "report.html").is_file()
        for model, means in generators["mean_av"].items():
            scores = [r["scores"]["av"] for r in samples if r["model"] == model]
            assert means[name] == pytest.approx(sum(scores) / len(scores))
    if CHROMIUM:  # the page renders with a per-type table per judge, a row per example and per generator
        rows = table_rows(rendered_dom(tmp_path / "demo_report.html", tmp_path / "chromium"))
        assert rows["per-type"] == [1 + len(report["judges"][t]["eval_after"]["per_type"]) for t in ("av", "vt", "at")]
        assert rows["examples"] == [1 + len(report["examples"])] and rows["generators"] == [1 + 4]
        assert rows["card"] == [
            1 + len(report["judges"][t]["card"]["reward_audit"]["after"]) for t in ("av", "vt", "at")
        ]


def test_demo_sizes_and_judges_can_be_chosen(tmp_path, capsys, tiny_judges):
    cache = tiny_judges["qwen2_5_omni"].parent.parent
    assert (
        main(
            [
                "demo",
                "--out",
                str(tmp_path),
                "--quick",
                "--judges",
                "av",
                "--clips",
                "6",
                "--pairs",
                "24",
                "--set",
                "fps=3.0",
                "--cache",
                str(cache),
            ]
        )
        == 0
    )
    report = json.loads((tmp_path / "demo_report.json").read_text())
    assert list(report["judges"]) == ["av"] and report["world"]["clips"] == 6
    trained = json.loads((tmp_path / "train" / "av" / "final" / "avjudge_train.json").read_text())
    assert trained["config"]["fps"] == 3.0
    assert report["pairs"]["judges"]["av"]["pairs"] == 24 and not (tmp_path / "train" / "vt").exists()
    assert main(["demo", "--out", str(tmp_path), "--judges", "av,xy"]) == 2
    assert "subset of av, vt, at" in capsys.readouterr().err


def test_the_demo_trains_what_learns_in_its_budget_and_full_length_is_one_flag_away(capsys):
    from avjudge.demo import FULL
    from avjudge.demo.run import path_only_lines

    default = DemoSize()
    assert [default.epochs_of(t) for t in ("av", "vt", "at")] == [3.0, 3.0, 0.25] and default.path_only == ("at",)
    assert [FULL.epochs_of(t) for t in ("av", "vt", "at")] == [6.0, 3.0, 3.0] and FULL.path_only == ()
    scaled = default.scaled(clips=6, pairs=24)
    assert (scaled.clips, scaled.pairs, scaled.pace) == (6, 24, None)  # a size changed has no measured pace
    assert [scaled.epochs_of(t) for t in ("av", "vt", "at")] == [default.epochs_of(t) for t in ("av", "vt", "at")]
    every = default.scaled(epochs=2.0)
    assert [every.epochs_of(t) for t in ("av", "vt", "at")] == [2.0, 2.0, 2.0] and every.path_only == ()
    assert default.expected_seconds(default.pace[0] * 1.5) == pytest.approx(default.pace[1] * 1.5)
    (line,) = path_only_lines(default, {"av": {"steps": 675}, "at": {"steps": 56}})
    assert line.startswith("the AT judge trained 56 steps only, to show its path works") and "--full" in line
    with pytest.raises(SystemExit):  # one length at a time
        main(["demo", "--quick", "--full"])
    assert "not allowed with argument --quick" in capsys.readouterr().err


def test_the_demo_starts_from_the_encoder_weights_it_is_given(tmp_path, capsys, tiny_judges):
    from safetensors.torch import load_file, save_file

    from avjudge.judges.tiny import ALIGNED_ENCODERS

    cache = tiny_judges["qwen2_5_omni"].parent.parent
    other = tmp_path / "other.safetensors"
    save_file({name: value + 1.0 for name, value in load_file(str(ALIGNED_ENCODERS)).items()}, str(other))
    assert (
        main(
            [
                "demo",
                "--out",
                str(tmp_path / "none"),
                "--encoders",
                str(tmp_path / "nowhere.safetensors"),
                "--cache",
                str(cache),
            ]
        )
        == 2
    )
    assert "nowhere.safetensors: no such file; give encoder weights" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()  # it fails before making anything
    assert (
        main(
            [
                "demo",
                "--out",
                str(tmp_path / "demo"),
                "--quick",
                "--judges",
                "av",
                "--clips",
                "6",
                "--pairs",
                "24",
                "--set",
                "max_steps=1",
                "--av-encoders",
                str(other),
                "--cache",
                str(cache),
            ]
        )
        == 0
    )
    trained = json.loads((tmp_path / "demo" / "train" / "av" / "final" / "avjudge_train.json").read_text())
    digest = hashlib.sha256(other.read_bytes()).hexdigest()[:12]
    assert Path(trained["base_model"]).parent.name == f"tiny_encoders_{digest}"  # the AV judge's, as given


def test_perturb_apply_writes_the_negative_and_prints_its_parameters(small_world, tmp_path, capsys):
    import av
    import numpy as np

    from avjudge.media import decode

    source = sorted((small_world / "clips").iterdir())[0]
    out = tmp_path / "shifted.mp4"
    assert (
        main(
            [
                "perturb",
                "apply",
                "--strategy",
                "time_shift_micro",
                "--input",
                str(source),
                "--out",
                str(out),
                "--params",
                '{"shift_s": 0.5}',
            ]
        )
        == 0
    )
    printed = json.loads(capsys.readouterr().out)
    assert printed == {"strategy": "time_shift_micro", "params": {"shift_s": 0.5}, "output": str(out)}

    def picture(path):
        with av.open(str(path)) as c:
            return [bytes(p) for p in c.demux(c.streams.video[0]) if p.dts is not None]

    assert picture(out) == picture(source)
    before, after = decode(source, video=False).audio[0], decode(out, video=False).audio[0]
    corr = np.correlate(after[: 16000 * 2], before[: 16000 * 2], "full")
    lag = (np.argmax(corr) - (16000 * 2 - 1)) / 16000
    assert abs(lag - 0.5) < 0.005
    assert (
        main(
            [
                "perturb",
                "apply",
                "--strategy",
                "filter",
                "--set",
                "kind=bandstop",
                "--input",
                str(source),
                "--out",
                str(tmp_path / "x.mp4"),
            ]
        )
        == 2
    )
    assert "filter.kind must be one of ['lowpass', 'highpass'], not 'bandstop'" in capsys.readouterr().err
