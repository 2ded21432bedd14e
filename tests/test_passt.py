"""PaSST: avjudge's network and front end against ``hear21passt``'s own ``PaSST`` and ``AugmentMelSTFT`` (0.0.26,
installed by make install without its dependencies) on the same random weights and world audio; Kaldi's mel banks
against Kaldi's construction written out here; and the PaSST set metrics through ``metrics compare``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from avjudge.media import decode, from_arrays
from avjudge.metrics.passt import (
    CLIP_SAMPLES,
    FMAX,
    SAMPLE_RATE,
    PasstMel,
    build_passt,
    kaldi_mel_banks,
    passt_waveform,
)
from avjudge.metrics.random_checkpoints import randomised

from .helpers import hear21passt_front_end, hear21passt_modules, kaldi_banks_by_the_book, swap_two

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def hear21passt():
    """``hear21passt``'s PaSST-S network and ``get_basic_model``'s front end, on the package's own code."""
    with hear21passt_modules() as (passt, preprocess):
        network = passt.get_model(arch="passt_s_swa_p16_128_ap476", pretrained=False).eval()
        yield network, hear21passt_front_end(preprocess)


def test_kaldi_mel_banks_equal_kaldis_construction():
    expected, _ = kaldi_banks_by_the_book(128, 1024, SAMPLE_RATE, 0.0, FMAX)
    got = kaldi_mel_banks()
    assert got.shape == (128, 513) and np.all(got[:, 512] == 0)
    np.testing.assert_allclose(got[:, :512], expected.numpy(), atol=1e-6)
    assert FMAX == 15000  # hear21passt's default: 32 kHz / 2 less half its 2 kHz augmentation range


def test_passt_equals_hear21passts_network_and_front_end_on_the_same_weights(hear21passt, world_records):
    network, mel = hear21passt
    state = randomised(network.state_dict())
    network.load_state_dict(state)
    ours = build_passt()
    ours.load_state_dict(state, strict=True)  # the released names and shapes
    clips = [decode(r["video"], video=False) for r in world_records[:2]]
    waveforms = torch.from_numpy(np.stack([passt_waveform(c) for c in clips]))
    assert waveforms.shape == (2, CLIP_SAMPLES)
    with torch.inference_mode():
        expected_mel = mel(waveforms)
        got_mel = PasstMel()(waveforms)
        np.testing.assert_allclose(got_mel[:, 0].numpy(), expected_mel.numpy(), atol=1e-4)
        logits, embedding = network(expected_mel[:, None])
        got_embedding, got_logits = ours(expected_mel[:, None])
    np.testing.assert_allclose(got_embedding.numpy(), embedding.numpy(), atol=1e-5)
    np.testing.assert_allclose(got_logits.numpy(), logits.numpy(), atol=1e-5)
    assert embedding.shape == (2, 768) and logits.shape == (2, 527)
    assert float((embedding[0] - embedding[1]).abs().max()) > 1e-3
    # the test bites: two of the weights' tensors swapped, the parity fails
    mutated, names = swap_two(state)
    ours.load_state_dict(mutated)
    with torch.inference_mode():
        swapped_embedding, _ = ours(expected_mel[:, None])
    assert float((swapped_embedding - embedding).abs().max()) > 1e-3, names


def test_the_passt_waveform_is_the_first_8_s_at_32_khz_padded_to_10_s():
    audio = 0.5 * np.ones((1, 9 * 16000), np.float32) + 0.4 * np.sin(np.arange(9 * 16000) / 10.0)[None]
    waveform = passt_waveform(from_arrays(None, None, audio, 16000))
    assert waveform.shape == (CLIP_SAMPLES,) and np.all(waveform[8 * SAMPLE_RATE :] == 0)
    assert abs(float(waveform[: 8 * SAMPLE_RATE].mean())) < 1e-2  # the mean (the 0.5 offset) removed


