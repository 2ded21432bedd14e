"""One grammar for every command: --input, --out, --judge TASK=DIR, --set, the runtime flags; old spellings still
work for a release and warn; every bad input a user can give ends as a one-line error with exit code 2."""

import argparse
from dataclasses import replace
from pathlib import Path

import pytest

from avjudge.cli import COMMANDS, build_parser, main
from avjudge.cli.reference import markdown_reference
from avjudge.media import encode_audio

from .helpers import click_track

READS = {
    "media probe",
    "perturb apply",
    "data build",
    "data export",
    "data audit",
    "data annotate",
    "score",
    "metrics run",
    "metrics compare",
    "bench synth",
    "bench curate",
    "bench run",
    "bench report",
    "bench choice",
    "bench align",
    "bench lag",
    "omni convert",
    "omni score",
    "omni sonicbench threshold",
    "omni avibench levels",
    "bench controls",
    "filter",
    "rewards audit",
    "compare",
}
SCORES = {
    "score",
    "compare",
    "judges calibrate",
    "metrics run",
    "metrics compare",
    "bench run",
    "filter",
    "bench choice",
    "omni answer",
    "omni bridge",
    "bench controls",
    "bench lag",
    "serve",
}
LOADS_JUDGES = SCORES - {"metrics run", "metrics compare"}
CONFIGURED = {"world make", "perturb apply", "data build", "train", "demo", "rewards audit"}


def options(words: str) -> dict[str, argparse.Action]:
    parser = argparse.ArgumentParser()
    COMMANDS[tuple(words.split())].add_arguments(parser)
    return {flag: action for action in parser._actions for flag in action.option_strings}


def test_every_command_spells_the_shared_options_alike():
    assert READS | SCORES | CONFIGURED <= {" ".join(words) for words in COMMANDS}
    for words in COMMANDS:
        words = COMMANDS[words].replaced_by or words  # an old spelling is its new command's parser
        name, flags = " ".join(words), options(" ".join(words))
        assert ("--input" in flags) == (name in READS), name
        assert {"--batch-size", "--workers", "--device"} <= set(flags) or name not in SCORES, name
        assert ("--judge" in flags) == (name in LOADS_JUDGES), name
        assert ("--set" in flags) == (name in CONFIGURED), name
        if "--set" in flags:
            assert flags["--set"].dest == "overrides" and flags["--set"].metavar == "KEY=VALUE", name
        if "--judge" in flags:
            assert flags["--judge"].metavar == "TASK=DIR", name
        # the old spellings are hidden from --help
        hidden = [f for f, a in flags.items() if a.help == argparse.SUPPRESS]
        assert all(f.startswith("--") and f not in ("--input", "--out", "--judge", "--set") for f in hidden), name


def test_every_numeric_option_is_range_checked_as_it_parses():
    """A bare ``int`` or ``float`` takes -1, 0, nan and inf; each such value was a traceback after the work began (a
    negative seed in numpy, a negative array size) or silently nothing (0 prompts curated). Every numeric option has
    one of `avjudge.commands`' checked types instead."""
    bare = [
        f"{' '.join(words)} {flag}"
        for words in COMMANDS
        for flag, action in options(" ".join(COMMANDS[words].replaced_by or words)).items()
        if action.type in (int, float)
    ]
    assert not bare, bare


