"""VGGish (Hershey et al., 2017) embeddings of 0.96 s audio examples, behind FD-VGG.

As av-benchmark computes them (hkchengrex/av-benchmark @ 050a5cdb, ``av_bench/vggish/vggish.py``, after
audioldm_eval): the audio of `avjudge.metrics.reference_audio`, cut into 0.96 s log-mel examples (25 ms windows,
10 ms hop, 64 bands from 125 Hz to 7.5 kHz), each through VGGish without the PCA post-processing and without the
last ReLU; a clip gives one 128-d embedding per example, and FD-VGG takes every example of every clip. The front end
and the network are the ``torchvggish`` package's own (harritaylor/torchvggish, 0.2), with its ``vggish-10086976``
weights loaded from a local file.
"""

from __future__ import annotations

import numpy as np

from .base import MetricError, load_strict, load_torch_file
from .checkpoints import resolve
from .reference_audio import SAMPLE_RATE, reference_waveform

CHECKPOINT = "vggish"


def build_vggish():
    """torchvggish's VGG, random weights, its head without the last ReLU (av-benchmark's), in eval mode."""
    from torchvggish.torchvggish import VGG, make_layers

    network = VGG(make_layers(), postprocess=False)
    network.embeddings = network.embeddings[:-1]
    return network.eval()


def load_vggish(path):
    """The network with the weights of ``path``, torchvggish's state dict (its head's names: embeddings.0/2/4)."""
    return load_strict(build_vggish(), load_torch_file(path), path, "a VGGish state dict")


def vggish_examples(waveform: np.ndarray) -> np.ndarray:
    """The (E, 96, 64) log-mel examples of a 16 kHz waveform, by torchvggish's ``waveform_to_examples``."""
    from torchvggish.vggish_input import waveform_to_examples

    examples = waveform_to_examples(waveform.astype(np.float64), SAMPLE_RATE, return_tensor=False)
    if len(examples) == 0:
        raise MetricError("shorter than one 0.96 s VGGish example")
    return examples.astype(np.float32)


def examples_of(clip) -> np.ndarray:
    """A clip's VGGish input: the examples of its av-benchmark waveform."""
    return vggish_examples(reference_waveform(clip))


class VggishFeatures:
    """VGGish embeddings of each clip's examples, the examples of a batch of clips run together."""

    def __init__(self, root=None, device: str = "cpu", batch_size: int = 16):
        try:
            import torch  # noqa: F401
            import torchvggish  # noqa: F401
        except ImportError as err:
            raise MetricError("VGGish needs torch and torchvggish: pip install 'avjudge[metrics]'") from err
        (path,) = resolve(CHECKPOINT, root).values()
        self.network, self.device, self.batch_size = load_vggish(path).to(device), device, batch_size
        self.weights = path

    def features(self, examples: list[np.ndarray]) -> list[dict[str, np.ndarray]]:
        """Each clip's ``frames``: an (E, 128) embedding per 0.96 s example, float32."""
        import torch

        with torch.inference_mode():
            x = torch.from_numpy(np.concatenate(examples))[:, None].to(self.device)
            embedded = self.network(x).float().cpu().numpy()
        ends = np.cumsum([len(e) for e in examples])
        return [{"frames": part} for part in np.split(embedded, ends[:-1])]
