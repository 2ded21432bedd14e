"""VGGish as av-benchmark runs it: torchvggish's own front end and network, the last ReLU left out."""

from __future__ import annotations

import numpy as np
import pytest

from avjudge.media import decode, from_arrays
from avjudge.metrics.base import MetricError
from avjudge.metrics.random_checkpoints import randomised
from avjudge.metrics.reference_audio import SAMPLE_RATE, reference_waveform
from avjudge.metrics.vggish import VggishFeatures, build_vggish, examples_of, vggish_examples

from .helpers import swap_two

torch = pytest.importorskip("torch")
pytest.importorskip("torchvggish")


def test_the_head_is_torchvggish_without_its_last_relu_and_examples_are_0_96_s(world_records):
    from torchvggish.torchvggish import VGG, make_layers

    torch.manual_seed(0)
    ours = build_vggish()
    package = VGG(make_layers(), postprocess=False).eval()
    package.load_state_dict(ours.state_dict(), strict=True)  # the released weights' names load into both
    clip = decode(world_records[0]["video"], video=False)
    examples = examples_of(clip)
    frames = 1 + (len(reference_waveform(clip)) - 400) // 160  # 25 ms windows every 10 ms
    assert examples.shape[1:] == (96, 64) and len(examples) == 1 + (frames - 96) // 96  # whole 0.96 s examples
    with torch.inference_mode():
        x = torch.from_numpy(examples)[:, None]
        mine, theirs = ours(x), package(x)
    assert (mine < 0).any()  # no ReLU at the end
    np.testing.assert_allclose(torch.relu(mine).numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)
    # the test bites: two of the weights' tensors swapped, the parity fails
    mutated, names = swap_two(randomised(ours.state_dict()))
    ours.load_state_dict(mutated)
    with torch.inference_mode():
        swapped = ours(x)
    package.load_state_dict(randomised(package.state_dict()))
    with torch.inference_mode():
        assert float((torch.relu(swapped) - package(x)).abs().max()) > 1e-3, names
    with pytest.raises(MetricError, match="0.96 s"):
        vggish_examples(np.zeros(SAMPLE_RATE // 2, np.float32))
    ten_seconds = from_arrays(None, None, np.random.default_rng(0).normal(size=10 * SAMPLE_RATE) * 0.1, SAMPLE_RATE)
    assert len(examples_of(ten_seconds)) == 8  # the first 8 s, as av-benchmark reads audio
    assert len(reference_waveform(ten_seconds)) == 8 * SAMPLE_RATE


def test_a_batch_of_clips_equals_each_alone(tmp_path, world_records):
    from avjudge.metrics.checkpoints import pin

    (tmp_path / "vggish").mkdir()
    torch.manual_seed(1)
    torch.save(build_vggish().state_dict(), tmp_path / "vggish" / "vggish-10086976.pth")
    pin("vggish", tmp_path)
    extractor = VggishFeatures(root=tmp_path)
    inputs = [examples_of(decode(r["video"], video=False)) for r in world_records]
    together = extractor.features(inputs)
    assert [f["frames"].shape for f in together] == [(len(e), 128) for e in inputs]
    for clip, each in zip(together, inputs):
        np.testing.assert_allclose(clip["frames"], extractor.features([each])[0]["frames"], rtol=1e-4, atol=1e-5)