# old spelling -> (the command line, the argument it fills, its value, the new spelling the warning names)
DEPRECATED = [
    (
        ["perturb", "apply", "--strategy", "filter", "--input", "a.mp4", "--output", "b.mp4"],
        "out",
        Path("b.mp4"),
        "--out",
    ),
    (["data", "export", "--dataset", "d", "--format", "swift", "--out", "o"], "input", Path("d"), "--input"),
    (["data", "audit", "--dataset", "d"], "input", Path("d"), "--input"),
    (
        ["data", "annotate", "--in", "clips", "--out", "m.jsonl", "--base-url", "u", "--model", "m"],
        "input",
        Path("clips"),
        "--input",
    ),
    (["score", "--judge", "av", "--checkpoint", "c", "--out", "o"], "checkpoint", Path("c"), "--judge TASK=DIR"),
    (
        ["score", "--judge", "av=c", "--video", "a.mp4", "--manifest", "m.jsonl", "--out", "o"],
        "input",
        [Path("a.mp4"), Path("m.jsonl")],
        "--input",
    ),
    (["bench", "synth", "--world", "w", "--out", "o"], "input", Path("w"), "--input"),
    (
        ["bench", "curate", "--candidates", "c.json", "--n", "2", "--attributes", "a", "--out", "o"],
        "input",
        Path("c.json"),
        "--input",
    ),
    (["bench", "run", "--suite", "s.json", "--videos", "v", "--out", "o"], "input", Path("v"), "--input"),
    (["bench", "run", "--suite", "s.json", "--input", "v", "--out", "o"], "prompts", Path("s.json"), "--prompts"),
    (["bench", "report", "--bench", "b"], "input", Path("b"), "--input"),
    (["bench", "align", "--bench", "b", "--judgments", "j.csv"], "input", Path("b"), "--input"),
    (
        ["bench", "choice", "--questions", "q.jsonl", "--judge", "choice_av=m", "--out", "o"],
        "input",
        Path("q.jsonl"),
        "--input",
    ),
    (
        ["bench", "choice", "--world", "w", "--model", "m", "--task", "choice_a", "--out", "o"],
        "model",
        Path("m"),
        "--judge TASK=DIR",
    ),
    (["filter", "--manifest", "m.jsonl", "--rules", "av>=0.5", "--out", "o"], "input", Path("m.jsonl"), "--input"),
    (["media", "probe", "a.wav"], "paths", [Path("a.wav")], None),
    (["train", "--config", "tiny_world_av", "max_steps=2"], "positional_overrides", ["max_steps=2"], None),
]


@pytest.mark.parametrize("argv, dest, value, new", DEPRECATED, ids=[" ".join(row[0][:3]) for row in DEPRECATED])
def test_old_spellings_still_parse_and_warn(argv, dest, value, new, capsys):
    args = build_parser().parse_args(argv)
    assert getattr(args, dest) == value
    if new is not None:
        err = capsys.readouterr().err
        assert "is deprecated" in err and f"use {new}" in err


def test_old_spellings_run_with_a_warning(tmp_path, capsys):
    encode_audio(tmp_path / "a.wav", click_track([0.1], 1.0, 8000), 8000)
    assert main(["media", "probe", str(tmp_path / "a.wav")]) == 0
    captured = capsys.readouterr()
    assert "sample_rate" in captured.out and "media files without --input is deprecated" in captured.err


@pytest.mark.parametrize(
    "old, new",
    [
        ("bench suites", "omni suites"),
        ("bench convert", "omni convert"),
        ("bench answer", "omni answer"),
        ("bench score", "omni score"),
        ("bench bridge", "omni bridge"),
        ("bench sonicbench make", "omni sonicbench make"),
        ("bench sonicbench probe", "omni sonicbench probe"),
        ("bench sonicbench sweep", "omni sonicbench sweep"),
        ("bench sonicbench threshold", "omni sonicbench threshold"),
        ("bench avibench levels", "omni avibench levels"),
        ("bench prise make", "omni prise make"),
    ],
)
def test_the_old_benchmark_commands_are_aliases_of_the_omni_ones_that_warn(old, new, capsys):
    alias, command = COMMANDS[tuple(old.split())], COMMANDS[tuple(new.split())]
    assert alias.replaced_by == command.words and alias.add_arguments is command.add_arguments
    assert f"deprecated: avjudge {new}" in alias.help
    if old == "bench suites":
        assert main(old.split()) == 0
        captured = capsys.readouterr()
        assert f"avjudge {old} is deprecated" in captured.err and f"use avjudge {new}" in captured.err
        assert "sonicbench" in captured.out and "questions" in captured.out


