import argparse
import json
import math

import numpy as np
import pytest
import torch

from avjudge.config import ConfigError
from avjudge.jsonl import read_jsonl
from avjudge.judges import CheckpointError, Judge, render_prompt
from avjudge.judges.calibration import fit_temperature, load_temperature, save_temperature
from avjudge.judges.media_inputs import (
    VisionPreprocess,
    audio_feature_tokens,
    log_mel_torch,
    video_patches,
    video_patches_torch,
    whisper_features,
)
from avjudge.judges.scorer import YesNoHead
from avjudge.media import decode, encode_audio
from avjudge.rewards import AVReward, RewardTerm
from avjudge.world import MANIFEST

OMNI_SYSTEM = (
    "You are Qwen, a virtual human developed by the Qwen Team, Alibaba Group, capable of perceiving "
    "auditory and visual inputs, as well as generating text and speech."
)


def test_prompts_are_pinned():
    assert render_prompt("av", "qwen2_5_omni") == (
        f"<|im_start|>system\n{OMNI_SYSTEM}<|im_end|>\n"
        "<|im_start|>user\n<|vision_bos|><|VIDEO|><|vision_eos|><|audio_bos|><|AUDIO|><|audio_eos|>"
        "Does the audio accurately match the video content? Answer only Yes or No.<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert render_prompt("vt", "qwen2_5_omni", text="A red circle.", answer="No") == (
        f"<|im_start|>system\n{OMNI_SYSTEM}<|im_end|>\n"
        "<|im_start|>user\n<|vision_bos|><|VIDEO|><|vision_eos|>"
        "Does the video accurately match the following description?\nDescription: A red circle.\n"
        "Answer only Yes or No.<|im_end|>\n<|im_start|>assistant\nNo<|im_end|>\n"
    )
    assert render_prompt("at", "qwen2_audio", text="A low tone.", utterance="hello") == (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\nAudio 1: <|audio_bos|><|AUDIO|><|audio_eos|>\n"
        "Does the audio accurately match the following description?\nDescription: A low tone.\nSpeech: hello\n"
        "Answer only Yes or No.<|im_end|>\n<|im_start|>assistant\n"
    )
    with pytest.raises(ValueError, match="needs a description"):
        render_prompt("vt", "qwen2_5_omni")


@pytest.fixture(scope="module")
def judges(tiny_judges):
    return {
        "av": Judge.load("av", tiny_judges["qwen2_5_omni"], batch_size=4),
        "vt": Judge.load("vt", tiny_judges["qwen2_5_omni"], batch_size=4),
        "at": Judge.load("at", tiny_judges["qwen2_audio"], batch_size=4),
    }


@pytest.fixture(scope="module")
def world_items(small_world):
    records = list(read_jsonl(small_world / MANIFEST))
    return [str(small_world / r["video"]) for r in records], records


