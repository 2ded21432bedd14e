"""`avjudge perturb apply` writes what training sees: every AV strategy applied to a world video gives a file whose
sound and picture are the same length (a cut shift's window cut from both), which decodes like any clip."""

from __future__ import annotations

import json
import shutil

import pytest

from avjudge.cli import main
from avjudge.media import decode
from avjudge.perturb import STRATEGIES
from avjudge.world import MANIFEST

ESPEAK = shutil.which("espeak-ng") is not None


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_every_strategy_writes_sound_and_picture_of_one_length(name, small_world, tmp_path, capsys):
    if name == "speaker_count" and not ESPEAK:
        pytest.skip("needs espeak-ng (apt-get install espeak-ng)")
    records = [json.loads(line) for line in (small_world / MANIFEST).read_text().splitlines()]
    source = max(records, key=lambda r: r["duration"])  # room for a 3 s shift
    pool = tmp_path / "pool.jsonl"
    pool.write_text("".join(json.dumps({**r, "video": str(small_world / r["video"])}) + "\n" for r in records))
    out = tmp_path / "negative.mp4"
    argv = ["perturb", "apply", "--strategy", name, "--input", str(small_world / source["video"]), "--out", str(out),
            "--pool", str(pool), "--seed", "3"]  # fmt: skip
    assert main(argv) == 0
    params = json.loads(capsys.readouterr().out)["params"]
    clip = decode(out)  # refused as truncated where the streams differ in length
    picture, sound = len(clip.frames) / clip.fps, clip.audio.shape[1] / clip.sample_rate
    assert abs(picture - sound) <= 1.5 / clip.fps, (name, params, picture, sound)
    if name.startswith("time_shift"):  # cut: the window where both streams are real
        assert picture == pytest.approx(source["duration"] - abs(params["shift_s"]), abs=1.5 / clip.fps)
