"""NISQA v2.0 speech quality (MOS, noisiness, discontinuity, coloration, loudness) and NISQA-TTS
naturalness: avjudge's implementation of the NISQA networks and their input pipeline, loading the
official checkpoints (``nisqa.tar``, ``nisqa_tts.tar``) with ``weights_only=True`` and ``strict=True``.

Every setting comes from the checkpoint's own ``args``: log-mel spectrogram at the clip's own sample
rate (no resampling; 10 ms hop, 20 ms Hann window, 4096-point FFT, 48 Slaney mel bands up to
``ms_fmax``, magnitude in dB with amin 1e-4 and an 80 dB floor), cut into 15-frame segments every
``ms_seg_hop_length`` frames, then a CNN per segment, a time model (self-attention or BiLSTM) and
one pooling head per output. ``scripts/nisqa_parity.py`` compares it with the official package.
"""

from __future__ import annotations

import warnings
from typing import ClassVar

import numpy as np

from .base import AudioNeeds, Metric, MetricError, load_strict, load_torch_file, register
from .checkpoints import resolve

SUPPORTED = {
    "cnn_model": ("adapt", "standard"),
    "td": ("self_att", "lstm"),
    "td_2": ("skip", None),
    "pool": ("att", "last_step_bi"),
    "ms_sr": (None,),
    "double_ended": (False,),
}
DIMENSION_OUTPUTS = ("mos", "noi", "dis", "col", "loud")


def nisqa_melspec(audio: np.ndarray, sample_rate: int, args: dict) -> np.ndarray:
    """(n_mels, frames) log-mel spectrogram in dB, as the checkpoint was trained on."""
    import librosa

    with warnings.catch_warnings():  # fmax above Nyquist leaves the top bands empty, as in training
        warnings.filterwarnings("ignore", message="Empty filters detected")
        mel = librosa.feature.melspectrogram(
            y=audio,
            sr=sample_rate,
            n_fft=args["ms_n_fft"],
            hop_length=int(sample_rate * args["ms_hop_length"]),
            win_length=int(sample_rate * args["ms_win_length"]),
            window="hann",
            center=True,
            pad_mode="reflect",
            power=1.0,
            n_mels=args["ms_n_mels"],
            fmin=0.0,
            fmax=args["ms_fmax"],
            htk=False,
            norm="slaney",
        )
    return librosa.amplitude_to_db(mel, ref=1.0, amin=1e-4, top_db=80.0)


