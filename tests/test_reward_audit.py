"""The reward audit: scripted terms whose preferences are known give exactly the expected shares and flags (a
silence-loving term and a prompt-blind mix are flagged), the degenerate variants are what they say (measured), and
`avjudge rewards audit` writes its report for a reward YAML of a judge."""

from __future__ import annotations

import json

import numpy as np
import pytest

from avjudge.cli import main
from avjudge.media import NATIVE_FPS, DecodeNeeds, decode
from avjudge.perturb import Context, get_strategy
from avjudge.rewards import PromptBlindReward, Reward, RewardTerm, sample

SOUND = DecodeNeeds(audio=True, sample_rate=16000, channels=1)
PICTURE = DecodeNeeds(video=True, fps=NATIVE_FPS)


def loves_silence(clip) -> float:
    return 1.0 - min(1.0, 10 * float(np.sqrt(np.mean(clip.audio**2))))


def brightness(clip) -> float:
    return float(clip.frames.mean()) / 255


@pytest.fixture
def samples(world_records):
    return [sample({"video": r["video"]}, r["captions"]["video"]) for r in world_records]


def test_scripted_terms_give_the_expected_shares_and_flags(samples):
    with pytest.warns(PromptBlindReward, match="reads no prompt"):
        reward = Reward({"quiet": RewardTerm(loves_silence, midpoint=0.5, aspect="audio", needs=SOUND),
                         "bright": RewardTerm(brightness, midpoint=0.5, aspect="video", needs=PICTURE)})  # fmt: skip
    report = reward.audit(samples, bootstrap=200)
    shares = {v: {t: row[t]["share"] for t in ("quiet", "bright")} for v, row in report["variants"].items()}
    assert report["clips"] == 3 and report["prompt_blind"] and report["flags"][0].startswith("prompt-blind")
    assert shares["silence"]["quiet"] == 1.0  # silence is what this term loves: flagged
    assert any(f.startswith("quiet prefers silence") for f in report["flags"])
    assert shares["black_frames"]["bright"] == 0.0 and shares["black_frames"]["quiet"] == 1.0  # the sound kept
    assert shares["white_noise"]["bright"] == 1.0 and shares["silence"]["bright"] == 1.0  # the picture kept
    assert shares["other_prompt"] == {"quiet": 1.0, "bright": 1.0}  # neither reads the prompt: blind to its swap
    ci = report["variants"]["silence"]["quiet"]["ci95"]
    assert ci == [1.0, 1.0] and report["variants"]["silence"]["quiet"]["n"] == 3
    reads = Reward({"bright": RewardTerm(brightness, midpoint=0.5, aspect="video-text", needs=PICTURE)})
    assert not reads.audit(samples, bootstrap=0)["prompt_blind"]


def test_the_degenerate_variants_are_what_they_say(world_records):
    clip = decode(world_records[0]["video"])
    apply = {name: get_strategy(name).apply(clip, {"seed": 3} if "seed" in get_strategy(name).defaults else {},
                                            Context()) for name in  # fmt: skip
             ("black_frames", "frozen_frame", "looped_first_second", "reversed_frames", "shuffled_frames", "silence",
              "white_noise")}  # fmt: skip
    assert apply["black_frames"].frames.max() == 0 and np.array_equal(apply["black_frames"].audio, clip.audio)
    assert all(np.array_equal(f, clip.frames[0]) for f in apply["frozen_frame"].frames)
    second = int((clip.timestamps < 1.0).sum())
    assert np.array_equal(apply["looped_first_second"].frames[second : 2 * second], clip.frames[:second])
    assert np.array_equal(apply["looped_first_second"].audio[:, clip.sample_rate : 2 * clip.sample_rate],
                          clip.audio[:, : clip.sample_rate])  # fmt: skip
    assert np.array_equal(apply["reversed_frames"].frames, clip.frames[::-1])
    shuffled = apply["shuffled_frames"].frames
    assert not np.array_equal(shuffled, clip.frames) and sorted(f.tobytes() for f in shuffled) == sorted(
        f.tobytes() for f in clip.frames
    )
    assert not apply["silence"].audio.any()
    noise = apply["white_noise"].audio
    assert np.sqrt(np.mean(noise**2)) == pytest.approx(np.sqrt(np.mean(clip.audio.astype(np.float64) ** 2)), rel=0.1)


def test_rewards_audit_writes_its_report_for_a_reward_yaml(tiny_judges, small_world, tmp_path, capsys):
    (tmp_path / "reward.yaml").write_text(
        f"terms:\n  av: {{judge: av, checkpoint: {tiny_judges['qwen2_5_omni']}}}\ndevice: cpu\nbatch_size: 4\n"
    )
    out = tmp_path / "audit"
    argv = ["rewards", "audit", "--reward", str(tmp_path / "reward.yaml"), "--input", str(small_world / "world.jsonl")]
    assert main([*argv, "--out", str(out), "--bootstrap", "50"]) == 0
    report = json.loads((out / "audit.json").read_text())
    assert len(report["variants"]) == 12 and report["clips"] == 6 and report["prompt_blind"]
    assert "flag: prompt-blind" in capsys.readouterr().out
    assert "| silence (the sound silenced) |" in (out / "audit.md").read_text()
    page = (out / "audit.html").read_text()
    assert page.count("<tr>") == 13 and "data:image/png;base64," in page
