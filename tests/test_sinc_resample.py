"""The numpy resampler equals torchaudio's ``Resample`` on stored outputs of its own functions (torchaudio 2.9.1,
``torchaudio/functional/functional.py``: ``_get_sinc_resample_kernel`` with its defaults, then
``_apply_sinc_resample_kernel``), for the rate pairs av-benchmark's inputs meet, on a seeded signal."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from avjudge.media import resample
from avjudge.metrics.sinc_resample import sinc_resample

STORED = Path(__file__).parent / "data" / "torchaudio_resample.npz"


@pytest.mark.parametrize("pair", ["48000_16000", "44100_16000", "48000_32000", "16000_32000", "22050_16000",
                                  "44100_32000"])  # fmt: skip
def test_the_sinc_resampler_equals_torchaudios(pair):
    orig, new = map(int, pair.split("_"))
    signal = np.random.default_rng([orig, new]).uniform(-0.9, 0.9, int(orig * 0.3)).astype(np.float32)
    with np.load(STORED) as stored:
        expected = stored[pair]
    ours = sinc_resample(signal, orig, new)
    # torch sums the filter taps in float32 (up to 475 of them), here in float64: the last bits differ
    assert ours.shape == expected.shape and np.abs(ours - expected).max() < 3e-5
    # the decoder's polyphase resampler is another filter: it differs where av-benchmark's does not
    assert np.abs(resample(signal[None], orig, new)[0][: len(expected)] - expected).max() > 1e-3


def test_it_keeps_the_leading_axes_and_leaves_a_rate_alone():
    signal = np.random.default_rng(0).uniform(-1, 1, (2, 4800)).astype(np.float32)
    assert sinc_resample(signal, 48000, 16000).shape == (2, 1600)
    assert sinc_resample(signal, 16000, 16000) is not None and np.array_equal(
        sinc_resample(signal, 16000, 16000), signal
    )
