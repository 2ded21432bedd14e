"""The Qwen3-Omni thinker judge: Qwen3's tokens and template, its audio token count and features, its
audio-in-video merge, and scoring, gradients and freezing on the tiny MoE thinker (loading a full
checkpoint is tested with Qwen2.5-Omni's in test_judges)."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from avjudge.jsonl import read_jsonl
from avjudge.judges import Judge, render_prompt
from avjudge.judges.media_inputs import chunked_audio_tokens
from avjudge.media import decode
from avjudge.prompts import CHAT_FORMATS
from avjudge.train import apply_freeze
from avjudge.world import MANIFEST


@pytest.fixture(scope="module")
def checkpoint(tiny_judges):
    return tiny_judges["qwen3_omni"]


@pytest.fixture(scope="module")
def clips(small_world):
    records = list(read_jsonl(small_world / MANIFEST))
    return [str(small_world / r["video"]) for r in records], [r["captions"]["video"] for r in records]


def test_prompt_uses_qwen3_tokens_and_no_system_turn():
    assert render_prompt("av", "qwen3_omni") == (
        "<|im_start|>user\n<|vision_start|><|video_pad|><|vision_end|><|audio_start|><|audio_pad|><|audio_end|>"
        "Does the audio accurately match the video content? Answer only Yes or No.<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert render_prompt("vt", "qwen3_omni", text="A red circle.", system="Judge.").startswith(
        "<|im_start|>system\nJudge.<|im_end|>\n<|im_start|>user\n<|vision_start|><|video_pad|><|vision_end|>Does"
    )


def test_audio_token_count_equals_transformers():
    from transformers.models.qwen3_omni_moe.processing_qwen3_omni_moe import _get_feat_extract_output_lengths

    frames = np.array([1, 2, 7, 8, 9, 99, 100, 101, 250, 799, 800, 3001])
    expected = _get_feat_extract_output_lengths(frames, n_window=50)
    assert [chunked_audio_tokens(int(f), 50) for f in frames] == expected.tolist()
    assert chunked_audio_tokens(800, 50) == 104  # 13 tokens per second of audio


def test_audio_features_equal_the_processor_on_the_clip_alone(checkpoint, clips):
    judge = Judge.load("at", checkpoint)
    audio = judge.sample(decode(clips[0][0]), "x").audio
    fe = judge.adapter.feature_extractor
    reference = fe(
        audio, sampling_rate=16000, padding="longest", truncation=False, return_attention_mask=True, return_tensors="np"
    )
    features, mask, tokens = judge.adapter.audio_features(audio)
    np.testing.assert_allclose(features, reference["input_features"][0], atol=1e-4)
    assert mask.tolist() == reference["attention_mask"][0].tolist()
    assert tokens == chunked_audio_tokens(int(mask.sum()), 50)
    with pytest.raises(ValueError, match="shorter than one 400-sample"):
        judge.adapter.audio_features(np.zeros(100, np.float32))


def test_frames_use_16_px_patches_and_the_size_bounds(checkpoint, clips):
    judge = Judge.load("vt", checkpoint, max_pixels=None)
    vision = judge.adapter.vision
    assert (vision.patch_size, vision.min_pixels, vision.image_mean) == (16, 64 * 64, (0.5, 0.5, 0.5))
    prepared = judge.prepare(judge.sample(decode(clips[0][0]), "x"))
    t, h, w = prepared.video_grid_thw
    assert prepared.pixel_values_videos.shape == (t * h * w, 3 * 2 * 16 * 16)
    assert h * 16 % 32 == 0 and w * 16 % 32 == 0
    tok = judge.adapter.tokenizer
    assert prepared.input_ids.count(tok.convert_tokens_to_ids("<|video_pad|>")) == t * h * w // 4


@pytest.mark.parametrize("task", ["av", "vt", "at"])
def test_batched_scores_equal_one_by_one_and_the_generate_recipe(checkpoint, clips, task):
    videos, captions = clips
    texts = captions if task != "av" else None
    judge = Judge.load(task, checkpoint, batch_size=4, yes_variants=("Yes",), no_variants=("No",))
    batched = judge.score(videos, texts)
    tok = judge.adapter.tokenizer
    yes_id, no_id = tok.convert_tokens_to_ids("Yes"), tok.convert_tokens_to_ids("No")
    for i, video in enumerate(videos[:3]):
        alone = judge.score([video], [texts[i]] if texts else None)[0]
        assert abs(alone.score - batched[i].score) < 1e-5
        batch = judge.adapter.collate([judge.prepare(judge.sample(judge.decode(video), texts[i] if texts else None))])
        with torch.no_grad():
            out = judge.adapter.model.generate(
                **batch, max_new_tokens=1, output_scores=True, return_dict_in_generate=True, do_sample=False
            )
        assert abs(torch.softmax(out.scores[0][0, [yes_id, no_id]].double(), -1)[0].item() - alone.score) < 1e-5
    assert len({round(r.score, 6) for r in batched}) > 1


def test_audio_in_video_merges_tokens_as_the_official_processor(checkpoint, clips):
    from transformers import Qwen3OmniMoeProcessor

    judge = Judge.load("av", checkpoint, use_audio_in_video=True, fps=2.0, batch_size=3)
    sample = judge.sample(decode(clips[0][0]))
    prepared = judge.prepare(sample)
    _, _, audio_tokens = judge.adapter.audio_features(sample.audio)
    fmt = CHAT_FORMATS["qwen3_omni"]
    processor = SimpleNamespace(
        audio_bos_token=fmt.audio_start,
        audio_eos_token=fmt.audio_end,
        video_token=fmt.video_pad,
        audio_token=fmt.audio_pad,
        video_processor=SimpleNamespace(merge_size=2),
    )
    official = Qwen3OmniMoeProcessor.replace_video_with_audio_token(
        processor,
        {"video_grid_thw": [prepared.video_grid_thw], "video_second_per_grid": [prepared.video_second_per_grid]},
        0,
        {"num_audio_tokens": [audio_tokens]},
        0,
        position_id_per_seconds=13,
    )
    text = judge.adapter.tokenizer.decode(prepared.input_ids)
    assert f"<|vision_start|>{official}<|vision_end|>" in text
    assert official.count(fmt.audio_pad) == audio_tokens and official.count("<|video_pad|><|audio_pad|>") >= 2
    batched = judge.score(clips[0])
    assert all(abs(judge.score([v])[0].score - b.score) < 1e-5 for v, b in zip(clips[0][:2], batched))


def test_gradient_reaches_frames_and_audio(checkpoint):
    judge = Judge.load("av", checkpoint)
    frames = torch.rand(4, 64, 64, 3, requires_grad=True)
    waveform = (0.1 * torch.randn(16000)).requires_grad_()
    score = judge.score_differentiable(frames=frames, fps=2.0, waveform=waveform)
    score.backward()
    assert 0 < score.item() < 1
    assert frames.grad.abs().sum() > 0 and waveform.grad.abs().sum() > 0


def test_freeze_groups_cover_every_parameter(checkpoint):
    judge = Judge.load("av", checkpoint)
    counts = apply_freeze(judge.adapter.model, type(judge.adapter), "llm+connector")
    assert set(counts) == {"llm", "connector", "audio_encoder", "vision_encoder"}
    assert counts["connector"]["trainable"] == counts["connector"]["total"] > 0
    assert counts["vision_encoder"]["trainable"] == counts["audio_encoder"]["trainable"] == 0
