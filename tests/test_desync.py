"""DeSync: Synchformer against av-benchmark's own code (as FastVideo 0.2.1 ships it on PyPI, installed by make
install without its dependencies), the front end against independent computations, av-benchmark's windows and
averaging with a scripted offset head, and the metric through metrics run, filter and serve."""

from __future__ import annotations

import importlib.util
import json
import sys
import types

import numpy as np
import pytest

from avjudge.media import decode, encode_video, from_arrays
from avjudge.metrics import MetricError, get_metric
from avjudge.metrics.checkpoints import pin
from avjudge.metrics.desync import (
    FPS,
    LOG_MEL_MEAN,
    LOG_MEL_STD,
    OFFSETS,
    SAMPLE_RATE,
    audio_segments,
    mel_filterbank,
    sync_frames,
    sync_windows,
    video_segments,
)
from avjudge.metrics.random_checkpoints import randomised

from .helpers import swap_two

torch = pytest.importorskip("torch")
from avjudge.metrics.synchformer import Synchformer  # noqa: E402 (needs torch)

# facebookresearch/Motionformer @ bf43d50, configs/SSV2/divided_224_16x4.yaml: the values av-benchmark's
# VisionTransformer reads (its MotionFormer downloads this file; nothing downloads here)
MOTIONFORMER_CONFIG = {
    "TRAIN": {"DATASET": "Ssv2"},
    "DATA": {"TRAIN_CROP_SIZE": 224},
    "MODEL": {"NUM_CLASSES": 174},
    "VIT": {
        "PATCH_SIZE": 16,
        "PATCH_SIZE_TEMP": 2,
        "CHANNELS": 3,
        "EMBED_DIM": 768,
        "DEPTH": 12,
        "NUM_HEADS": 12,
        "MLP_RATIO": 4,
        "QKV_BIAS": True,
        "VIDEO_INPUT": True,
        "TEMPORAL_RESOLUTION": 8,
        "USE_MLP": True,
        "DROP": 0.0,
        "POS_DROPOUT": 0.0,
        "DROP_PATH": 0.2,
        "HEAD_DROPOUT": 0.0,
        "HEAD_ACT": "tanh",
        "ATTN_LAYER": "divided",
    },
}


@pytest.fixture(scope="module")
def reference_synchformer():
    """``fastvideo.third_party.eval.synchformer.Synchformer`` (av-benchmark's files, copied verbatim), imported
    without FastVideo's ``__init__`` (a video generator's whole stack) and with ``timm.layers``' two helpers it
    imports (weight init and a tuple helper; timm needs torchvision) given by torch."""
    spec = importlib.util.find_spec("fastvideo")
    if spec is None:
        pytest.skip("fastvideo is not installed (make install adds it)")
    from omegaconf import OmegaConf

    with pytest.MonkeyPatch.context() as mp:
        package = types.ModuleType("fastvideo")
        package.__path__ = list(spec.submodule_search_locations)
        mp.setitem(sys.modules, "fastvideo", package)
        layers = types.ModuleType("timm.layers")
        layers.trunc_normal_ = torch.nn.init.trunc_normal_
        layers.to_2tuple = lambda x: tuple(x) if isinstance(x, (tuple, list)) else (x, x)
        timm = types.ModuleType("timm")
        timm.layers = layers
        mp.setitem(sys.modules, "timm", timm)
        mp.setitem(sys.modules, "timm.layers", layers)
        import fastvideo.third_party.synchformer.motionformer as motionformer

        mp.setattr(motionformer, "check_if_file_exists_else_download", lambda *a, **k: None)
        mp.setattr(
            motionformer, "OmegaConf", types.SimpleNamespace(load=lambda path: OmegaConf.create(MOTIONFORMER_CONFIG))
        )
        from fastvideo.third_party.eval.synchformer.synchformer import Synchformer as Reference
        from fastvideo.third_party.eval.synchformer.synchformer import make_class_grid

        yield Reference().eval(), make_class_grid