@pytest.fixture
def extractor_root(tmp_path, monkeypatch):
    """Random PaSST (a narrow one) and PANNs checkpoints, pinned."""
    import avjudge.metrics.passt as passt
    from avjudge.metrics.checkpoints import pin
    from avjudge.metrics.panns import build_cnn14

    monkeypatch.setattr(passt, "build_passt", lambda: build_passt(width=64, depth=1, heads=2))
    root = tmp_path / "ckpt"
    (root / "passt").mkdir(parents=True)
    (root / "panns").mkdir()
    torch.manual_seed(0)
    torch.save(randomised(passt.build_passt().state_dict()), root / "passt" / "passt-s-f128-p16-s10-ap.476-swa.pt")
    torch.save({"model": randomised(build_cnn14().state_dict())}, root / "panns" / "Cnn14_16k_mAP=0.438.pth")
    pin("passt_s_swa", root)
    pin("panns_cnn14_16k", root)
    return root


def test_the_av_benchmark_protocol_takes_passts_fd_over_the_paired_clips_only(small_world, tmp_path, extractor_root):
    """av-benchmark's evaluate.py (@ 050a5cdb) unrolls PaSST's features by paired name: a generated set holding the
    reference's clips and three more has PaSST FD 0 under its protocol, not under all-clips; PANNs' FD reads every
    clip under both."""
    import shutil

    from avjudge.scoring.set_compare import compare_sets

    clips = sorted((small_world / "clips").glob("*.mp4"))
    reference = tmp_path / "reference"
    reference.mkdir()
    for clip in clips[:3]:
        shutil.copy(clip, reference / clip.name)
    names = ["fd_passt", "fd_panns"]
    options = {"cache": tmp_path / "cache", "root": extractor_root, "progress": False}
    paired = compare_sets(small_world / "clips", reference, names, tmp_path / "a.json", **options)
    everything = compare_sets(small_world / "clips", reference, names, tmp_path / "b.json", protocol="all-clips",
                              **options)  # fmt: skip
    assert paired["protocol"] == "av-benchmark" and paired["pairs"] == 3
    assert paired["unpaired"]["generated"] == sorted(c.name for c in clips[3:])
    assert abs(paired["metrics"]["fd_passt"]) < 1e-6 < everything["metrics"]["fd_passt"]
    assert paired["metrics"]["fd_panns"] == everything["metrics"]["fd_panns"] > 0


def test_passt_set_metrics_through_metrics_compare_each_clip_decoded_once_for_every_extractor(
    small_world, tmp_path, monkeypatch, extractor_root
):
    import avjudge.scoring.core as core
    import avjudge.scoring.set_compare as set_compare

    root = extractor_root
    decoded = []
    clip_of = core.clip_of
    monkeypatch.setattr(core, "clip_of", lambda item, *a: decoded.append(Path(item["video"]).name) or clip_of(item, *a))

    clips = small_world / "clips"
    both = ["fd_passt", "kl_passt", "fd_panns"]
    report = set_compare.compare_sets(clips, clips, both, tmp_path / "report.json", cache=tmp_path / "both", root=root,
                                      progress=False)  # fmt: skip
    assert report["metrics"]["fd_passt"] == pytest.approx(0.0, abs=1e-6)
    assert report["metrics"]["kl_passt"] == pytest.approx(0.0, abs=1e-6)
    written = json.loads((tmp_path / "report.json").read_text())
    assert written["av_benchmark"]["FD-PASST"] == report["metrics"]["fd_passt"]
    count = len(list(clips.iterdir()))
    # each clip decoded once for both extractors; the reference set, the same files, is all in the cache by then
    assert sorted(decoded) == sorted(p.name for p in clips.iterdir())
    # at 32 and 16 kHz the clips decode at their own rate and each extractor resamples as the decoder does: the
    # features equal those of runs with one extractor each (each decoding at its own rate)
    for name in ("fd_passt", "fd_panns"):
        set_compare.compare_sets(clips, clips, [name], tmp_path / f"{name}.json", cache=tmp_path / name, root=root,
                                 progress=False)  # fmt: skip
        (alone,) = (tmp_path / name).iterdir()
        together = tmp_path / "both" / alone.name
        assert len(list(alone.glob("*.npz"))) == count
        for cached in alone.glob("*.npz"):
            with np.load(cached) as a, np.load(together / cached.name) as b:
                for key in a.files:
                    np.testing.assert_allclose(a[key], b[key], atol=1e-5)
    decoded.clear()
    set_compare.compare_sets(clips, clips, both, tmp_path / "again.json", cache=tmp_path / "both", root=root,
                             progress=False)  # fmt: skip
    assert decoded == []  # every feature cached: nothing decoded
