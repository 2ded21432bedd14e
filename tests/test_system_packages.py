"""`scripts/system_packages.sh`: the one step that brings the Debian packages `make demo`, `make test` and CI use.

Run for real on a PATH of stand-ins: an `id` that says who runs it, an `apt-get` that records what it was asked and
"installs" a package by putting an executable of its name on the PATH.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "system_packages.sh"
BASH = shutil.which("bash")


def _executable(path: Path, body: str) -> None:
    path.write_text("#!" + BASH + "\n" + body)
    path.chmod(0o755)


def _machine(tmp_path: Path, uid: int, have: tuple[str, ...] = ()) -> Path:
    """A bin folder holding only what the script may call: `id` answering ``uid``, `env`, an `apt-get` that logs its
    arguments and installs by writing executables, and the commands in ``have``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _executable(bin_dir / "id", f"echo {uid}\n")
    (bin_dir / "env").symlink_to(shutil.which("env"))
    commands = {"ffmpeg": ["ffmpeg", "ffprobe"], "espeak-ng": ["espeak-ng"], "chromium": ["chromium"]}
    _executable(
        bin_dir / "apt-get",
        f'echo "$@" >> {tmp_path}/apt.log\n'
        'if [ "$1" = install ]; then for p in "${@:4}"; do case $p in\n'
        + "".join(
            f"  {package}) "
            + " ".join(f"printf 'exit 0' > {bin_dir}/{c}; {shutil.which('chmod')} +x {bin_dir}/{c};" for c in names)
            + " ;;\n"
            for package, names in commands.items()
        )
        + "esac; done; fi\n",
    )
    for command in have:
        _executable(bin_dir / command, "exit 0\n")
    return bin_dir


def _run(bin_dir: Path, purpose: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [BASH, str(SCRIPT), purpose],
        env={"PATH": str(bin_dir), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def _apt_calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "apt.log"
    return log.read_text().splitlines() if log.exists() else []


def test_as_root_it_installs_what_the_tests_lack_in_one_apt_call(tmp_path):
    bin_dir = _machine(tmp_path, uid=0, have=("espeak-ng",))
    done = _run(bin_dir, "test")
    assert done.returncode == 0, done.stderr
    assert _apt_calls(tmp_path) == ["update -qq", "install -y -qq ffmpeg chromium"]
    assert "missing" not in done.stdout
    assert all((bin_dir / c).exists() for c in ("ffmpeg", "ffprobe", "chromium"))
    # a second run finds everything: nothing is looked up
    again = _run(bin_dir, "test")
    assert again.returncode == 0 and again.stdout == "" and len(_apt_calls(tmp_path)) == 2


def test_the_demo_asks_only_for_what_it_uses(tmp_path):
    bin_dir = _machine(tmp_path, uid=0)
    assert _run(bin_dir, "demo").returncode == 0
    assert _apt_calls(tmp_path)[-1] == "install -y -qq espeak-ng"


def test_without_root_it_names_each_missing_package_its_cost_and_the_fix_and_still_succeeds(tmp_path):
    bin_dir = _machine(tmp_path, uid=1000, have=("chromium",))  # no sudo on this PATH
    done = _run(bin_dir, "test")
    assert done.returncode == 0
    assert _apt_calls(tmp_path) == []
    lines = done.stdout.splitlines()
    assert [re.match(r"missing (\S+):", line).group(1) for line in lines] == ["ffmpeg", "espeak-ng"]
    assert "speech tests" in lines[1] and lines[1].endswith("sudo apt-get install -y espeak-ng")
    demo = _run(bin_dir, "demo").stdout
    assert demo.startswith("missing espeak-ng: the demo makes its world without speech")


def test_skip_only_reports(tmp_path):
    bin_dir = _machine(tmp_path, uid=0)
    done = _run(bin_dir, "test", SYSTEM_PACKAGES="skip")
    assert _apt_calls(tmp_path) == [] and done.stdout.count("missing ") == 3


def test_an_unknown_purpose_is_exit_2():
    done = subprocess.run([BASH, str(SCRIPT), "everything"], capture_output=True, text=True)
    assert done.returncode == 2 and "usage" in done.stderr


def test_make_demo_make_test_and_ci_run_the_same_step():
    makefile = (ROOT / "Makefile").read_text()
    targets = {
        name: body for name, body in re.findall(r"^([\w-]+):[^\n]*\n((?:\t[^\n]*\n)*)", makefile, flags=re.MULTILINE)
    }
    assert "bash scripts/system_packages.sh demo" in targets["demo"]
    for name in ("test", "test-slow"):
        assert "bash scripts/system_packages.sh test" in targets[name]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "bash scripts/system_packages.sh test" in ci and "apt-get" not in ci


def test_a_test_run_ends_with_its_skips_counted_by_reason(tmp_path):
    (tmp_path / "test_skips.py").write_text(
        "import pytest\n"
        "@pytest.mark.skip(reason='needs chromium')\n"
        "def test_a(): pass\n"
        "@pytest.mark.skip(reason='needs chromium')\n"
        "def test_b(): pass\n"
        "def test_c(): pytest.skip('needs a GPU')\n"
        "def test_d(): pass\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-c", os.devnull, "--rootdir", str(tmp_path),
         str(tmp_path / "test_skips.py")],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout
    summary = done.stdout[done.stdout.index("skipped, by reason:") :].splitlines()
    assert [line.split(None, 1) for line in summary[1:3]] == [["2", "needs chromium"], ["1", "needs a GPU"]]