def test_synchformer_equals_av_benchmarks_network_on_the_same_weights(reference_synchformer, small_world):
    reference, make_class_grid = reference_synchformer
    state = randomised(reference.state_dict())
    reference.load_state_dict(state, strict=True)
    ours = Synchformer.sized_for(state).eval()
    ours.load_state_dict(state, strict=True)  # the released names and shapes
    clip = decode(sorted((small_world / "clips").iterdir())[0], fps=FPS, sample_rate=SAMPLE_RATE, channels=1)
    with torch.inference_mode():
        frames = video_segments(sync_frames(clip.frames), 1)[None]
        expected = reference.extract_vfeats(frames)
        np.testing.assert_allclose(ours.extract_vfeats(frames).numpy(), expected.numpy(), atol=1e-5, rtol=1e-5)
        assert expected.shape == (1, 1, 8, 768) and float(expected.std()) > 0.1
        mels = audio_segments(clip.audio[0], 3)[None]
        expected = reference.extract_afeats(mels)
        np.testing.assert_allclose(ours.extract_afeats(mels).numpy(), expected.numpy(), atol=1e-5, rtol=1e-5)
        assert expected.shape == (1, 3, 6, 768)
        generator = torch.Generator().manual_seed(1)
        video, audio = torch.randn(2, 14, 8, 768, generator=generator), torch.randn(2, 14, 6, 768, generator=generator)
        expected = reference.compare_v_a(video, audio)
        np.testing.assert_allclose(ours.compare_v_a(video, audio).numpy(), expected.numpy(), atol=1e-5, rtol=1e-5)
        assert expected.shape == (2, 21) and float(expected.std()) > 0
        # the test bites: two of the weights' tensors swapped, one of the three outputs leaves the reference's
        mutated, names = swap_two(state)
        ours.load_state_dict(mutated)
        moved = [
            (ours.extract_vfeats(frames) - reference.extract_vfeats(frames)).abs().max(),
            (ours.extract_afeats(mels) - reference.extract_afeats(mels)).abs().max(),
            (ours.compare_v_a(video, audio) - expected).abs().max(),
        ]
        assert max(float(m) for m in moved) > 1e-3, names
    np.testing.assert_allclose(OFFSETS, make_class_grid(-2, 2, 21).numpy(), atol=1e-7)


def test_the_mel_front_end_equals_torchaudios_pipeline_computed_independently():
    librosa = pytest.importorskip("librosa")
    bank = mel_filterbank()
    np.testing.assert_allclose(
        bank, librosa.filters.mel(sr=16000, n_fft=1024, n_mels=128, htk=True, norm=None).T, atol=1e-6
    )
    rng = np.random.default_rng(0)
    audio = (0.1 * rng.standard_normal(3 * 5120 + 10240)).astype(np.float32)
    got = audio_segments(audio, 4).numpy()
    assert got.shape == (4, 1, 128, 66)
    window = np.zeros(1024)
    window[312:712] = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(400) / 400)  # periodic Hann, centred in n_fft
    for s in range(4):
        segment = np.pad(audio[s * 5120 : s * 5120 + 10240].astype(np.float64), 512, mode="reflect")
        frames = np.stack([segment[i * 160 : i * 160 + 1024] for i in range(65)])
        power = np.abs(np.fft.rfft(frames * window, axis=1)) ** 2  # (65, 513)
        log_mel = np.log(power @ bank + 1e-6).T  # (128, 65)
        expected = (np.pad(log_mel, ((0, 0), (0, 1))) - LOG_MEL_MEAN) / (2 * LOG_MEL_STD)
        np.testing.assert_allclose(got[s, 0], expected, atol=2e-4)
    assert np.all(got[:, 0, :, 65] == np.float32(-LOG_MEL_MEAN / (2 * LOG_MEL_STD)))  # the zero-padded column


def test_frames_are_resized_by_the_short_side_centre_cropped_and_scaled_to_plus_minus_one():
    frames = np.zeros((2, 48, 96, 3), np.uint8)
    frames[:, :, 48:] = 255  # the right half white: after the crop, the centre column is the boundary
    frames[1] = 128
    x = sync_frames(frames).numpy()
    assert x.shape == (2, 3, 224, 224)
    # 96x48 becomes 448x224; the crop keeps columns 112..335, so the white half starts at its column 112
    assert np.all(x[0, :, :, :100] == -1.0) and np.all(x[0, :, :, 124:] == 1.0)
    np.testing.assert_allclose(x[1], 128 / 255 * 2 - 1, atol=1e-6)
    tall = sync_frames(np.zeros((1, 96, 48, 3), np.uint8))
    assert tall.shape == (1, 3, 224, 224)


