"""Expected failures are one clear line and exit 2, before any model loads: options out of range, inputs missing,
empty or repeated, a dataset not built, a build that makes no pairs for a judge it was asked for."""

from __future__ import annotations

import json
import shutil

import pytest

from avjudge.cli import main
from avjudge.world import MANIFEST, WorldConfig, make_world

from .helpers import refused


@pytest.mark.parametrize(
    "option, value, words",
    [
        ("--max-batch-size", "0", "a whole number above 0"),
        ("--decode-timeout", "0", "a finite number above 0"),
        ("--max-clip-seconds", "-1", "a finite number above 0"),
        ("--max-decoded-mb", "inf", "a finite number above 0"),
        ("--max-queue", "many", "a whole number above 0"),
        ("--port", "70000", "a port from 1 to 65535"),
        ("--workers", "0", "a whole number above 0"),
    ],
)
def test_serve_refuses_an_option_out_of_range_as_it_parses(tmp_path, capsys, option, value, words):
    err = refused(["serve", "--judge", f"av={tmp_path}", option, value], capsys)
    assert option in err and words in err and repr(value) in err


@pytest.mark.parametrize(
    "argv, words",
    [  # each a traceback after the work began (numpy's seed, a negative array size) or a silent nothing before
        (["perturb", "apply", "--seed", "-1"], "a whole number, 0 or more"),
        (["data", "audit", "--limit", "-5"], "a whole number above 0"),
        (["data", "audit", "--workers", "0"], "a whole number above 0"),
        (["data", "build", "--audit-sample", "-1"], "a whole number, 0 or more"),
        (["bench", "curate", "--n", "0"], "a whole number above 0"),
        (["bench", "align", "--eps", "-0.1"], "a finite number, 0 or more"),
        (["rewards", "audit", "--max-share", "1.5"], "a share from 0 to 1"),
        (["omni", "answer", "--concurrency", "0"], "a whole number above 0"),
        (["omni", "answer", "--timeout", "0"], "a finite number above 0"),
        (["score", "--fps", "0"], "a finite number above 0"),
        (["score", "--max-pixels", "-1"], "a whole number above 0"),
        (["judges", "make-tiny", "--seed", "-1"], "a whole number, 0 or more"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else None,
)
def test_an_option_out_of_range_is_refused_as_it_parses(argv, words, capsys):
    err = refused(argv, capsys)
    assert argv[-2] in err.splitlines()[-1] and words in err


def test_a_judge_given_twice_is_refused_not_the_last_one_silently_used(tmp_path, capsys):
    err = refused(["score", "--judge", f"av={tmp_path}/a", "--judge", f"av={tmp_path}/b", "--input", str(tmp_path),
                   "--out", str(tmp_path / "s.jsonl")], capsys)  # fmt: skip
    assert "--judge gives the av judge twice" in err


@pytest.mark.parametrize(
    "options, words",
    [  # the judge folder does not exist: each is refused before the server looks for it
        (["--media-root", "/no/such/folder"], "--media-root /no/such/folder: no such folder"),
        (["--reward-judge", "vt"], "--reward-judge names ['vt'], which this server does not serve; it serves ['av']"),
        (["--reward-judge", "av=two"], "give NAME or NAME=WEIGHT (a number)"),
        (["--reward-judge", "av=nan"], "give NAME or NAME=WEIGHT (a number)"),
    ],
)
def test_serve_refuses_what_would_fail_every_request_before_a_judge_loads(tmp_path, capsys, options, words):
    err = refused(["serve", "--judge", f"av={tmp_path / 'no_judge'}", *options], capsys)
    assert words in err and "no_judge" not in err


def test_training_on_a_dataset_never_built_says_how_to_build_it(tmp_path, capsys):
    argv = ["train", "--config", "tiny_world_av", "--set", "objective=bt", "--set", f"dataset={tmp_path / 'no'}"]
    err = refused(argv, capsys)
    assert "stats.json is missing" in err and "avjudge data build" in err


def test_compare_refuses_an_empty_pairs_file_and_a_repeated_id(tmp_path, capsys):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("")
    argv = ["compare", "--judge", f"av={tmp_path}", "--input", str(pairs), "--out", str(tmp_path / "o.jsonl")]
    assert "no pairs in it" in refused(argv, capsys)
    pairs.write_text("".join(json.dumps({"id": "p", "a": "a.mp4", "b": "b.mp4"}) + "\n" for _ in range(2)))
    err = refused(argv, capsys)
    assert "pairs.jsonl:2: id 'p' is line 1's too" in err
    assert not (tmp_path / "o.jsonl").exists()


def test_omni_score_refuses_an_empty_answers_file(tmp_path, capsys):
    answers = tmp_path / "answers.jsonl"
    answers.write_text("")
    err = refused(["omni", "score", "--suite", "questions", "--input", str(answers), "--out", str(tmp_path / "o")],
                  capsys)  # fmt: skip
    assert "no answers in it" in err


def test_a_build_that_makes_no_pairs_for_a_judge_fails_naming_why(tmp_path, capsys):
    """2 s clips are shorter than the world_demo recipe's largest shift leaves room for: every AV source is skipped."""
    make_world(WorldConfig(n=4, seed=1, duration=2.0, max_duration=2.0, width=64, height=64), tmp_path / "w",
               progress=False)  # fmt: skip
    err = refused(["data", "build", "--recipe", "world_demo", "--input", str(tmp_path / "w" / MANIFEST), "--out",
                   str(tmp_path / "d"), "--no-progress", "--audit-sample", "0"], capsys)  # fmt: skip
    assert "av: no pairs built of the 240 asked for" in err and "source too short" in err


def test_a_broken_judge_card_warns_when_its_judge_loads_and_is_exit_2_when_shown(tiny_judges, tmp_path, capsys):
    import shutil
    import warnings

    from avjudge.judges import CARD_FILE, Judge, JudgeCardFlags

    folder = tmp_path / "judge"
    shutil.copytree(tiny_judges["qwen2_5_omni"], folder)
    (folder / CARD_FILE).write_text('{"judge": "av", "flags": ["leak')  # cut short
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        judge = Judge.load("av", folder)
    assert judge.task.name == "av"  # loaded: a card only ever warns
    assert any(issubclass(w.category, JudgeCardFlags) and "cannot be read" in str(w.message) for w in seen)
    assert f"{CARD_FILE}: not a judge card" in refused(["judges", "card", str(folder)], capsys)


def test_an_output_that_is_a_file_or_a_lock_that_is_a_folder_is_named(pairs, tmp_path, capsys):
    from avjudge.jsonl import output_lock

    taken = tmp_path / "taken"
    taken.write_text("a file")
    assert "a file is there; name a folder" in refused(
        ["data", "export", "--input", str(pairs), "--format", "llamafactory", "--out", str(taken)], capsys
    )
    from avjudge.config import ConfigError

    with pytest.raises(ConfigError, match="is a file, not a folder"):
        with output_lock(taken / "kept.jsonl"):
            pass
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / ".kept.jsonl.lock").mkdir()
    with pytest.raises(ConfigError, match="is not a file: remove it"):
        with output_lock(tmp_path / "out" / "kept.jsonl"):
            pass


# what a command's required options get in `test_every_command_that_reads_an_input_refuses_a_bad_one_clearly`
# besides its --input: plausible values, so that the input is what is wrong
REQUIRED_VALUES = {
    "--n": "2",
    "--attributes": "colour",
    "--base-url": "http://127.0.0.1:9/v1",
    "--model": "m",
    "--recipe": "world_demo",
    "--rules": "av>=0",
    "--metrics": "dnsmos",
    "--strategy": "filter",
    "--suite": "sonicbench",
}


def _required(command, bad: str, out: str) -> list[str]:
    """The command's required options filled: output options with ``out``, files it reads with ``bad`` too."""
    import argparse

    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    argv = []
    for action in parser._actions:
        if not action.required or not action.option_strings:
            continue
        flag = action.option_strings[0]
        value = out if flag == "--out" else REQUIRED_VALUES.get(flag, bad)
        argv += [flag, action.choices[0] if action.choices else value]
    return argv


def _bad_inputs(tmp_path) -> dict[str, str]:
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "garbage.jsonl").write_text("this is not json\n")
    (tmp_path / "lists.jsonl").write_text("[1, 2]\n3\n")
    (tmp_path / "a_folder").mkdir()
    (tmp_path / "a_folder" / "notes.txt").write_text("no media here")
    return {
        "missing": str(tmp_path / "nowhere.jsonl"),
        "empty": str(tmp_path / "empty.jsonl"),
        "garbage": str(tmp_path / "garbage.jsonl"),
        "lines that are not objects": str(tmp_path / "lists.jsonl"),
        "a folder without media": str(tmp_path / "a_folder"),
    }


