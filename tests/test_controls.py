"""Judge sanity controls: a scripted judge whose use of each stream is known, and the tiny judges end to end."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from avjudge.bench.controls import run_controls
from avjudge.cli import main
from avjudge.judges.adapters import JudgeSample
from avjudge.judges.scorer import ScoreResult, YesNoHead
from avjudge.media import MediaClip, MediaError
from avjudge.prompts import TASKS


class ScriptedAVJudge:
    """Says Yes when there is sound, a picture, and the sound's pitch is the one the picture's brightness encodes."""

    task = TASKS["av"]
    head = SimpleNamespace(failed=YesNoHead.failed)

    def decode(self, path):
        if path == "broken.mp4":
            raise MediaError(path, "cannot be decoded")
        level = int(path.split("_")[1].split(".")[0])  # clip_<k>.mp4: brightness 40 k, a tone of 200 k Hz
        t = np.arange(16000) / 16000
        frames = np.full((4, 8, 8, 3), 40 * level, np.uint8)
        audio = np.sin(2 * np.pi * 200 * level * t)[None].astype(np.float32)
        timestamps = np.arange(4) / 4
        return MediaClip(frames, 4.0, timestamps, audio, 16000, duration=1.0, source=path)

    def sample(self, clip, text=None):
        return JudgeSample(frames=clip.frames, fps=clip.fps, audio=clip.audio[0], text=text)

    def score_samples(self, samples):
        results = []
        for s in samples:
            if s.audio.std() == 0 or s.frames.mean() == 128:
                results.append(ScoreResult(0.1))
                continue
            pitch = np.abs(np.fft.rfft(s.audio)).argmax()  # Hz, one second of audio
            results.append(ScoreResult(0.9 if round(pitch / 200) == round(s.frames.mean() / 40) else 0.2))
        return results


def test_the_controls_find_what_a_scripted_judge_uses(tmp_path):
    items = [{"id": f"c{k}", "video": f"clip_{k}.mp4", "captions": {}} for k in (1, 2, 4)]
    items.append({"id": "bad", "video": "broken.mp4", "captions": {}})
    summary = run_controls(ScriptedAVJudge(), items, tmp_path)
    assert summary["original"] == {
        "clips": 3,
        "errors": 1,
        "mean_score": pytest.approx(0.9),
        "yes_rate": 1.0,
        "mean_drop": 0.0,
    }
    assert summary["silent"]["yes_rate"] == 0.0 and summary["silent"]["mean_drop"] == pytest.approx(0.8)
    assert summary["blank_picture"]["yes_rate"] == 0.0
    assert summary["other_audio"]["yes_rate"] == 0.0 and summary["other_audio"]["mean_drop"] == pytest.approx(0.7)
    assert "other_text" not in summary  # the AV judge reads no text
    rows = [json.loads(line) for line in (tmp_path / "controls.jsonl").read_text().splitlines()]
    assert len(rows) == 1 + 3 * 4 and json.loads((tmp_path / "summary.json").read_text())["judge"] == "av"


@pytest.mark.parametrize("task", ["av", "vt"])
def test_the_controls_run_on_tiny_judges(tiny_judges, small_world, tmp_path, task, capsys):
    manifest = small_world / "world.jsonl"
    argv = ["bench", "controls", "--input", str(manifest), "--judge", f"{task}={tiny_judges['qwen2_5_omni']}"]
    assert main([*argv, "--out", str(tmp_path), "--no-progress"]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    clips = sum(1 for _ in open(manifest))
    expected = {
        "av": {"original", "silent", "blank_picture", "other_audio"},
        "vt": {"original", "blank_picture", "other_text"},
    }
    assert set(summary) - {"judge"} == expected[task]
    assert all(summary[c]["clips"] == clips for c in expected[task])
    assert "Yes on" in capsys.readouterr().out
