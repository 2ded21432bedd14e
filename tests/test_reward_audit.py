"""The reward audit: scripted terms whose preferences are known give exactly the expected shares and flags (a
silence-loving term and a prompt-blind mix are flagged), the degenerate variants are what they say (measured), and
`avjudge rewards audit` writes its report for a reward YAML of a judge."""

from __future__ import annotations

import html
import json

import numpy as np
import pytest

from avjudge.cli import main
from avjudge.media import NATIVE_FPS, DecodeNeeds, decode
from avjudge.pages import STYLE
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
    assert shares["black_frames"]["bright"] == 0.0
    # a term is not asked about what it never reads: the quiet one about the picture, the bright one about the sound,
    # neither about the prompt (a tie there would be counted as a preference otherwise)
    assert shares["black_frames"]["quiet"] is None and shares["white_noise"]["bright"] is None
    assert shares["silence"]["bright"] is None and shares["other_prompt"] == {"quiet": None, "bright": None}
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
    assert STYLE in page  # one style for every page avjudge writes (the demo's and the bench report's too)
    # a cell is red where the audit flags that term for that variant, and nowhere else
    flagged = {(v, name) for v, row in report["variants"].items() for name in row["flagged"]}
    assert page.count('<td class="flag">') == len(flagged)
    for flag_text in report["flags"]:
        assert html.escape(flag_text) in page
    (tmp_path / "bad.mp4").write_bytes(b"not a video")  # nothing readable: an error, not an audit without flags
    assert main([*argv[:4], "--input", str(tmp_path / "bad.mp4"), "--out", str(tmp_path / "none")]) == 1
    assert "none of the 1 clips could be read" in capsys.readouterr().err


def flat(clip) -> float:
    return 0.5


def seconds(clip) -> float:
    return clip.audio.shape[1] / 16000


def hates_mutes(clip) -> float:
    return float(np.mean(clip.audio != 0)) * float(np.mean(clip.frames.mean((1, 2, 3)) > 0))


BOTH = DecodeNeeds(video=True, fps=NATIVE_FPS, audio=True, sample_rate=16000, channels=1)


def test_ties_are_no_preference_and_a_term_that_punishes_an_in_sync_mute_is_flagged(samples):
    with pytest.warns(PromptBlindReward):
        reward = Reward({"flat": RewardTerm(flat, midpoint=0.5, aspect="video", needs=PICTURE),
                         "mutes": RewardTerm(hates_mutes, midpoint=0.5, aspect="sync", needs=BOTH),
                         "seconds": RewardTerm(seconds, midpoint=0.5, aspect="audio", needs=SOUND)})  # fmt: skip
    report = reward.audit(samples, bootstrap=0)
    black = report["variants"]["black_frames"]["flat"]
    assert black["share"] == 0.0 and black["ties"] == 1.0  # the same score: counted apart, not as a preference
    assert not any(flag.startswith("flat") for flag in report["flags"])
    assert report["variants"]["in_sync_mute"]["mutes"]["share"] == 0.0
    assert any(flag.startswith("mutes punishes in_sync_mute") for flag in report["flags"])
    assert not any(flag.startswith("flat punishes") for flag in report["flags"])  # it reads no sound: not a sync term
    # a cut variant is compared with its source cut the same way: a term of the sound's length sees no change
    window = report["variants"]["window_shifted_sound"]["seconds"]
    assert window["n"] == len(samples) and window["ties"] == 1.0


def test_one_clip_has_no_other_clip_to_borrow_and_no_readable_clip_is_an_error(samples, tmp_path, capsys):
    from avjudge.rewards.audit import AuditError

    with pytest.warns(PromptBlindReward):
        reward = Reward({"mutes": RewardTerm(hates_mutes, midpoint=0.5, aspect="sync", needs=BOTH)})
    report = reward.audit(samples[:1], bootstrap=0)
    assert report["variants"]["other_sound"]["mutes"]["share"] is None  # n/a, not "prefers"
    assert report["variants"]["black_frames"]["mutes"]["n"] == 1
    with pytest.raises(AuditError, match="none of the 2 clips could be read"):
        reward.audit([{"video": str(tmp_path / "missing.mp4")}] * 2, bootstrap=0)