def _bad_inputs(tmp: Path) -> list[tuple[list[str], list[str]]]:
    """(a command line with one thing wrong, what its error must name)."""
    missing = tmp / "nowhere.jsonl"
    (tmp / "empty").mkdir()
    (tmp / "recipe.yaml").write_text("judges: {vt: {pairs: 4}}\ntext_backend: nope\n")
    encode_audio(tmp / "a.wav", click_track([0.1], 1.0, 8000), 8000)
    (tmp / "run" / "final").mkdir(parents=True)  # a training run's folder: the checkpoint is one level down
    (tmp / "run" / "final" / "config.json").write_text("{}")
    (tmp / "world").mkdir()
    (tmp / "world" / "world.jsonl").write_text("")
    return [
        (
            ["score", "--judge", "av=" + str(tmp), "--input", str(missing), "--out", str(tmp / "o.jsonl")],
            [str(missing), "no such manifest"],
        ),
        (["score", "--judge", "av", "--input", str(missing), "--out", str(tmp / "o.jsonl")], ["TASK=DIR"]),
        (["score", "--input", str(missing), "--out", str(tmp / "o.jsonl")], ["--judge TASK=DIR"]),
        (
            ["metrics", "run", "--metrics", "dnsmos", "--input", str(tmp / "empty"), "--out", str(tmp / "m.jsonl")],
            [str(tmp / "empty"), "no media files"],
        ),
        (
            [
                "metrics",
                "run",
                "--metrics",
                "no_such_metric",
                "--input",
                str(tmp / "a.wav"),
                "--out",
                str(tmp / "m.jsonl"),
            ],
            ["no_such_metric", "metrics list"],
        ),
        (["metrics", "run", "--metrics", "dnsmos", "--out", str(tmp / "m.jsonl")], ["--input is required"]),
        (["data", "build", "--recipe", "wrold_demo", "--out", str(tmp / "p")], ["wrold_demo", "world_demo"]),
        (["data", "build", "--recipe", "world_demo", "--out", str(tmp / "p")], ["--set source="]),
        (
            ["data", "build", "--recipe", str(tmp / "recipe.yaml"), "--input", str(missing), "--out", str(tmp / "p")],
            ["text_backend 'nope'", "rules"],
        ),
        (["data", "build", "--recipe", "world_demo", "--input", str(missing), "--out", str(tmp / "p")], [str(missing)]),
        (["train", "--config", "tiny_world_xx"], ["tiny_world_xx", "tiny_world_av"]),
        (["train", "--config", "tiny_world_av", "--set", "max_steps"], ["max_steps", "key=value"]),
        (
            ["bench", "synth", "--input", str(tmp / "empty"), "--out", str(tmp / "b")],
            [str(tmp / "empty"), "world make"],
        ),
        (["bench", "run", "--prompts", str(missing), "--input", str(tmp), "--out", str(tmp / "b")], [str(missing)]),
        (["bench", "run", "--input", str(tmp), "--out", str(tmp / "b")], ["--prompts is required"]),
        (
            ["omni", "answer", "--suite", "sonicbench", "--questions", str(missing), "--judge", "av=" + str(tmp)]
            + ["--out", str(tmp / "c.jsonl")],
            ["choice_a=DIR"],
        ),
        (["omni", "score", "--suite", "nonesuch", "--input", str(missing), "--out", str(tmp / "s")], ["omni suites"]),
        (["filter", "--input", str(missing), "--rules", "loudness>=3", "--out", str(tmp / "f")], ["loudness", "known"]),
        (
            ["perturb", "apply", "--strategy", "filter", "--input", str(missing), "--out", str(tmp / "x.wav")],
            [str(missing)],
        ),
        (["demo", "--judges", "av,xy", "--out", str(tmp / "d")], ["--judges", "av, vt, at"]),
        (["media", "probe"], ["--input is required"]),
        (["score", "--judge", "xv=" + str(tmp), "--input", str(missing), "--out", str(tmp / "o.jsonl")], ["'xv'"]),
        (
            [
                "score",
                "--judge",
                "av=" + str(tmp / "nope"),
                "--input",
                str(tmp / "a.wav"),
                "--out",
                str(tmp / "o.jsonl"),
            ],
            [str(tmp / "nope"), "no such folder"],
        ),  # fmt: skip
        (
            [
                "score",
                "--judge",
                "av=" + str(tmp / "run"),
                "--input",
                str(tmp / "a.wav"),
                "--out",
                str(tmp / "o.jsonl"),
            ],
            [str(tmp / "run" / "final"), "did you mean"],
        ),  # fmt: skip
        (
            ["score", "--judge", "av=" + str(tmp), "--input", str(tmp / "a.wav"), "--out", str(tmp / "r.csv")],
            ["r.csv", ".jsonl", ".parquet"],
        ),  # fmt: skip
        (
            ["data", "build", "--recipe", "world_demo", "--input", str(tmp / "world"), "--out", str(tmp / "p2")],
            ["did you mean", str(tmp / "world" / "world.jsonl")],
        ),  # fmt: skip
    ]


