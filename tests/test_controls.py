"""Judge sanity controls: a scripted judge whose use of each stream is known, and the tiny judges end to end."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from avjudge.bench.controls import run_controls
from avjudge.cli import main
from avjudge.judges.scorer import ScoreResult
from avjudge.media import DecodeNeeds, MediaClip
from avjudge.prompts import TASKS


def clip(level: int) -> MediaClip:
    """Brightness 40 k and a tone of 200 k Hz."""
    t = np.arange(16000) / 16000
    frames = np.full((4, 8, 8, 3), 40 * level, np.uint8)
    audio = np.sin(2 * np.pi * 200 * level * t)[None].astype(np.float32)
    return MediaClip(frames, 4.0, np.arange(4) / 4, audio, 16000, duration=1.0, source=f"clip_{level}")


class ScriptedAVJudge:
    """Says Yes when there is sound, a picture, and the sound's pitch is the one the picture's brightness encodes; a
    judge as the scoring core holds one (its task, what it reads, its settings, ``score`` of decoded clips)."""

    task = TASKS["av"]
    needs = DecodeNeeds(video=True, fps=4.0, audio=True, sample_rate=16000, channels=1)
    settings = SimpleNamespace(workers=1, decode_processes=0)

    def score(self, clips, texts=None, utterances=None):
        results = []
        for c in clips:
            if c.audio.std() == 0 or c.frames.mean() == 128:
                results.append(ScoreResult(0.1))
                continue
            pitch = np.abs(np.fft.rfft(c.audio[0])).argmax()  # Hz, one second of audio
            results.append(ScoreResult(0.9 if round(pitch / 200) == round(c.frames.mean() / 40) else 0.2))
        return results


def test_the_controls_find_what_a_scripted_judge_uses(tmp_path):
    items = [{"id": f"c{k}", "media": clip(k), "captions": {}} for k in (1, 2, 4)]
    items.append({"id": "bad", "video": str(tmp_path / "broken.mp4"), "captions": {}})
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
    assert "broken.mp4" in next(r["error"] for r in rows if r["id"] == "bad")


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