class ScriptedSync:
    """An offset head whose answer is known: video features are each tubelet's two frames' brightness; audio
    features are, per AST time patch, the loudest of its 16 mel frames and where it is; the head finds the flash
    and the click in a window and answers the class nearest click time minus flash time."""

    def extract_vfeats(self, segments):
        b, s = segments.shape[:2]
        return segments.mean(dim=(3, 4, 5)).view(b, s, 8, 2)

    def extract_afeats(self, segments):
        # (B, S, 65): without the 66th column, av-benchmark's zero padding of the log-mel (louder than silence)
        energy = segments[:, :, 0, :, :65].mean(dim=2)
        tokens = []
        for j in range(6):
            value, where = energy[..., 10 * j : 10 * j + 16].max(dim=-1)
            tokens.append(torch.stack([value, where.float() + 10 * j], dim=-1))
        return torch.stack(tokens, dim=2)  # (B, S, 6, 2)

    def compare_v_a(self, video, audio):
        logits = torch.full((len(video), len(OFFSETS)), -50.0)
        s, k, f = np.meshgrid(np.arange(14), np.arange(8), np.arange(2), indexing="ij")
        video_times = (8 * s + 2 * k + f) / 25.0
        for b in range(len(video)):
            flash = video_times.ravel()[int(video[b].reshape(-1).argmax())]
            loudest = audio[b, ..., 0].reshape(-1).argmax()
            segment = int(loudest) // 6
            click = segment * 0.32 + float(audio[b, ..., 1].reshape(-1)[loudest]) * 0.01
            logits[b, int(np.abs(OFFSETS - (click - flash)).argmin())] = 50.0
        return logits


def flash_click_clip(events: list[tuple], seconds: float, size=(64, 48)):
    """Black frames with a flash (two frames) and a 10 ms click for each (flash time, click time[, level])."""
    frames = np.zeros((int(seconds * FPS), size[1], size[0], 3), np.uint8)
    audio = np.zeros(int(seconds * SAMPLE_RATE), np.float32)
    burst = 0.6 * np.sin(2 * np.pi * 1000 * np.arange(160) / SAMPLE_RATE)
    for flash, click, *level in events:
        level = level[0] if level else 1.0
        frames[int(round(flash * FPS)) : int(round(flash * FPS)) + 2] = round(255 * level)
        audio[int(round(click * SAMPLE_RATE)) : int(round(click * SAMPLE_RATE)) + 160] = level * burst
    return frames, audio


@pytest.fixture
def tiny_synchformer(tmp_path, monkeypatch):
    torch.manual_seed(0)
    root = tmp_path / "ckpt"
    (root / "synchformer").mkdir(parents=True)
    network = Synchformer(width=64, heads=1, video_depth=1, audio_depth=1, sync_heads=1, sync_depth=1)
    torch.save(randomised(network.state_dict()), root / "synchformer" / "synchformer_state_dict.pth")
    pin("synchformer", root)
    monkeypatch.setenv("AVJUDGE_CHECKPOINTS", str(root))
    return root