def test_every_bad_input_ends_as_a_clear_error_with_exit_code_2(tmp_path, capsys):
    for argv, named in _bad_inputs(tmp_path):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("avjudge: error: ") and "Traceback" not in err, (argv, err)
        for text in named:
            assert text in err, (argv, text, err)


def test_the_cli_reference_holds_every_commands_help():
    text = markdown_reference()
    current = [words for words, command in COMMANDS.items() if not command.replaced_by]
    for words in current:
        name = " ".join(words)
        assert f"# avjudge {name}\n" in text and f"usage: avjudge {name}" in text, name
    assert text.count("```text") == len(current) + 1  # the top-level help, then one block a command
    assert "--checkpoint " not in text and "--manifest" not in text  # deprecated spellings are not taught
    assert "- `avjudge bench score`: now `avjudge omni score`" in text  # renamed commands are listed, not taught


def test_served_urls_and_models_name_their_judge_where_several_are_loaded(tmp_path):
    from avjudge.cli.grammar import served_endpoints
    from avjudge.config import ConfigError
    from avjudge.judges.served import ServedEndpoint

    def endpoints(urls, models=None, dirs=("av", "vt")):
        (tmp_path / "token").write_text("secret\n")
        args = argparse.Namespace(served_url=urls, served_model=models, served_token_file=tmp_path / "token")
        return served_endpoints(args, {task: Path("runs") / task / "final" for task in dirs})

    assert endpoints(["vt=http://h:8000/v1"], ["vt=judge-vt"]) == {
        "vt": ServedEndpoint("http://h:8000/v1", "judge-vt", "secret")
    }
    assert endpoints(["http://h/v1"], dirs=("at",)) == {"at": ServedEndpoint("http://h/v1", "final", "secret")}
    with pytest.raises(ConfigError, match="say which judge, e.g. --served-url av=http://h/v1"):
        endpoints(["http://h/v1"])
    with pytest.raises(ConfigError, match="no at judge is loaded"):
        endpoints(["at=http://h/v1"])
    with pytest.raises(ConfigError, match="the av judge has no --served-url"):
        endpoints(["vt=http://h/v1"], ["av=m"])


def test_an_abbreviated_option_is_an_error_not_another_option(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["score", "--judg", "av=x", "--input", "a.mp4", "--out", "o.jsonl"])
    assert exit_.value.code == 2 and "unrecognized arguments: --judg" in capsys.readouterr().err


def test_ctrl_c_ends_a_batch_job_saying_how_to_resume(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setitem(COMMANDS, ("score",), replace(COMMANDS[("score",)], run=interrupted))
    assert main(["score", "--judge", "av=x", "--input", "a.mp4", "--out", "o.jsonl"]) == 130
    err = capsys.readouterr().err
    assert "interrupted: rerun the same command to resume" in err and "Traceback" not in err


def test_a_job_where_every_clip_failed_exits_1_and_says_so(tmp_path, capsys):
    for name in ("a.mp4", "b.mp4"):
        (tmp_path / name).write_bytes(b"not a video")
    out = tmp_path / "m.jsonl"
    assert main(["metrics", "run", "--metrics", "dnsmos", "--input", str(tmp_path), "--out", str(out),
                 "--no-progress"]) == 1  # fmt: skip
    err = capsys.readouterr().err
    assert "no metric scored any of the 2 clips" in err and str(out) in err
