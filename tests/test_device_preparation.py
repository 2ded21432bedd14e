"""Frames prepared on the model's device (`JudgeSettings.prepare_on="device"`) give the CPU path's numbers.

On a GPU machine the same code runs on CUDA (`benchmarks/real_size_judges.py` repeats the comparison at real size);
here it runs as tensor work on the CPU, which exercises every line of it.
"""

import numpy as np
import pytest
import torch
from PIL import Image

from avjudge.judges import Judge, JudgeSample
from avjudge.judges.bicubic import resize_like_pillow
from avjudge.media import decode

CAPTION = "A red circle slides to the right while a low hum plays."


def test_resize_gives_pillows_bytes_at_any_size():
    rng = np.random.default_rng(0)
    sizes = [(720, 1280, 392, 728), (480, 640, 476, 644), (60, 60, 30, 90), (64, 48, 112, 84), (1000, 100, 10, 90)]
    sizes += [tuple(int(v) for v in rng.integers(6, 260, 4)) for _ in range(30)]
    for h, w, out_h, out_w in sizes:
        image = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        expected = np.asarray(Image.fromarray(image).resize((out_w, out_h), Image.BICUBIC))
        ours = resize_like_pillow(torch.from_numpy(image).permute(2, 0, 1)[None], out_h, out_w)
        np.testing.assert_array_equal(ours[0].permute(1, 2, 0).numpy(), expected, err_msg=f"{h}x{w} -> {out_h}x{out_w}")


def test_resize_refuses_what_is_not_8_bit_images():
    with pytest.raises(ValueError, match="uint8"):
        resize_like_pillow(torch.zeros(1, 3, 8, 8), 4, 4)


@pytest.fixture(scope="module")
def clips(small_world):
    videos = sorted(str(p) for p in small_world.rglob("*.mp4"))[:4]
    return [decode(v) for v in videos]


def _samples(judge: Judge, clips) -> list[JudgeSample]:
    samples = [judge.sample(clip, CAPTION) for clip in clips]
    # one clip whose frames must shrink on one side and grow on the other, as 720p frames do for the judges
    rng = np.random.default_rng(3)
    frames = rng.integers(0, 256, (3, 150, 260, 3), dtype=np.uint8) if judge.task.needs_video else None
    audio = (0.1 * rng.standard_normal(40000)).astype(np.float32) if judge.task.needs_audio else None
    return samples + [JudgeSample(frames=frames, fps=1.0 if frames is not None else None, audio=audio, text=CAPTION)]


@pytest.mark.parametrize(
    "family, task", [("qwen2_5_omni", "av"), ("qwen2_5_omni", "vt"), ("qwen2_audio", "at"), ("qwen3_omni", "av")]
)
def test_device_preparation_scores_equal_cpu_preparation(tiny_judges, clips, family, task):
    on_cpu = Judge.load(task, tiny_judges[family], prepare_on="cpu", batch_size=2, max_pixels=160 * 200)
    on_device = Judge.load(task, tiny_judges[family], prepare_on="device", batch_size=2, max_pixels=160 * 200)
    samples = _samples(on_cpu, clips)
    eager = [on_cpu.prepare(s) for s in samples]
    deferred = [on_device.prepare(s) for s in samples]
    for a, b in zip(eager, deferred):
        assert a.input_ids == b.input_ids  # the token layout is known before the media are made
        assert b.pixel_values_videos is None and (b.frames is not None) == on_cpu.task.needs_video
    cpu_batch = on_cpu.adapter.collate(eager)
    device_batch = on_device.adapter.collate(deferred, device=torch.device("cpu"))
    assert cpu_batch.keys() == device_batch.keys()
    for key in cpu_batch:
        assert torch.equal(cpu_batch[key], device_batch[key]), key  # bit for bit, pixel values and features too
    # three batches of two: each built while the one before it runs
    cpu_scores = [r.score for r in on_cpu.score_samples(samples)]
    device_scores = [r.score for r in on_device.score_samples(samples)]
    np.testing.assert_allclose(device_scores, cpu_scores, atol=1e-5)
    alone = [on_device.score_samples([s])[0].score for s in samples]
    np.testing.assert_allclose(device_scores, alone, atol=1e-5)


def test_a_clip_the_device_cannot_take_fails_alone_at_preparation(tiny_judges, clips):
    judge = Judge.load("av", tiny_judges["qwen3_omni"], prepare_on="device", batch_size=2)
    good = _samples(judge, clips)[:2]
    too_short = JudgeSample(frames=good[0].frames, fps=good[0].fps, audio=np.zeros(100, np.float32))
    no_frames = JudgeSample(frames=np.zeros((2, 8, 8), np.uint8), fps=1.0, audio=good[0].audio)
    results = judge.score_samples([good[0], too_short, good[1], no_frames])
    assert "shorter than one" in results[1].error and results[1].score is None
    assert "(T, H, W, 3)" in results[3].error and results[3].score is None
    assert all(r.error is None and 0.0 <= r.score <= 1.0 for r in (results[0], results[2]))


def test_prepare_on_names_its_choices(tiny_judges):
    with pytest.raises(ValueError, match="auto, cpu or device"):
        Judge.load("av", tiny_judges["qwen2_5_omni"], prepare_on="gpu")
    assert not Judge.load("av", tiny_judges["qwen2_5_omni"], device="cpu").adapter.media_on_device
