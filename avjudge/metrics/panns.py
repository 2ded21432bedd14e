"""PANNs Cnn14 (Kong et al., 2020, "PANNs: Large-Scale Pretrained Audio Neural Networks") at 16 kHz: the audio
embeddings and AudioSet logits behind FD-PANN, KL-PANNS and ISC-PANNS.

Configured and fed as av-benchmark does (hkchengrex/av-benchmark @ 050a5cdb, ``av_bench/extraction_models.py``;
its audio as `avjudge.metrics.reference_audio` reads it): a 512-point Hann STFT with hop 160, 64 mel bands from
50 Hz to 8 kHz, the ``Cnn14_16k_mAP=0.438`` weights. The embedding is the 2048-d ReLU of ``fc1``; the logits are
``fc_audioset`` of it (before the sigmoid). The spectrogram and log-mel front end is torchlibrosa's, as in PANNs'
own code; the network is written here with PANNs' layer names, so the released checkpoint loads as it is, and a
test checks it against the ``panns_inference`` package's forward pass.
"""

from __future__ import annotations

import numpy as np

from .base import MetricError
from .batched import embeddings_and_logits
from .checkpoints import resolve
from .reference_audio import SAMPLE_RATE

WINDOW = 512
HOP = 160
MEL_BANDS = 64
FMIN, FMAX = 50, 8000
CLASSES = 527
CHECKPOINT = "panns_cnn14_16k"


def build_cnn14():
    """Cnn14 with random weights, in PANNs' layer names (eval mode: no SpecAugment, no dropout)."""
    import torch
    import torch.nn.functional as F
    from torch import nn
    from torchlibrosa.stft import LogmelFilterBank, Spectrogram

    class ConvBlock(nn.Module):
        def __init__(self, channels_in: int, channels_out: int):
            super().__init__()
            self.conv1 = nn.Conv2d(channels_in, channels_out, 3, padding=1, bias=False)
            self.conv2 = nn.Conv2d(channels_out, channels_out, 3, padding=1, bias=False)
            self.bn1, self.bn2 = nn.BatchNorm2d(channels_out), nn.BatchNorm2d(channels_out)

        def forward(self, x, pool: tuple[int, int]):
            x = F.relu(self.bn1(self.conv1(x)))
            x = F.relu(self.bn2(self.conv2(x)))
            return F.avg_pool2d(x, kernel_size=pool)

    class Cnn14(nn.Module):
        def __init__(self):
            super().__init__()
            self.spectrogram_extractor = Spectrogram(
                n_fft=WINDOW, hop_length=HOP, win_length=WINDOW, window="hann", center=True, pad_mode="reflect",
                freeze_parameters=True,
            )  # fmt: skip
            self.logmel_extractor = LogmelFilterBank(
                sr=SAMPLE_RATE, n_fft=WINDOW, n_mels=MEL_BANDS, fmin=FMIN, fmax=FMAX, ref=1.0, amin=1e-10,
                top_db=None, freeze_parameters=True,
            )  # fmt: skip
            self.bn0 = nn.BatchNorm2d(MEL_BANDS)
            widths = (1, 64, 128, 256, 512, 1024, 2048)
            for k in range(6):
                setattr(self, f"conv_block{k + 1}", ConvBlock(widths[k], widths[k + 1]))
            self.fc1 = nn.Linear(2048, 2048)
            self.fc_audioset = nn.Linear(2048, CLASSES)

        def forward(self, waveform):
            """(B, N) waveforms -> the (B, 2048) embeddings and (B, 527) logits."""
            x = self.logmel_extractor(self.spectrogram_extractor(waveform))  # (B, 1, T, mels)
            x = self.bn0(x.transpose(1, 3)).transpose(1, 3)
            for k in range(6):
                x = getattr(self, f"conv_block{k + 1}")(x, (2, 2) if k < 5 else (1, 1))
            x = torch.mean(x, dim=3)
            x = torch.max(x, dim=2).values + torch.mean(x, dim=2)
            embedding = F.relu(self.fc1(x))
            return embedding, self.fc_audioset(embedding)

    return Cnn14().eval()


def load_cnn14(path):
    """The network with the weights of ``path``: a PANNs training checkpoint (``{"model": state dict, ...}``, as
    released) or a bare state dict. Read without unpickling code: tensors, and the numpy arrays of its sampler."""
    import torch

    from .base import load_strict

    try:
        with torch.serialization.safe_globals(_numpy_data()):
            saved = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - torch raises several types for a file it will not unpickle
        raise MetricError(f"{path} is not a PANNs checkpoint of tensors and data: {err}") from err
    state = saved.get("model", saved) if isinstance(saved, dict) else saved
    return load_strict(build_cnn14(), state, path, "a Cnn14 (16 kHz) checkpoint")


def _numpy_data() -> list:
    """What a PANNs training checkpoint holds besides tensors (its sampler's indexes and random state): numpy
    arrays, pickled by numpy 1 (``numpy.core``) or 2 (``numpy._core``); plain data, no code."""
    from numpy._core.multiarray import _reconstruct

    dtypes = [type(np.dtype(t)) for t in ("float32", "float64", "int64", "int32", "uint32", "bool")]
    return [np.ndarray, np.dtype, _reconstruct, (_reconstruct, "numpy.core.multiarray._reconstruct"), *dtypes]


class PannsFeatures:
    """Cnn14's embedding and logits of clips, batched (clips of different lengths each run alone)."""

    name = "panns"
    outputs = ("embedding", "logits")

    def __init__(self, root=None, device: str = "cpu", batch_size: int = 16):
        try:
            import torch  # noqa: F401
            import torchlibrosa  # noqa: F401
        except ImportError as err:
            raise MetricError("PANNs needs torch and torchlibrosa: pip install 'avjudge[metrics]'") from err
        (path,) = resolve(CHECKPOINT, root).values()
        self.network, self.device, self.batch_size = load_cnn14(path).to(device), device, batch_size
        self.weights = path

    def features(self, waveforms: list[np.ndarray]) -> list[dict[str, np.ndarray]]:
        """Each waveform's ``embedding`` (2048,) and ``logits`` (527,), float32."""
        return embeddings_and_logits(self.network, waveforms, self.batch_size, self.device)