def build_network(args: dict):
    """The NISQA network an official checkpoint's ``args`` describe (module names match its state dict)."""
    import torch
    from torch import nn
    from torch.nn import functional as F

    for key, allowed in SUPPORTED.items():
        if args.get(key) not in allowed:
            raise MetricError(f"this NISQA checkpoint sets {key}={args.get(key)!r}; avjudge implements {allowed}")

    class Holder(nn.Module):  # the official checkpoints keep every block under `.model`
        def __init__(self, model: nn.Module):
            super().__init__()
            self.model = model

    def conv_bn(c_in: int, c_out: int, kernel, padding) -> tuple[nn.Module, nn.Module]:
        return nn.Conv2d(c_in, c_out, kernel, padding=padding), nn.BatchNorm2d(c_out)

    class SixConvCNN(nn.Module):
        """Six 3x3 conv + batch-norm + ReLU layers with pooling after the 1st, 2nd and 4th."""

        def __init__(self, last_kernel, last_padding):
            super().__init__()
            c1, c2, c3 = args["cnn_c_out_1"], args["cnn_c_out_2"], args["cnn_c_out_3"]
            k = (
                tuple(args["cnn_kernel_size"])
                if not isinstance(args["cnn_kernel_size"], int)
                else (args["cnn_kernel_size"],) * 2
            )
            specs = [
                (1, c1, k, 1),
                (c1, c2, k, 1),
                (c2, c3, k, 1),
                (c3, c3, k, 1),
                (c3, c3, k, 1),
                (c3, c3, last_kernel, last_padding),
            ]
            for i, (c_in, c_out, kernel, pad) in enumerate(specs, start=1):
                conv, bn = conv_bn(c_in, c_out, kernel, pad)
                setattr(self, f"conv{i}", conv)
                setattr(self, f"bn{i}", bn)

        def layer(self, i: int, x):
            return F.relu(getattr(self, f"bn{i}")(getattr(self, f"conv{i}")(x)))

        def pool(self, stage: int, x):
            raise NotImplementedError

        def features(self, x):
            x = self.pool(1, self.layer(1, x))
            x = self.pool(2, self.layer(2, x))
            x = self.pool(3, self.layer(4, self.layer(3, x)))
            return self.layer(6, self.layer(5, x)).flatten(1)

    class AdaptivePoolCNN(SixConvCNN):
        """'adapt': adaptive max pooling to fixed sizes; the last kernel spans the remaining width."""

        def __init__(self):
            self.sizes = [tuple(args[f"cnn_pool_{i}"]) for i in (1, 2, 3)]
            super().__init__((3, self.sizes[2][1]), (1, 0))

        def pool(self, stage, x):
            return F.adaptive_max_pool2d(x, self.sizes[stage - 1])

        def forward(self, x):
            return self.features(x)

    class FixedPoolCNN(SixConvCNN):
        """'standard': 2x2 max pooling (the first pads the width by one), a 48x15 input, a linear output."""

        def __init__(self):
            super().__init__(3, 1)
            self.fc_out = nn.Linear(args["cnn_c_out_3"] * 6 * 2, args["cnn_fc_out_h"])

        def pool(self, stage, x):
            return F.max_pool2d(x, 2, stride=2, padding=(0, 1) if stage == 1 else 0)

        def forward(self, x):
            return self.fc_out(self.features(x))

    class EncoderLayer(nn.Module):
        """Post-norm transformer layer: x = norm1(x + attn(x)); x = norm2(x + ff(x))."""

        def __init__(self, d: int):
            super().__init__()
            self.self_attn = nn.MultiheadAttention(d, args["td_sa_nhead"], batch_first=True)
            self.linear1, self.linear2 = nn.Linear(d, args["td_sa_h"]), nn.Linear(args["td_sa_h"], d)
            self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)

        def forward(self, x):
            x = self.norm1(x + self.self_attn(x, x, x, need_weights=False)[0])
            return self.norm2(x + self.linear2(F.relu(self.linear1(x))))

    class SelfAttentionModel(nn.Module):
        def __init__(self, d_in: int):
            super().__init__()
            d = args["td_sa_d_model"]
            self.linear, self.norm1 = nn.Linear(d_in, d), nn.LayerNorm(d)
            self.layers = nn.ModuleList(EncoderLayer(d) for _ in range(args["td_sa_num_layers"]))
            self.fan_out = d

        def forward(self, x):
            x = self.norm1(self.linear(x))
            for layer in self.layers:
                x = layer(x)
            return x

    class BiLSTMModel(nn.Module):
        def __init__(self, d_in: int):
            super().__init__()
            self.lstm = nn.LSTM(
                d_in,
                args["td_lstm_h"],
                num_layers=args["td_lstm_num_layers"],
                batch_first=True,
                bidirectional=bool(args["td_lstm_bidirectional"]),
            )
            self.fan_out = args["td_lstm_h"] * (2 if args["td_lstm_bidirectional"] else 1)

        def forward(self, x):
            return self.lstm(x)[0]

    class AttentionPool(nn.Module):
        """Weights over segments from a small feed-forward net, then a linear output of the weighted sum."""

        def __init__(self, d: int):
            super().__init__()
            self.linear1, self.linear2 = nn.Linear(d, args["pool_att_h"]), nn.Linear(args["pool_att_h"], 1)
            self.linear3 = nn.Linear(d, 1)

        def forward(self, x):
            weights = torch.softmax(self.linear2(F.relu(self.linear1(x))), dim=1)
            return self.linear3((weights * x).sum(dim=1))

    class LastStepBiPool(nn.Module):
        """The forward direction's last step and the backward direction's first, then a linear output."""

        def __init__(self, d: int):
            super().__init__()
            self.linear = nn.Linear(d, 1)

        def forward(self, x):
            half = x.shape[-1] // 2
            return self.linear(torch.cat([x[:, -1, :half], x[:, 0, half:]], dim=1))

    class NISQANetwork(nn.Module):
        def __init__(self):
            super().__init__()
            cnn = AdaptivePoolCNN() if args["cnn_model"] == "adapt" else FixedPoolCNN()
            self.cnn = Holder(cnn)
            d_cnn = (
                cnn.fc_out.out_features
                if args["cnn_model"] == "standard"
                else (args["cnn_c_out_3"] * args["cnn_pool_3"][0])
            )
            td = SelfAttentionModel(d_cnn) if args["td"] == "self_att" else BiLSTMModel(d_cnn)
            self.time_dependency = Holder(td)
            make_pool = AttentionPool if args["pool"] == "att" else LastStepBiPool
            if args["model"] == "NISQA_DIM":
                self.pool_layers = nn.ModuleList(Holder(make_pool(td.fan_out)) for _ in DIMENSION_OUTPUTS)
            else:
                self.pool = Holder(make_pool(td.fan_out))

        def forward(self, segments):
            """(S, 1, n_mels, seg_length) segments of one clip -> (outputs,)"""
            x = self.time_dependency.model(self.cnn.model(segments).unsqueeze(0))
            heads = self.pool_layers if hasattr(self, "pool_layers") else [self.pool]
            return torch.cat([h.model(x) for h in heads], dim=1)[0]

    return NISQANetwork()