def test_every_command_that_reads_an_input_refuses_a_bad_one_clearly(tmp_path, capsys):
    from avjudge.cli import COMMANDS

    readers = {
        words: command
        for words, command in COMMANDS.items()
        if command.replaced_by is None and "--input" in _options_of(command)
    }
    assert len(readers) >= 20  # every command that reads a file, a folder or a manifest
    unclear = []
    for kind, bad in _bad_inputs(tmp_path).items():
        for words, command in readers.items():
            out = str(tmp_path / f"out_{'_'.join(words)}_{kind.split()[0]}.jsonl")
            argv = [*words, "--input", bad, *_required(command, bad, out)]
            try:
                code = main(argv)
            except SystemExit as exit_:  # argparse's own refusal
                code = exit_.code
            except Exception as err:  # noqa: BLE001 - a traceback is what this test looks for
                code = f"{type(err).__name__}: {err}"
            err = capsys.readouterr().err
            said = (err.strip().splitlines() or [""])[-1]  # after a warning or argparse's usage, if any
            if code != 2 or ": error: " not in said or "Traceback" in err:
                unclear.append((kind, " ".join(words), code, err[-300:]))
    assert unclear == [], "\n".join(map(str, unclear))


def _options_of(command) -> set[str]:
    import argparse

    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    return {flag for action in parser._actions for flag in action.option_strings}