def test_token_ids_expand_media_placeholders(judges, world_items):
    videos, records = world_items
    judge = judges["av"]
    clip = decode(videos[0])
    sample = judge.sample(clip)
    prepared = judge.prepare(sample)
    tok = judge.adapter.tokenizer
    ids = prepared.input_ids
    video_id, audio_id = tok.convert_tokens_to_ids("<|VIDEO|>"), tok.convert_tokens_to_ids("<|AUDIO|>")
    assert ids.count(video_id) == judge.adapter.vision.tokens(prepared.video_grid_thw)
    # Whisper-style encoders: one mel frame per 160 samples, then two stride-2 reductions (25 tokens a second)
    assert ids.count(audio_id) == audio_feature_tokens(len(sample.audio) // 160)
    assert audio_feature_tokens(800) == 200
    text = tok.decode(ids)
    assert text.replace("<|VIDEO|>", "").replace("<|AUDIO|>", "") == render_prompt("av", "qwen2_5_omni").replace(
        "<|VIDEO|>", ""
    ).replace("<|AUDIO|>", "")
    # frames were sampled at the AV default's 8 fps (avjudge.sampling's sync): grid_t = frames / temporal patch
    assert judge.settings.fps == 8.0
    assert prepared.video_grid_thw[0] == int(np.ceil(np.ceil(clip.duration * 8 - 1e-9) / 2))


@pytest.mark.parametrize("seconds", [0.0003, 1.0, 3.0048, 9.97, 10.0])
def test_audio_features_equal_whisper_extractor_without_padding_work(judges, seconds):
    fe = judges["at"].adapter.feature_extractor
    assert fe.n_samples == 10 * 16000  # the last two lengths sit at the tiny AT judge's window end
    audio = (np.random.default_rng(2).standard_normal(int(seconds * 16000)) * 0.2).astype(np.float32)
    reference = fe(audio, sampling_rate=16000, padding="max_length", return_attention_mask=True, return_tensors="np")
    features, mask = (t.numpy() for t in whisper_features(audio, fe, fe.nb_max_frames))
    np.testing.assert_allclose(features, reference["input_features"][0], atol=1e-6)
    np.testing.assert_array_equal(mask, reference["attention_mask"][0])
    valid_only, valid_mask = (t.numpy() for t in whisper_features(audio, fe))
    assert valid_only.shape[1] == valid_mask.sum() == mask.sum()
    np.testing.assert_array_equal(valid_only, features[:, : valid_only.shape[1]])


@pytest.mark.parametrize(
    "size, max_pixels", [((130, 170), 200 * 28 * 28), ((256, 256), 112 * 112), ((90, 400), 480 * 640)]
)
def test_video_patches_match_transformers_processor(size, max_pixels):
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    img = np.random.default_rng(0).integers(0, 255, (*size, 3), dtype=np.uint8)
    reference = Qwen2VLImageProcessorPil(min_pixels=3136, max_pixels=max_pixels)(images=[img], return_tensors="np")
    # a static two-frame video is what the image processor makes of one image
    ours, grid = video_patches(np.stack([img, img]), VisionPreprocess(max_pixels=max_pixels))
    assert tuple(reference["image_grid_thw"][0]) == grid
    np.testing.assert_allclose(ours, reference["pixel_values"], atol=1e-6)


def test_torch_twins_of_the_processors(judges):
    fe = judges["at"].adapter.feature_extractor
    audio = (np.random.default_rng(1).standard_normal(16000 * 2) * 0.1).astype(np.float32)
    reference = fe(audio, sampling_rate=16000, padding="max_length", return_tensors="np")["input_features"][0]
    ours = log_mel_torch(torch.nn.functional.pad(torch.tensor(audio), (0, fe.n_samples - len(audio))), fe)
    np.testing.assert_allclose(ours.numpy(), reference, atol=1e-5)
    yy, xx = np.mgrid[0:64, 0:96]
    smooth = np.stack([128 + 100 * np.sin(xx / 9.0 + c) * np.cos(yy / 7.0) for c in range(3)], -1).astype(np.uint8)
    p = VisionPreprocess(max_pixels=56 * 84)
    exact, grid = video_patches(np.stack([smooth] * 2), p)
    approx, grid_t = video_patches_torch(torch.tensor(np.stack([smooth] * 2) / 255.0, dtype=torch.float32), p)
    assert grid == grid_t
    assert np.abs(approx.numpy() - exact).mean() < 0.05  # bicubic kernels differ slightly (PIL vs torch)


def test_a_judge_whose_weights_wait_loads_them_where_it_first_scores(tiny_judges, judges, world_items):
    import pickle

    from avjudge.cli.grammar import model_options
    from avjudge.runtime import make_engine

    videos, _ = world_items
    deferred = Judge.load("av", tiny_judges["qwen2_5_omni"], defer_weights=True, batch_size=4)
    assert deferred.adapter._model is None and deferred.needs == judges["av"].needs
    sent = pickle.loads(pickle.dumps(deferred))  # as a Ray actor receives it: it loads there, at once
    assert sent.adapter._model is not None and deferred.adapter._model is None
    eager = [r.score for r in judges["av"].score(videos[:3])]
    assert [r.score for r in deferred.score(videos[:3])] == eager and deferred.adapter._model is not None
    assert [r.score for r in sent.score(videos[:3])] == eager
    args = argparse.Namespace(
        batch_size=4, workers=1, device="cpu", dtype="auto", attention="auto", align_widths=0, compile=False
    )
    assert model_options(args, make_engine("ray"))["defer_weights"]  # a Ray job's driver loads no weights
    assert "defer_weights" not in model_options(args, make_engine("local"))


@pytest.mark.parametrize("task", ["av", "vt", "at"])
def test_batched_scores_equal_one_by_one(judges, world_items, task):
    videos, records = world_items
    judge = judges[task]
    field = {"av": None, "vt": "video", "at": "audio"}[task]
    texts = [r["captions"][field] for r in records] if field else None
    batched = judge.score(videos, texts)
    for i, video in enumerate(videos):
        alone = judge.score([video], [texts[i]] if texts else None)[0]
        assert abs(alone.score - batched[i].score) < 1e-5 and abs(alone.delta - batched[i].delta) < 1e-4
    assert len({round(r.score, 6) for r in batched}) > 1  # inputs matter


def test_score_equals_independent_softmax_of_full_forward(judges, world_items):
    videos, records = world_items
    judge = judges["vt"]
    tok = judge.adapter.tokenizer
    samples = [judge.sample(decode(v), r["captions"]["video"]) for v, r in zip(videos[:3], records)]
    batch = judge.adapter.collate([judge.prepare(s) for s in samples])
    with torch.no_grad():
        logits = judge.adapter.model(**batch, use_audio_in_video=False).logits[:, -1].double()
    probs = torch.softmax(logits, -1)
    yes = sum(probs[:, tok.convert_tokens_to_ids(t)] for t in ["Yes", "ĠYes", "yes", "Ġyes", "YES"])
    no = sum(probs[:, tok.convert_tokens_to_ids(t)] for t in ["No", "ĠNo", "no", "Ġno", "NO"])
    expected = (yes / (yes + no)).tolist()
    got = [r.score for r in judge.score_samples(samples)]
    np.testing.assert_allclose(got, expected, atol=1e-6)
    results = judge.score_samples(samples)
    np.testing.assert_allclose([r.mass for r in results], (yes + no).tolist(), rtol=1e-5)


def test_parity_with_avbench_generate_recipe(tiny_judges, world_items):
    """AVBench: generate(max_new_tokens=1, output_scores=True), softmax over [Yes, No]."""
    videos, _ = world_items
    judge = Judge.load("av", tiny_judges["qwen2_5_omni"], yes_variants=("Yes",), no_variants=("No",))
    tok = judge.adapter.tokenizer
    yes_id, no_id = tok.convert_tokens_to_ids("Yes"), tok.convert_tokens_to_ids("No")
    for video in videos[:3]:
        batch = judge.adapter.collate([judge.prepare(judge.sample(judge.decode(video)))])
        with torch.no_grad():
            out = judge.adapter.model.generate(
                **batch, max_new_tokens=1, output_scores=True, return_dict_in_generate=True, do_sample=False
            )
        pair = torch.softmax(out.scores[0][0, [yes_id, no_id]].double(), -1)
        ours = judge.score([video])[0]
        assert abs(ours.score - pair[0].item()) < 1e-5


def test_gradient_reaches_frames_and_audio(judges, world_items):
    videos, records = world_items
    clip = decode(videos[0], fps=1.0, sample_rate=16000, channels=1)
    frames = torch.tensor(clip.frames / 255.0, dtype=torch.float32, requires_grad=True)
    wave = torch.tensor(clip.audio[0], requires_grad=True)
    score = judges["av"].score_differentiable(frames=frames, fps=1.0, waveform=wave)
    assert 0 < score.item() < 1
    score.backward()
    assert frames.grad is not None and frames.grad.abs().sum() > 0
    assert wave.grad is not None and wave.grad.abs().sum() > 0
    wave_at = torch.tensor(clip.audio[0], requires_grad=True)
    s_at = judges["at"].score_differentiable(waveform=wave_at, text=records[0]["captions"]["audio"])
    s_at.backward()
    assert wave_at.grad.abs().sum() > 0
    # the differentiable score agrees with the regular one (mel is exact; only frame resizing differs)
    regular = judges["at"].score([videos[0]], [records[0]["captions"]["audio"]])[0].score
    assert abs(s_at.item() - regular) < 1e-4


def test_s_from_log_probabilities_is_the_sigmoid_of_the_log_odds_and_never_overflows():
    head = YesNoHead(yes_ids=(1,), no_ids=(2,), temperature=2.0)
    r = head.result(math.log(0.6), math.log(0.2))
    assert r.score == pytest.approx(math.sqrt(3) / (math.sqrt(3) + 1), abs=1e-12)  # odds 3 at temperature 2: 3 ** 0.5
    assert r.delta == pytest.approx(math.log(3.0)) and r.mass == pytest.approx(0.8)
    assert head.result(0.0, -5000.0).score == 1.0 and head.result(-5000.0, 0.0).score == 0.0  # a server's extremes


def test_answer_variants_are_summed(judges):
    tok = judges["av"].adapter.tokenizer
    head = YesNoHead.from_tokenizer(tok)
    assert len(head.yes_ids) == 5 and len(head.no_ids) == 5
    logits = torch.randn(2, len(tok))
    probs = torch.softmax(logits, -1)
    result = head.results(logits)
    assert abs(result[0].yes_prob - probs[0, list(head.yes_ids)].sum().item()) < 1e-6
    single = YesNoHead.from_tokenizer(tok, ("Yes",), ("No",))
    d = (logits[1, single.yes_ids[0]] - logits[1, single.no_ids[0]]).item()
    assert abs(single.results(logits)[1].delta - d) < 1e-5  # delta = logit_yes - logit_no for single tokens


def test_temperature_calibration_recovers_true_temperature(tmp_path):
    rng = np.random.default_rng(0)
    deltas = rng.normal(0, 4, 20000)
    labels = (rng.random(20000) < 1 / (1 + np.exp(-deltas / 2.5))).astype(int)
    t = fit_temperature(deltas, labels)
    assert abs(t - 2.5) < 0.15
    save_temperature(tmp_path, "av", t)
    assert load_temperature(tmp_path, "av") == t and load_temperature(tmp_path, "vt") is None


def test_calibration_file_changes_scores(tiny_judges, tmp_path, world_items):
    import shutil

    ckpt = tmp_path / "ckpt"
    shutil.copytree(tiny_judges["qwen2_5_omni"], ckpt)
    plain = Judge.load("av", ckpt).score(world_items[0][:1])[0]
    save_temperature(ckpt, "av", 0.5)
    sharp = Judge.load("av", ckpt).score(world_items[0][:1])[0]
    assert abs(sharp.score - 1 / (1 + np.exp(-plain.delta / 0.5))) < 1e-5


def test_bad_inputs_are_errors_not_scores(judges, world_items, tmp_path):
    videos, records = world_items
    text_file = tmp_path / "x.mp4"
    text_file.write_text("nope")
    results = judges["vt"].score([videos[0], str(text_file), videos[1]], [records[0]["captions"]["video"], "t", ""])
    assert results[0].ok and results[0].score is not None
    assert results[1].score is None and "not a readable" in results[1].error
    assert results[2].score is None and "needs a description" in results[2].error
    long_audio = tmp_path / "long.wav"
    window_s = judges["at"].adapter.max_audio_seconds
    encode_audio(long_audio, np.zeros((1, int(16000 * (window_s + 1))), np.float32), 16000)
    assert f"longer than the judge's {window_s:.0f} s window" in judges["at"].score([long_audio], ["x"])[0].error
    head_judge = Judge.load("at", judges["at"].adapter.checkpoint, long_audio="head")
    assert head_judge.score([long_audio], ["x"])[0].ok


def test_scoring_streams_a_bounded_window_ahead_of_the_forward_passes(tiny_judges, monkeypatch):
    """A long list is prepared a few windows ahead of the model, never all at once, and keeps its order."""
    judge = Judge.load("vt", tiny_judges["qwen2_5_omni"], batch_size=2, workers=2)
    rng = np.random.default_rng(0)
    samples = [judge.sample(_still_clip(rng), f"clip {i}") for i in range(60)]
    samples[7] = judge.sample(_still_clip(rng), "")  # unscorable: no description
    prepared, at_first_forward = [], []
    prepare, forward = judge.prepare, judge.adapter.next_token_logits
    monkeypatch.setattr(judge, "prepare", lambda s, *a: prepared.append(1) or prepare(s, *a))
    monkeypatch.setattr(
        judge.adapter, "next_token_logits", lambda batch: at_first_forward.append(len(prepared)) or forward(batch)
    )
    streamed = judge.score_samples(samples)
    window = 4 * 2
    assert at_first_forward[0] <= 3 * window + 2  # the window, two windows ahead, one per worker in flight
    assert len(prepared) == 60 and streamed[7].score is None and "needs a description" in streamed[7].error
    alone = [judge.score_samples([s])[0] for s in samples[:10]]
    np.testing.assert_allclose([r.score for r in streamed[:10] if r.ok], [r.score for r in alone if r.ok], atol=1e-5)


def _still_clip(rng):
    from avjudge.media import MediaClip

    frames = rng.integers(0, 255, (1, 56, 56, 3), dtype=np.uint8)
    return MediaClip(source="still", frames=frames, fps=1.0, timestamps=np.zeros(1), duration=1.0)


def test_checkpoint_errors_say_what_to_do(tmp_path):
    with pytest.raises(CheckpointError, match="avjudge judges make-tiny"):
        Judge.load("av", tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(CheckpointError, match="no adapter"):
        Judge.load("av", tmp_path)


def test_cli_score_resumes_without_duplicates(tiny_judges, small_world, tmp_path):
    from avjudge.cli import main

    out = tmp_path / "av.jsonl"
    args = [
        "score",
        "--judge",
        f"av={tiny_judges['qwen2_5_omni']}",
        "--input",
        str(small_world / MANIFEST),
        "--out",
        str(out),
        "--no-progress",
    ]
    assert main(args) == 0
    full = out.read_text().splitlines()
    # as if killed mid-write: two finished lines and a torn third
    out.write_text("\n".join(full[:2]) + "\n" + full[2][:15])
    assert main(args) == 0
    again = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in again] == [json.loads(line)["id"] for line in full]
    assert again[:2] == [json.loads(line) for line in full[:2]]
    summary = json.loads((tmp_path / "av.summary.json").read_text())
    assert summary["total"] == summary["done"] == len(full) and summary["errors"] == 0
    assert summary["resumed_from"] == 2
    # more preparation threads change the pace, never the results or their order
    threaded = tmp_path / "av_threads.jsonl"
    assert main([*args[:-3], "--out", str(threaded), "--no-progress", "--workers", "4"]) == 0
    assert [json.loads(line) for line in threaded.read_text().splitlines()] == [json.loads(line) for line in full]


def test_the_deprecated_avreward_keeps_its_behaviour_and_warns(judges, world_items, tmp_path):
    """AVReward (0.1) stays for one release: its terms combine as before and a failed clip is None (NaN for DDPO)."""
    videos, records = world_items
    texts = [r["captions"]["video"] for r in records]
    brightness = lambda clip: float(clip.frames.mean() / 255.0)  # noqa: E731
    with pytest.warns(DeprecationWarning, match="avjudge.rewards.Reward"):
        reward = AVReward({"av": RewardTerm(judges["av"], 2.0), "vt": judges["vt"], "bright": RewardTerm(brightness)})
    bad = tmp_path / "bad.mp4"
    bad.write_text("x")
    media = videos[:2] + [str(bad)]
    combined, info = reward.score(media, texts[:2] + ["t"])
    av = judges["av"].score(videos[:2])
    vt = judges["vt"].score(videos[:2], texts[:2])
    for i in range(2):
        b = brightness(decode(videos[i]))
        assert abs(combined[i] - (2 * av[i].score + vt[i].score + b) / 4) < 1e-5
    assert combined[2] is None and info["errors"][2]
    # TRL GRPO signature: dataset columns arrive as keyword arguments
    assert reward(prompts=texts[:2], completions=["", ""], video=videos[:2]) == combined[:2]
    scores, _ = reward.ddpo(media, texts[:2] + ["t"], [{}, {}, {}])
    assert np.isnan(scores[2]) and abs(scores[0] - combined[0]) < 1e-6
    with pytest.warns(DeprecationWarning):
        delta_reward = AVReward({"av": judges["av"]}, use_delta=True)
    assert abs(delta_reward(completions=videos[:1])[0] - av[0].delta) < 1e-4
    # text_key names what the vt judge reads: the completions are read, not the prompts in their place
    with pytest.warns(DeprecationWarning):
        captioning = AVReward({"vt": judges["vt"]}, text_key="completions")
    assert captioning(prompts=["x", "y"], completions=texts[:2], video=videos[:2]) == pytest.approx(
        [r.score for r in vt], abs=1e-5
    )
    with pytest.warns(DeprecationWarning):
        misnamed = AVReward({"vt": judges["vt"]}, text_key="descriptions")
    with pytest.raises(ConfigError, match="text_key='descriptions'"):
        misnamed(prompts=texts[:2], video=videos[:2])


@pytest.mark.parametrize(
    "family, full_type, thinker_class",
    [
        ("qwen2_5_omni", "qwen2_5_omni", "Qwen2_5OmniThinkerForConditionalGeneration"),
        ("qwen3_omni", "qwen3_omni_moe", "Qwen3OmniMoeThinkerForConditionalGeneration"),
    ],
)
def test_full_omni_checkpoint_loads_thinker_only(tiny_judges, tmp_path, world_items, family, full_type, thinker_class):
    """Official Omni repos hold thinker + talker (+ code2wav) under one config with 'thinker.'-prefixed weights."""
    import shutil

    from safetensors.torch import load_file, save_file

    src = tiny_judges[family]
    dst = tmp_path / "full"
    shutil.copytree(src, dst)
    thinker_config = json.loads((src / "config.json").read_text())
    (dst / "config.json").write_text(
        json.dumps({"model_type": full_type, "thinker_config": thinker_config, "enable_audio_output": False})
    )
    weights = load_file(src / "model.safetensors")
    save_file({f"thinker.{k}": v for k, v in weights.items()}, dst / "model.safetensors", metadata={"format": "pt"})
    judge = Judge.load("av", dst)
    assert type(judge.adapter.model).__name__ == thinker_class
    direct = Judge.load("av", src)
    loaded, expected = judge.adapter.model.state_dict(), direct.adapter.model.state_dict()
    assert loaded.keys() == expected.keys()
    for key, value in expected.items():
        assert torch.equal(loaded[key], value), key
    assert judge.score(world_items[0][:1])[0].score == direct.score(world_items[0][:1])[0].score


def test_audio_in_video_interleaves_chunks_and_scores_in_batches(tiny_judges, world_items):
    from avjudge.judges.media_inputs import chunk_bounds

    # the official rule: a new chunk starts where a token's time reaches the next multiple
    assert chunk_bounds(np.array([0, 25, 50, 75, 100, 125]), 50) == [(0, 2), (2, 4), (4, 6)]
    assert chunk_bounds(np.arange(120), 50) == [(0, 50), (50, 100), (100, 120)]
    videos, _ = world_items
    judge = Judge.load("av", tiny_judges["qwen2_5_omni"], use_audio_in_video=True, fps=2.0)
    tok = judge.adapter.tokenizer
    sample = judge.sample(decode(videos[0]))
    ids = judge.prepare(sample).input_ids
    text = tok.decode(ids)
    assert text.count("<|audio_bos|>") == 1 and "<|vision_bos|><|audio_bos|><|VIDEO|>" in text
    body = text[text.index("<|audio_bos|>") : text.index("<|audio_eos|>")]
    runs = [r for r in body.replace("<|VIDEO|>", "V").replace("<|AUDIO|>", "A").replace("<|audio_bos|>", "")]
    switches = sum(1 for a, b in zip(runs, runs[1:]) if a != b)
    assert switches >= 3  # several video / audio chunks alternate
    batched = judge.score(videos)
    for video, result in zip(videos, batched):
        assert abs(judge.score([video])[0].score - result.score) < 1e-5


def test_audio_in_video_is_refused_where_the_model_cannot_take_it(tiny_judges):
    with pytest.raises(ValueError, match="cannot take the audio inside the video"):
        Judge.load("at", tiny_judges["qwen2_audio"], use_audio_in_video=True)
