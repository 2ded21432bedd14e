"""Every option refused before anything loads (exit 2, the option or file named), readers accepting only what their
writers write."""

from __future__ import annotations

import json
import shutil
import subprocess
import tracemalloc

import numpy as np
import pytest
import torch

import avjudge.data.shortcuts as shortcuts
import avjudge.judges.served as served
import avjudge.world.make as world_make
from avjudge.cli import main
from avjudge.config import ConfigError
from avjudge.judges import Judge
from avjudge.judges.calibration import CALIBRATION_FILE
from avjudge.judges.judge import CARD_FILE, JudgeCardFlags
from avjudge.media import MediaError, decode
from avjudge.rewards import Reward, RewardTerm, sample
from avjudge.rewards.adapters import trl_reward
from avjudge.rewards.inputs import clip_item
from avjudge.serve.app import reward_terms
from avjudge.world import WorldConfig

SERVE_REFUSALS = [  # (options, what the one-line error names)
    (["--on-failure", "abc"], "--on-failure 'abc'"),
    (["--on-failure", "inf"], "--on-failure 'inf'"),
    (["--on-failure", "nan"], "give neutral or a finite number"),
    (["--on-failure", "none"], "give neutral or a finite number"),
    (["--reward-judge", "av=-1"], "must sum to a positive number"),
    (["--reward-judge", "av=0"], "av's weight is 0"),
    (["--reward-judge", "av=1,av=2"], "av is given twice"),
    (["--max-wait-ms", "1e300"], "--max-wait-ms"),
    (["--token-file", "."], "--token-file ."),
    (["--token-file", "no_such_token.txt"], "--token-file no_such_token.txt"),
    (["--metric", "no_such_metric"], "unknown metric 'no_such_metric'"),
    (["--judge", "vt=no_such_folder"], "--judge vt=no_such_folder: no such folder"),
]


@pytest.mark.parametrize(("options", "named"), SERVE_REFUSALS)
def test_serve_refuses_an_option_before_any_judge_loads(options, named, tiny_judges, monkeypatch, capsys):
    monkeypatch.setattr(served, "load_judge", lambda *a, **k: pytest.fail("a judge loaded before the refusal"))
    argv = ["serve", "--judge", f"av={tiny_judges['qwen2_5_omni']}", *options, "--port", "18765"]
    assert main(argv) == 2
    out = capsys.readouterr()
    assert named in out.err and "serving" not in out.out and len(out.err.strip().splitlines()) == 1


def test_serve_help_lists_only_the_failure_rules_it_takes(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "neutral" in help_text and "none (null)" not in help_text and ", nan," not in help_text


def test_reward_terms_read_what_the_flag_documents():
    assert reward_terms("av=2,vt=1") == {"av": 2.0, "vt": 1.0} and reward_terms("av") == {"av": 1.0}
    assert reward_terms("av=2,dnsmos=-0.5") == {"av": 2.0, "dnsmos": -0.5}  # a penalty beside a positive term


def _judge_copy(tiny_judges, tmp_path):
    folder = tmp_path / "judge"
    shutil.copytree(tiny_judges["qwen2_5_omni"], folder)
    return folder


@pytest.mark.parametrize("temperature", [1e308, 1e-320, 0.0, -1.0])
def test_a_calibration_temperature_calibrate_never_writes_is_refused(temperature, tiny_judges, tmp_path):
    folder = _judge_copy(tiny_judges, tmp_path)
    (folder / CALIBRATION_FILE).write_text(json.dumps({"av": {"temperature": temperature}}))
    with pytest.raises(ConfigError, match=rf"{CALIBRATION_FILE}: av.temperature is a number from"):
        Judge.load("av", folder)


def test_a_judge_card_that_is_a_list_and_a_config_cut_short_are_named(tiny_judges, tmp_path):
    folder = _judge_copy(tiny_judges, tmp_path)
    (folder / CARD_FILE).write_text("[]")
    with pytest.warns(JudgeCardFlags, match="its judge card cannot be read"):
        Judge.load("av", folder)
    processor = folder / "preprocessor_config.json"
    processor.write_text(processor.read_text()[:40])
    with pytest.raises(ConfigError, match="preprocessor_config.json: not valid JSON.*copy the judge's folder again"):
        Judge.load("av", folder)


def test_data_audit_refuses_a_sampling_folder_without_a_judge_before_the_audit(pairs, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(shortcuts, "shortcut_audit", lambda *a, **k: pytest.fail("the audit ran before the refusal"))
    assert main(["data", "audit", "--input", str(pairs), "--sampling", str(tmp_path)]) == 2
    assert "the folder holds no judge" in capsys.readouterr().err


def test_filter_refuses_an_out_that_is_a_file(tmp_path, capsys):
    taken = tmp_path / "kept.txt"
    taken.write_text("")
    with pytest.raises(SystemExit) as stopped:
        main(["filter", "--input", str(tmp_path), "--rules", "av>=0.5", "--out", str(taken)])
    assert stopped.value.code == 2 and "a file is there; name a folder" in capsys.readouterr().err


@pytest.mark.parametrize("returned", [None, (0.1, 0.2), "0.5", np.array([0.1, 0.2])])
def test_a_reward_term_returning_no_number_fails_its_item_and_names_the_term(returned, world_records):
    videos = [r["video"] for r in world_records[:2]]
    term = RewardTerm(lambda clip: returned if clip.source == videos[1] else 0.25, midpoint=0.5)
    batch = Reward({"mine": term}).score([sample(clip_item(v)) for v in videos])
    assert batch.failed == [False, True] and batch.rewards[0] == 0.25
    assert batch.errors[1].startswith("mine: ") and "not one number" in batch.errors[1]


def test_trainer_inputs_of_any_shape_score_each_sample(world_records):
    videos = [r["video"] for r in world_records[:3]]
    reward = Reward({"mine": RewardTerm(lambda clip: float(clip.duration), midpoint=0.5)})
    # TRL's prompts as a generator, the rollouts in a column
    rewards = trl_reward(reward, media_from="clip")(prompts=(p for p in ["a", "a", "b"]), clip=videos)
    assert rewards == pytest.approx([decode(v, video=False).duration for v in videos], abs=0.05)
    # a group key that is a list (a conversational prompt): win rates within it
    ranked = Reward({"mine": RewardTerm(lambda clip: float(clip.duration), midpoint=0.5)}, mode="win_rate")
    batch = ranked.score([sample(clip_item(v), group=[{"role": "user", "content": "a"}]) for v in videos])
    assert not any(batch.failed) and sorted(batch.rewards) == pytest.approx([0.0, 0.5, 1.0])
    # one sample on the meta device: it alone fails
    meta = torch.zeros((4, 16, 16, 3), dtype=torch.uint8, device="meta")
    batch = reward.score([sample(clip_item(videos[0])), sample(clip_item(meta, fps=4.0))])
    assert batch.failed == [False, True] and "meta device" in batch.errors[1]


def test_a_clip_too_long_names_each_streams_length(tmp_path):
    path = tmp_path / "long_picture.mp4"
    subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "color=size=32x32:rate=4:duration=40", "-f", "lavfi",
                    "-i", "sine=duration=10", "-c:v", "libx264", "-c:a", "aac", str(path)], check=True)  # fmt: skip
    with pytest.raises(MediaError, match=r"the clip lasts 40.0 s \(picture 40.0 s, sound 10.0 s\), longer than"):
        decode(path, longest=30.0)