def test_desync_takes_av_benchmarks_two_windows_of_the_first_8_s_and_averages_their_offsets(tiny_synchformer):
    # the first window (0-4.8 s) holds a click 0.4 s after its flash, the last (3.2-8 s) one 0.8 s before, each
    # pair near its window's outer edge (a window one segment off loses it); a third pair past 8 s, 1.6 s apart,
    # brighter and louder than the others, is cut off as av-benchmark cuts every clip to 8 s
    events = [(0.1, 0.5, 0.8), (7.8, 7.0, 0.8), (8.6, 10.2, 1.0)]
    frames, audio = flash_click_clip(events, 10.5)
    windows = sync_windows(ScriptedSync(), frames[:200], audio[:128000], batch_size=5)
    np.testing.assert_allclose(windows.offsets, [0.4, -0.8], atol=1e-9)
    metric = get_metric("desync", device="cpu")
    metric.network = ScriptedSync()
    scores = metric.compute(from_arrays(frames, float(FPS), audio[None], SAMPLE_RATE))
    assert scores["desync"] == pytest.approx(0.6) and scores["desync_start"] == pytest.approx(0.4)
    assert scores["desync_end"] == pytest.approx(-0.8) and scores["desync_confidence"] == pytest.approx(1.0)
    assert scores["desync_score"] == pytest.approx(1 - 0.6 / 2)
    whole = get_metric("desync", device="cpu", seconds=10.5)  # not cut: the last window finds the third pair
    whole.network = ScriptedSync()
    assert whole.compute(from_arrays(frames, float(FPS), audio[None], SAMPLE_RATE))["desync_end"] == pytest.approx(1.6)
    # a 30 fps, 48 kHz stereo clip is sampled at 25 fps and 16 kHz mono: the same answer
    frames30 = frames[(np.arange(int(10.5 * 30)) * 25 // 30)]
    stereo48 = np.repeat(np.repeat(audio[None], 3, axis=1), 2, axis=0)
    assert metric.compute(from_arrays(frames30, 30.0, stereo48, 48000))["desync"] == pytest.approx(0.6)
    short = flash_click_clip([(1.0, 1.0)], 4.0)
    with pytest.raises(MetricError, match=r"4.00 s of video and audio is too short for desync \(needs 4.8 s\)"):
        metric.compute(from_arrays(short[0], float(FPS), short[1][None], SAMPLE_RATE))


def test_desync_runs_through_metrics_run_filter_and_serve(tiny_synchformer, tmp_path):
    from avjudge.filter import parse_rules, run_filter
    from avjudge.jsonl import read_jsonl
    from avjudge.rewards import Reward, sample
    from avjudge.scoring.clip_scorer import ClipScorer
    from avjudge.scoring.dimensions import parse_dimensions
    from avjudge.scoring.jobs import run_metrics
    from avjudge.serve.service import ScoreService

    clips = tmp_path / "clips"
    clips.mkdir()
    for name, seconds in (("long.mp4", 5.2), ("short.mp4", 3.0)):
        frames, audio = flash_click_clip([(1.0, 1.2)], seconds)
        encode_video(clips / name, frames, float(FPS), audio[None], SAMPLE_RATE)
    run_metrics(["desync"], clips, tmp_path / "desync.jsonl", progress=False)
    rows = {r["id"]: r for r in read_jsonl(tmp_path / "desync.jsonl")}
    long = rows["long.mp4"]
    assert set(long) >= {"desync", "desync_score", "desync_start", "desync_end", "desync_confidence"}
    assert 0 <= long["desync"] <= 2 and long["desync"] * 10 == pytest.approx(round(long["desync"] * 10))  # 0.1 s steps
    assert 0 <= long["desync_score"] <= 1 and 1 / 21 <= long["desync_confidence"] <= 1
    assert "too short for desync" in rows["short.mp4"]["errors"]["desync"] and "desync" not in rows["short.mp4"]
    direct = get_metric("desync", device="cpu").compute(decode(clips / "long.mp4", fps=FPS, sample_rate=SAMPLE_RATE))
    assert long["desync_score"] == pytest.approx(direct["desync_score"], abs=1e-6)

    manifest = tmp_path / "clips.jsonl"
    manifest.write_text(
        "".join(json.dumps({"id": n, "video": str(clips / n)}) + "\n" for n in ("long.mp4", "short.mp4"))
    )
    scorer = ClipScorer(parse_dimensions("desync"), {})
    run_filter(manifest, parse_rules("desync<=2"), tmp_path / "filter", scorer, progress=False)
    kept = list(read_jsonl(tmp_path / "filter" / "kept.jsonl"))
    assert [r["id"] for r in kept] == ["long.mp4"] and kept[0]["scores"]["desync"] == pytest.approx(long["desync"])
    failed = list(read_jsonl(tmp_path / "filter" / "failed.jsonl"))
    assert [r["id"] for r in failed] == ["short.mp4"]

    service = ScoreService({}, {"desync": get_metric("desync", device="cpu")})
    results = service.score_records(
        [
            {"id": n, "judge": "desync", "video": str(clips / n), "output": "desync_score"}
            for n in ("long.mp4", "short.mp4")
        ]
    )
    assert results[0]["score"] == pytest.approx(long["desync_score"], abs=1e-6)
    assert results[1]["score"] is None and "too short for desync" in results[1]["error"]

    # a reward of desync climbs its continuous score, and a clip it cannot score fails alone, never as 0
    reward = Reward({"desync": service.metrics["desync"]}, on_failure="neutral")
    assert reward.terms["desync"].output == "desync_score" and reward.terms["desync"].midpoint == 0.5
    batch = reward.score([sample({"video": str(clips / n)}) for n in ("long.mp4", "short.mp4")])
    assert batch.terms["desync"][0] == pytest.approx(long["desync_score"], abs=1e-6)
    assert batch.failed == [False, True] and "too short for desync" in batch.errors[1]