def _judge_folder(tiny_judges, pairs, tmp_path):
    folder = shutil.copytree(tiny_judges["qwen2_5_omni"], tmp_path / "judge")
    (folder / "avjudge_train.json").write_text('{"judge_settings": {"fps": 2')  # cut short
    return folder / "avjudge_train.json"


def _dataset_file(name):
    def broken(tiny_judges, pairs, tmp_path):
        dataset = shutil.copytree(pairs, tmp_path / "pairs")
        (dataset / name).write_text('{"world0_0000')
        return dataset / name

    return broken


def _bench_summary(tiny_judges, pairs, tmp_path):
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "summary.json").write_text("[1, 2]")  # JSON, not an object
    return tmp_path / "bench" / "summary.json"


AUDIT = ["data", "audit", "--input", "{tmp}/pairs", "--out", "{tmp}/audit.json"]


@pytest.mark.parametrize(
    "broken, command",
    [
        # a judge folder's train record: the judge is refused as it loads, never scored with default settings
        (_judge_folder, ["score", "--judge", "av={tmp}/judge", "--input", "{world}", "--out", "{tmp}/s.jsonl"]),
        (_dataset_file("splits.json"), AUDIT),
        (_dataset_file("stats.json"), AUDIT),
        (_bench_summary, ["bench", "report", "--input", "{tmp}/bench"]),
    ],
    ids=["train record", "splits", "stats", "bench summary"],
)
def test_a_file_an_earlier_run_wrote_broken_is_exit_2_naming_it(
    tiny_judges, pairs, small_world, tmp_path, capsys, broken, command
):
    path = broken(tiny_judges, pairs, tmp_path)
    err = refused([arg.format(tmp=tmp_path, world=small_world / MANIFEST) for arg in command], capsys)
    assert str(path) in err.splitlines()[-1] and ("not valid JSON" in err or "expected a JSON object" in err), err