def test_a_world_of_a_hundred_million_clips_starts_writing_at_once(tmp_path, monkeypatch):
    """Its clips are drawn as they are made: none is listed in memory first (3 GB before the first clip, before)."""
    made = []

    def render(job):
        if len(made) == 2:
            raise KeyboardInterrupt
        made.append(job[1])
        return {"id": f"c{job[1]}", "video": "clips/none.mp4"}

    monkeypatch.setattr(world_make, "_render_job", render)
    tracemalloc.start()
    with pytest.raises(KeyboardInterrupt):
        world_make.make_world(WorldConfig(n=10**8), tmp_path / "w", workers=1, progress=False)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert made == [0, 1] and peak < 50 * 2**20


def test_train_names_a_missing_dataset_as_the_configs_before_anything_loads(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the shipped config's demo_out/pairs is not here
    assert main(["train", "--config", "tiny_world_av", "--set", "objective=bt"]) == 2
    assert "dataset demo_out/pairs (from the config tiny_world_av) does not exist" in capsys.readouterr().err


def test_a_named_sampling_wins_over_the_shipped_configs_own_rate_and_pixels(tiny_judges):
    from avjudge.config import load_config
    from avjudge.resources import resolve
    from avjudge.train import TrainConfig
    from avjudge.train.train_config import named_sampling_wins

    def loaded(*overrides):
        overrides = [f"model={tiny_judges['qwen2_5_omni']}", *overrides]
        return named_sampling_wins(
            load_config(TrainConfig, resolve("tiny_world_av", "train_config"), overrides), overrides
        )

    shipped = loaded()
    assert (shipped.fps, shipped.max_pixels) == (8.0, 3136)  # the config's own
    avbench = loaded("sampling=avbench")  # before: the config's 8 fps kept, the sampling asked for silently not used
    assert (avbench.fps, avbench.max_pixels) == (None, None) and avbench.time_sampling().fps == 1.0
    assert loaded("sampling=avbench", "fps=2").time_sampling().fps == 2.0  # what the overrides set stays


def test_omni_commands_name_a_missing_release_and_too_few_probe_items(tmp_path, capsys):
    missing = tmp_path / "Results.tar.gz"
    assert main(["omni", "score", "--suite", "sonicbench", "--input", str(missing), "--out", str(tmp_path / "s")]) == 2
    assert "no such file or folder; the released predictions are Results.tar.gz of" in capsys.readouterr().err
    items = tmp_path / "items"
    assert main(["omni", "sonicbench", "make", "--out", str(items), "--per-cell", "2", "--attributes", "pitch",
                 "--no-progress"]) == 0  # fmt: skip
    assert main(["omni", "sonicbench", "probe", "--items", str(items), "--out", str(tmp_path / "p")]) == 2
    assert "the probe needs at least 2 of each" in capsys.readouterr().err
