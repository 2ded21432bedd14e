"""PANNs Cnn14 at 16 kHz against the ``panns_inference`` package's own network (0.1.1, installed by make install
without its dependencies), with the same random weights, on the world's audio."""

from __future__ import annotations

import numpy as np
import pytest

from avjudge.media import decode
from avjudge.metrics.base import MetricError
from avjudge.metrics.panns import CLASSES, PannsFeatures, build_cnn14
from avjudge.metrics.random_checkpoints import FIXED, calibration_sounds, random_cnn14
from avjudge.metrics.reference_audio import SAMPLE_RATE, SECONDS, reference_waveform

from .helpers import panns_inference_cnn14, swap_two

torch = pytest.importorskip("torch")


@pytest.fixture
def reference_cnn14():
    return panns_inference_cnn14()


@pytest.fixture(scope="module")
def random_network():
    """The random checkpoint's Cnn14 (`avjudge checkpoints make-random`): every tensor random, its batch-norm
    statistics measured on test sounds."""
    return random_cnn14()


def test_cnn14_equals_the_panns_inference_network_on_the_same_weights(reference_cnn14, random_network, world_records):
    state = random_network.state_dict()
    reference_cnn14.load_state_dict(state, strict=True)  # the same names and shapes
    reference_cnn14.eval()
    # the clips' lengths differ: one at a time
    waveforms = [torch.from_numpy(reference_waveform(decode(r["video"], video=False)))[None] for r in world_records]
    with torch.inference_mode():
        embedding, logits = (torch.cat(o) for o in zip(*(random_network(w) for w in waveforms)))
        expected = [reference_cnn14(w) for w in waveforms]
    for key, ours in (("embedding", embedding), ("clipwise_output", torch.sigmoid(logits))):
        np.testing.assert_allclose(ours.numpy(), torch.cat([e[key] for e in expected]).numpy(), rtol=1e-5, atol=1e-5)
    assert logits.shape == (len(world_records), CLASSES)
    # activations in range: the clips told apart, the class distributions neither uniform nor saturated
    assert 0.1 < float(embedding.abs().mean()) < 100 and 1 < float(logits.std()) < 100
    assert float((embedding[0] - embedding[1]).abs().max()) > 1e-2
    # the test bites: two of the weights' tensors swapped (PANNs' fixed STFT and mel kernels aside), parity fails
    mutated, names = swap_two(state, skip=FIXED)
    swapped = build_cnn14()
    swapped.load_state_dict(mutated)
    with torch.inference_mode():
        swapped_embedding, _ = swapped(waveforms[0])
    assert float((swapped_embedding - embedding[:1]).abs().max()) > 1e-3, names


def test_the_reference_waveform_is_av_benchmarks_mono_16k_without_its_mean_and_8_s_at_most():
    from avjudge.media import from_arrays

    t = np.arange(10 * SAMPLE_RATE) / SAMPLE_RATE
    stereo = np.stack([0.5 + 0.2 * np.sin(2 * np.pi * 440 * t), 0.5 - 0.2 * np.sin(2 * np.pi * 440 * t)])
    waveform = reference_waveform(from_arrays(None, None, stereo, SAMPLE_RATE))
    assert waveform.shape == (int(SAMPLE_RATE * SECONDS),) and waveform.dtype == np.float32
    assert np.abs(waveform).max() < 1e-6  # the channels' tones cancel, and the offset is removed
    resampled = reference_waveform(from_arrays(None, None, stereo[:, : 3 * SAMPLE_RATE], 48000))  # 1 s at 48 kHz
    assert resampled.shape == (SAMPLE_RATE,)
    with pytest.raises(MetricError, match="no audio"):
        reference_waveform(from_arrays(np.zeros((2, 8, 8, 3), np.uint8), 2.0))


def test_a_released_shaped_checkpoint_loads_and_batches_as_one_at_a_time(tmp_path, random_network, world_records):
    from avjudge.metrics.checkpoints import pin

    (tmp_path / "panns").mkdir()
    network = random_network
    # as PANNs saves it: the model beside its sampler's numpy state
    saved = {"model": network.state_dict(), "iteration": 3, "sampler": {"indexes": np.arange(4)}}
    torch.save(saved, tmp_path / "panns" / "Cnn14_16k_mAP=0.438.pth")
    pin("panns_cnn14_16k", tmp_path)
    extractor = PannsFeatures(root=tmp_path, batch_size=4)
    waveforms = [reference_waveform(decode(r["video"], video=False)) for r in world_records]
    waveforms.append(waveforms[0][:SAMPLE_RATE])  # another length: its own batch
    together = extractor.features(waveforms)
    alone = [extractor.features([w])[0] for w in waveforms]
    for a, b in zip(together, alone):
        np.testing.assert_allclose(a["embedding"], b["embedding"], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(a["logits"], b["logits"], rtol=1e-4, atol=1e-5)
    with torch.inference_mode():
        embedding, _ = network(torch.from_numpy(waveforms[1])[None])
    np.testing.assert_allclose(together[1]["embedding"], embedding[0].numpy(), rtol=1e-5, atol=1e-5)


def _constant(state: dict) -> list[str]:
    """Names of floating tensors of more than one value that hold one value throughout (zeros, ones, ...)."""
    return [
        n for n, v in state.items() if v.is_floating_point() and v.numel() > 1 and bool((v == v.flatten()[0]).all())
    ]


@pytest.mark.parametrize("module", ["syncnet", "vggish", "passt", "dover"])
def test_random_checkpoints_hold_no_constant_tensor(module):
    """`avjudge checkpoints make-random` leaves no tensor at its initial value (zero tokens and biases, unit
    norms, batch-norm statistics at 0 / 1): a parity test would not see such a tensor swapped."""
    import importlib

    from avjudge.metrics.random_checkpoints import randomised

    build = {"syncnet": "build_network", "vggish": "build_vggish", "passt": "build_passt", "dover": "build_dover"}
    network = getattr(importlib.import_module(f"avjudge.metrics.{module}"), build[module])()
    assert _constant({"tokens": torch.zeros(2, 3), "weight": torch.randn(2, 3)}) == ["tokens"]  # the check can fail
    assert _constant(randomised(network.state_dict())) == []


def test_the_random_cnn14_has_measured_statistics_and_a_scaled_head(random_network):
    state = random_network.state_dict()
    assert [n for n in _constant(state) if not any(word in n for word in FIXED)] == []
    variances = [v for n, v in state.items() if n.endswith("running_var")]
    assert len(variances) == 13 and all(bool((v > 0).all()) for v in variances)
    assert not any(bool(torch.allclose(v, torch.ones_like(v))) for v in variances)
    sounds = calibration_sounds(8, 2.0, SAMPLE_RATE, seed=123)  # unseen sounds: still in range, not saturated
    with torch.inference_mode():
        embedding, logits = random_network(sounds)
    assert 0.1 < float(embedding.abs().mean()) < 100 and 1 < float(logits.std()) < 20
