"""Every command a user can type: each command's and each group's --help, every list / verify command, every command
line the README and the docs pages show parsed as written, and the README's commands and Python example run as
written, in order, in a fresh folder."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from avjudge.cli import COMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LONG_RUNNING = {("serve",)}  # a server: started by its own tests, parsed here


def bash_blocks(page: Path) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", page.read_text(), re.S)


def command_lines(block: str) -> list[str]:
    """The ``avjudge`` command lines of a shell block: continuations joined, comments and environment settings
    before the command left out, shell variables set to 0, each command of ``a && b`` apart."""
    lines = []
    for line in re.sub(r"\\\n\s*", " ", block).splitlines():
        if "avjudge" not in line:  # another program's lines (curl's JSON may span lines)
            continue
        line = re.sub(r"\$\{?\w+\}?", "0", line)  # a shell variable ($gpu, ${OUT}): any value parses
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words: list[str] = []
        for token in [*lexer, "&&"]:
            if token not in ("&&", ";", "|", ">", "2>", "&"):
                words.append(token)
                continue
            while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                words = words[1:]
            if words and words[0] == "avjudge":
                lines.append(shlex.join(words))
            words = []
    return lines


def test_the_extraction_reads_continuations_comments_and_settings():
    block = "X=1 avjudge score --judge av=runs/av \\\n  --out s.jsonl   # S per clip\npip install x && avjudge a b\n"
    assert command_lines(block) == ["avjudge score --judge av=runs/av --out s.jsonl", "avjudge a b"]


def test_every_command_and_every_group_answers_help(capsys):
    groups = {words[:depth] for words in COMMANDS for depth in range(1, len(words))}
    for words in sorted(groups | set(COMMANDS)):
        with pytest.raises(SystemExit) as exit_:
            main([*words, "--help"])
        assert exit_.value.code == 0, words
        assert f"usage: avjudge {' '.join(words)}" in capsys.readouterr().out, words


def test_every_list_and_verify_command_runs(capsys, tmp_path):
    listing = [words for words in COMMANDS if words[-1] in ("list", "verify", "suites")]
    assert {("metrics", "list"), ("checkpoints", "list"), ("checkpoints", "verify"), ("omni", "suites")} <= set(listing)
    for words in listing:
        code = main([*words])
        out, err = capsys.readouterr()
        assert code in (0, 1) and out.strip() and "Traceback" not in err, (words, code, err)  # verify: 1 if missing


def test_every_command_line_the_docs_show_parses_as_written():
    parser = build_parser()
    shown = [
        (page.relative_to(ROOT), line) for page in PAGES for block in bash_blocks(page) for line in command_lines(block)
    ]
    assert len(shown) > 30
    for where, line in shown:
        try:
            parser.parse_args(shlex.split(line)[1:])
        except SystemExit:
            pytest.fail(f"{where}: `{line}` does not parse")


def test_the_readmes_commands_and_python_example_run_as_written(tmp_path):
    """The README's command block in order (the server, which would not return, parsed only), then its Python example,
    in a fresh folder, as a user on a fresh machine runs them."""
    (commands,) = [block for block in bash_blocks(ROOT / "README.md") if "world make" in block]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "WANDB_MODE": "offline"}
    for line in command_lines(commands):
        words = shlex.split(line)[1:]
        if any(tuple(words[: len(c)]) == c for c in LONG_RUNNING):
            continue
        quiet = ["--no-progress"] if hasattr(build_parser().parse_args(words), "no_progress") else []
        run = subprocess.run([sys.executable, "-m", "avjudge.cli", *words, *quiet], cwd=tmp_path, env=env,
                             capture_output=True, text=True)  # fmt: skip
        assert run.returncode == 0, (line, run.stderr[-2000:])
    (example,) = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    run = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    printed = run.stdout.splitlines()
    assert len(printed) == 3 and all(0.0 < float(line.split()[1]) < 1.0 for line in printed[:2]), printed
    assert printed[2].startswith("missing.mp4 failed: ") and "missing.mp4" in printed[2][len("missing.mp4 failed") :]


def _argv_literals(path: Path) -> list[list[str]]:
    """The command lines a test file writes as list or tuple literals: their leading string words."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.List, ast.Tuple)):
            words = []
            for element in node.elts:
                if not (isinstance(element, ast.Constant) and isinstance(element.value, str)):
                    break
                words.append(element.value)
            lines.append(words[1:] if words[:1] == ["avjudge"] else words)
    return lines


def _run_by_the_tests() -> set[tuple[str, ...]]:
    """The commands some test runs, not only asks for help: argv literals in the tests (an alias runs its command),
    the README's command block (run as written above) and every list / verify command (run above)."""
    readme = [shlex.split(line)[1:] for block in bash_blocks(ROOT / "README.md") for line in command_lines(block)]
    written = [words for path in sorted((ROOT / "tests").glob("test_*.py")) for words in _argv_literals(path)]
    run = set()
    for words in written + readme:
        if "--help" in words or "-h" in words:
            continue
        for depth in range(len(words), 0, -1):
            command = COMMANDS.get(tuple(words[:depth]))
            if command is not None:
                run.add(command.replaced_by or command.words)
                break
    return run | {words for words in COMMANDS if words[-1] in ("list", "verify", "suites")}


def test_every_command_has_a_real_run_in_the_tests():
    """So a command broken by a move fails a test: each command (an alias: the command it stands for, whose function
    it runs; `test_the_old_benchmark_commands_are_aliases_of_the_omni_ones_that_warn` checks that) is run by some
    test on real input."""
    commands = {words for words, command in COMMANDS.items() if command.replaced_by is None}
    missing = sorted(" ".join(words) for words in commands - _run_by_the_tests())
    assert not missing, f"no test runs these commands for real: {missing}"


def test_checkpoints_make_random_builds_and_pins_a_checkpoint(tmp_path, capsys):
    assert main(["checkpoints", "make-random", "--out", str(tmp_path), "--only", "syncnet"]) == 0
    assert "syncnet: built and pinned syncnet" in capsys.readouterr().out
    pinned = yaml.safe_load((tmp_path / "pinned.yaml").read_text())["syncnet"]
    ((name, entry),) = pinned.items()
    weights = tmp_path / "syncnet" / name
    assert entry == {"sha256": hashlib.sha256(weights.read_bytes()).hexdigest(), "size": weights.stat().st_size}


def test_omni_sonicbench_make_writes_balanced_measured_items(tmp_path):
    argv = ["omni", "sonicbench", "make", "--out", str(tmp_path), "--per-cell", "2", "--attributes", "pitch"]
    assert main([*argv, "--workers", "1", "--no-progress"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["items"] == 4 and set(summary["cells"]) == {"pitch/comparison", "pitch/recognition"}
    questions = [json.loads(line) for line in (tmp_path / "questions.jsonl").read_text().splitlines()]
    assert len(questions) == 4 and all((tmp_path / q["media"]).is_file() for q in questions)
    for cell in summary["cells"]:  # each cell balanced between the answers
        assert sorted(q["answer"] for q in questions if q["category"] == cell) == ["A", "B"], cell
