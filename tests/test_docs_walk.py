"""The docs walked as a user walks them: every docs page's shell blocks, command after command in order, run as
written in a fresh folder holding the inputs its pages name (the quick demo's judges and pairs as `runs/` and
`pairs`, a few world clips as `clips/` and `clips.jsonl`, a synthetic benchmark suite as `prompts.json` and
`videos/`, raters' judgments as `human.csv`). A command that fails fails the walk, except where it needs what this
machine cannot have, each said here with why: a release avjudge does not ship, a served model, a Ray cluster, a
GPU; and a metric's weights that are not in place, which a page must name `avjudge checkpoints list` for. Runs that
train or render only shorten (`SHORTER`), never change what the command does. The README's block is walked by
`test_documented_commands`; the research page's studies (minutes to hours each) by the research set."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .test_documented_commands import ROOT, bash_blocks

pytestmark = pytest.mark.slow

WALKED = ["getting-started.md", "media-and-world.md", "comparing.md", "filtering.md", "metrics.md", "benchmarks.md"]
NOT_WALKED = {  # page -> why its blocks are not run here
    "README.md": "walked by test_documented_commands",
    "serving.md": "installs avjudge and starts a server that does not return: the serve tests start one",
    "rewards.md": "starts a server that does not return: the serve tests start one",
    "cluster.md": "a Ray cluster",
    "figures.md": "a GPU machine",
    "research/tiny_judges.md": "research studies of minutes to hours each: the research set runs them",
}
# inputs no machine here has: a command naming one is not run
ELSEWHERE = {
    "SonicBench": "the SonicBench release (not shipped)",
    "sonic.jsonl": "made from the SonicBench release",
    "omni.jsonl": "answers of a served model",
    "AVIBench": "the AVI-Bench release (not shipped, never trained on)",
    "avibench": "made from the AVI-Bench release",
    "localhost:8000": "a served model",
}
SHORTER = {  # command -> what the walk adds so a training or a big world ends in seconds
    ("train",): [
        "--set",
        "max_steps=2",
        "--set",
        "eval_steps=2",
        "--set",
        "save_steps=2",
        "--set",
        "max_eval_pairs=8",
    ],  # fmt: skip
    ("demo",): ["--quick"],
}
# how avjudge says a checkpoint the manifest lists is not in place (`avjudge checkpoints verify`'s words)
MISSING_WEIGHTS = re.compile(r"is missing\b.*(?:To get it|put it there first)", re.S)


def shell_commands(block: str) -> list[str]:
    """The commands of a shell block as bash runs them: continuations joined, comment lines and blank ones left out,
    each command of ``a && b`` apart."""
    commands = []
    for line in re.sub(r"\\\n\s*", " ", block).splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            commands += [part.strip() for part in line.split(" && ")]
    return commands


def _avjudge_words(command: str) -> list[str]:
    words = command.split("#")[0].split()
    return words[1:] if words[:1] == ["avjudge"] else []


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """One folder of the inputs the pages name, made by avjudge's own commands."""
    root = tmp_path_factory.mktemp("docs_inputs")
    env = _env()

    def avjudge(*words):
        run = subprocess.run([sys.executable, "-m", "avjudge.cli", *words], cwd=root, env=env, capture_output=True,
                             text=True)  # fmt: skip
        assert run.returncode == 0, (words, run.stderr[-2000:])

    avjudge("demo", "--quick", "--out", "demo_out")
    for task in ("av", "vt", "at"):
        (root / "runs" / task).mkdir(parents=True)
        (root / "runs" / task / "final").symlink_to(root / "demo_out" / "train" / task / "final")
    (root / "pairs").symlink_to(root / "demo_out" / "pairs")
    # a user's own clips, long enough for every page's commands (a lag profile's ±2 s around a 1 s window)
    avjudge("world", "make", "--out", "sources", "--n", "6", "--duration", "6", "--no-progress")
    world = root / "sources"
    records = [json.loads(line) for line in (world / "world.jsonl").read_text().splitlines()]
    (root / "clips").mkdir()
    for r in records:
        shutil.copy(world / r["video"], root / "clips")
    manifest = "".join(json.dumps({**r, "video": str(root / "clips" / Path(r["video"]).name)}) + "\n" for r in records)
    (root / "clips.jsonl").write_text(manifest)
    (root / "prompts.jsonl").write_text(manifest)  # a manifest whose captions are the prompts
    for name, part in (("generated", records[:3]), ("real", records[3:])):  # two sets of clips to compare
        (root / name).mkdir()
        for r in part:
            (root / name / Path(r["video"]).name).symlink_to(root / "clips" / Path(r["video"]).name)
    avjudge("bench", "synth", "--input", "sources", "--out", "suite")
    shutil.copy(root / "suite" / "prompts.json", root / "prompts.json")
    (root / "videos").symlink_to(root / "suite" / "videos")
    _write_judgments(root / "human.csv", json.loads((root / "prompts.json").read_text()), root / "suite" / "videos")
    return root