def segments(spec: np.ndarray, seg_length: int, seg_hop: int):
    """(n_mels, frames) -> (S, 1, n_mels, seg_length): a window centred on every ``seg_hop``-th frame."""
    import torch

    windows = torch.from_numpy(np.ascontiguousarray(spec)).unfold(1, seg_length, 1)  # (n_mels, S, seg_length)
    return windows.permute(1, 0, 2)[::seg_hop].unsqueeze(1).contiguous()


class _NISQA(Metric):
    audio = AudioNeeds(sample_rate=None)
    outputs: ClassVar[tuple[str, ...]]

    def __init__(self, root=None):
        try:
            import torch  # noqa: F401
        except ImportError as err:
            raise MetricError(f"{self.name} needs torch: pip install 'avjudge[metrics]'") from err
        (path,) = resolve(self.checkpoints[0], root).values()
        checkpoint = load_torch_file(path)
        self.args = checkpoint["args"]
        self.network = load_strict(
            build_network(self.args), checkpoint["model_state_dict"], path, f"a {self.args['model']} checkpoint"
        )

    def predict(self, audio: np.ndarray, sample_rate: int) -> dict[str, float]:
        import torch

        a = self.args
        min_samples = int(sample_rate * a["ms_hop_length"]) * (a["ms_seg_length"] - 1)
        if len(audio) < min_samples:
            raise MetricError(
                f"{len(audio) / sample_rate:.3f} s of audio is too short for {self.name} "
                f"(at least {min_samples / sample_rate:.2f} s)"
            )
        x = segments(
            nisqa_melspec(audio.astype(np.float32), sample_rate, a), a["ms_seg_length"], a["ms_seg_hop_length"]
        )
        if len(x) > a["ms_max_segments"]:
            raise MetricError(
                f"{len(audio) / sample_rate:.1f} s of audio is longer than {self.name} was trained "
                f"for ({a['ms_max_segments']} segments); cut the clip"
            )
        with torch.inference_mode():
            values = self.network(x).tolist()
        return {f"{self.name}_{k}": float(v) for k, v in zip(self.outputs, values)}

    def compute(self, clip, **ctx):
        return self.predict(self.audio_of(clip), clip.sample_rate)


@register
class NISQA(_NISQA):
    name = "nisqa"
    description = "NISQA v2.0 speech quality: MOS, noisiness, discontinuity, coloration, loudness (1-5)"
    checkpoints = ("nisqa",)
    outputs = DIMENSION_OUTPUTS
    aspect = "audio"
    scales = {f"nisqa_{k}": (1.0, 5.0) for k in DIMENSION_OUTPUTS}


@register
class NISQATTS(_NISQA):
    name = "nisqa_tts"
    description = "NISQA-TTS naturalness of synthetic speech (1-5)"
    checkpoints = ("nisqa_tts",)
    outputs = ("mos",)
    aspect = "audio"
    scales = {"nisqa_tts_mos": (1.0, 5.0)}