def _write_judgments(path: Path, prompts: list[dict], videos: Path) -> None:
    """Raters' judgments of the suite's models in `bench align`'s format: the reference preferred to each defect."""
    models = sorted(p.name for p in videos.iterdir() if p.is_dir())
    with open(path, "w", newline="") as f:
        rows = csv.writer(f)
        rows.writerow(["prompt_id", "model_a", "model_b", "dimension", "winner", "annotator"])
        for prompt in prompts:
            for other in (m for m in models if m != "reference"):
                rows.writerow([prompt["id"], "reference", other, "av", "A", "r1"])


def _made_by(page: Path) -> set[str]:
    """The top folders or files the page's commands write (``--out X``, ``output_dir=X``)."""
    text = " ".join(c for b in bash_blocks(page) for c in shell_commands(b))
    return {Path(m).parts[0] for m in re.findall(r"(?:--out |output_dir=)(\S+)", text)}


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "WANDB_MODE": "offline"}


@pytest.mark.parametrize("page", WALKED)
def test_a_docs_page_runs_as_written(page, inputs, tmp_path):
    text = (ROOT / "docs" / page).read_text()
    here = tmp_path / "walk"
    here.mkdir()
    made = _made_by(ROOT / "docs" / page)
    for entry in inputs.iterdir():
        if entry.name not in made:  # what the page makes itself it makes here
            (here / entry.name).symlink_to(entry)
    env, ran, skipped = _env(), [], []
    for block in bash_blocks(ROOT / "docs" / page):
        for command in shell_commands(block):
            words = _avjudge_words(command)
            if not words and not command.startswith(("printf", "echo")):
                continue  # another program (pip, curl): not avjudge's to run
            elsewhere = next((why for needle, why in ELSEWHERE.items() if needle in command), None)
            if elsewhere:
                skipped.append((command, elsewhere))
                continue
            extra = next((more for prefix, more in SHORTER.items() if tuple(words[: len(prefix)]) == prefix), [])
            if words[:1] == ["demo"]:  # the quick demo's folder is the inputs' own
                continue
            line = command.split(" #")[0] + " " + " ".join(extra)
            line = re.sub(r"^avjudge ", f"{sys.executable} -m avjudge.cli ", line)
            run = subprocess.run(["bash", "-c", line], cwd=here, env=env, capture_output=True, text=True)
            if run.returncode and MISSING_WEIGHTS.search(run.stderr):
                assert "avjudge checkpoints list" in text, f"{page}: `{command}` needs weights the page does not name"
                skipped.append((command, "weights not on this machine"))
                continue
            assert run.returncode == 0, f"{page}: `{command}` failed:\n{run.stderr[-3000:]}"
            ran.append(command)
    assert ran, f"{page}: no command ran ({skipped})"


def test_every_page_with_commands_is_walked_or_says_why_not():
    pages = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    with_commands = {p for p in pages if any(_avjudge_words(c) for b in bash_blocks(ROOT / "docs" / p)
                                              for c in shell_commands(b))}  # fmt: skip
    assert with_commands <= set(WALKED) | set(NOT_WALKED), with_commands - set(WALKED) - set(NOT_WALKED)
