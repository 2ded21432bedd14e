"""PaSST (Koutini et al. 2022), ``passt_s_swa_p16_128_ap476``: the AudioSet tagger behind av-benchmark's FD-PASST,
KL-PASST and ISC-PASST.

avjudge's own network with the names and shapes of ``hear21passt``'s ``PaSST`` (so the released
``passt-s-f128-p16-s10-ap.476-swa.pt`` loads strictly): a distilled ViT-B over 16x16 patches of the log-mel every
10 bins and 10 frames, with separate frequency and time position embeddings; its embedding is the mean of the CLS
and distillation tokens after the last norm, its logits the head on that embedding.

The front end is ``hear21passt``'s ``AugmentMelSTFT`` in evaluation: pre-emphasis (-0.97, 1), a power STFT (n_fft
1024, an 800-sample symmetric Hann window, hop 320, centred with reflection), Kaldi's 128 mel banks from 0 Hz to
15 kHz (its default ``fmax``: half the rate less half its augmentation range), ``log(x + 1e-5)``, ``(x + 4.5) / 5``.
av-benchmark gives it 32 kHz audio of the first 8 s padded with zeros to 10 s.
"""

from __future__ import annotations

import numpy as np

from .base import MetricError, load_strict, load_torch_file
from .batched import embeddings_and_logits
from .checkpoints import resolve
from .reference_audio import reference_waveform

SAMPLE_RATE = 32000
CLIP_SAMPLES = 320000  # av-benchmark pads (or cuts) every clip to 10 s
N_FFT, WIN_LENGTH, HOP, MELS = 1024, 800, 320, 128
FMAX = SAMPLE_RATE // 2 - 2000 // 2
FREQ_PATCHES, TIME_PATCHES = (MELS - 16) // 10 + 1, (998 - 16) // 10 + 1  # the released grid: 128 bins, 998 frames
CLASSES = 527
CHECKPOINT = "passt_s_swa"


def kaldi_mel_banks(mels: int = MELS, n_fft: int = N_FFT, sample_rate: int = SAMPLE_RATE, fmin: float = 0.0,
                    fmax: float = FMAX) -> np.ndarray:  # fmt: skip
    """(mels, n_fft // 2 + 1) triangular filters on Kaldi's mel scale (1127 ln(1 + f / 700)), as Kaldi and
    ``torchaudio.compliance.kaldi.get_mel_banks`` build them (no VTLN warping), with the Nyquist bin a zero column."""

    def mel(f):
        return 1127.0 * np.log(1.0 + np.asarray(f, np.float64) / 700.0)

    bins = n_fft // 2
    low, high = mel(fmin), mel(fmax)
    delta = (high - low) / (mels + 1)
    left = low + delta * np.arange(mels)[:, None]
    centre, right = left + delta, left + 2 * delta
    freqs = mel(sample_rate / n_fft * np.arange(bins))[None, :]
    up = (freqs - left) / (centre - left)
    down = (right - freqs) / (right - centre)
    banks = np.maximum(0.0, np.minimum(up, down))
    return np.pad(banks, ((0, 0), (0, 1))).astype(np.float32)


def build_passt(width: int = 768, depth: int = 12, heads: int = 12):
    """The network; module names and shapes match ``hear21passt.models.passt.PaSST`` (distilled)."""
    import torch
    from torch import nn

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)

        def forward(self, x):
            n, length, _ = x.shape
            q, k, v = self.qkv(x).reshape(n, length, 3, heads, width // heads).permute(2, 0, 3, 1, 4)
            attention = ((q @ k.transpose(-2, -1)) * (width // heads) ** -0.5).softmax(dim=-1)
            return self.proj((attention @ v).transpose(1, 2).reshape(n, length, width))

    class Mlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.act, self.fc2 = nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(width, eps=1e-6), nn.LayerNorm(width, eps=1e-6)
            self.attn, self.mlp = Attention(), Mlp()

        def forward(self, x):
            x = x + self.attn(self.norm1(x))
            return x + self.mlp(self.norm2(x))

    class PatchEmbed(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Conv2d(1, width, 16, stride=10)

    class PaSST(nn.Module):
        def __init__(self):
            super().__init__()
            self.patch_embed = PatchEmbed()
            self.cls_token = nn.Parameter(torch.zeros(1, 1, width))
            self.dist_token = nn.Parameter(torch.zeros(1, 1, width))
            self.new_pos_embed = nn.Parameter(torch.zeros(1, 2, width))
            self.freq_new_pos_embed = nn.Parameter(torch.zeros(1, width, FREQ_PATCHES, 1))
            self.time_new_pos_embed = nn.Parameter(torch.zeros(1, width, 1, TIME_PATCHES))
            self.blocks = nn.Sequential(*(Block() for _ in range(depth)))
            self.norm = nn.LayerNorm(width, eps=1e-6)
            self.head = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, CLASSES))
            self.head_dist = nn.Linear(width, CLASSES)  # the distillation head the weights carry; unused in use

        def forward(self, mel):
            """(B, 1, 128, T) log-mels -> the (B, 768) embeddings and (B, 527) logits."""
            x = self.patch_embed.proj(mel)  # (B, D, F, T')
            x = x + self.time_new_pos_embed[..., : x.shape[-1]] + self.freq_new_pos_embed
            x = x.flatten(2).transpose(1, 2)
            n = len(x)
            tokens = [self.cls_token.expand(n, -1, -1) + self.new_pos_embed[:, :1],
                      self.dist_token.expand(n, -1, -1) + self.new_pos_embed[:, 1:]]  # fmt: skip
            x = self.norm(self.blocks(torch.cat([*tokens, x], dim=1)))
            embedding = (x[:, 0] + x[:, 1]) / 2
            return embedding, self.head(embedding)

    return PaSST().eval()


class PasstMel:
    """``hear21passt``'s ``AugmentMelSTFT`` in evaluation, on (B, N) 32 kHz waveforms -> (B, 1, 128, frames)."""

    def __init__(self, device: str = "cpu"):
        import torch

        self.window = torch.hann_window(WIN_LENGTH, periodic=False, device=device)
        self.banks = torch.from_numpy(kaldi_mel_banks()).to(device)
        self.preemphasis = torch.tensor([[[-0.97, 1.0]]], device=device)

    def __call__(self, x):
        import torch

        x = torch.nn.functional.conv1d(x[:, None], self.preemphasis)[:, 0]
        spec = torch.stft(x, N_FFT, HOP, WIN_LENGTH, self.window, center=True, return_complex=True)
        mel = torch.log(self.banks @ spec.abs().pow(2) + 1e-5)
        return ((mel + 4.5) / 5.0)[:, None]


def passt_waveform(clip) -> np.ndarray:
    """A clip's audio as av-benchmark gives PaSST: 32 kHz mono, its mean removed, the first 8 s padded to 10 s."""
    audio = reference_waveform(clip, SAMPLE_RATE)[:CLIP_SAMPLES]
    return np.pad(audio, (0, CLIP_SAMPLES - len(audio)))


class PasstFeatures:
    """PaSST's embedding and logits of prepared 10 s waveforms, batched."""

    name = "passt"
    outputs = ("embedding", "logits")

    def __init__(self, root=None, device: str = "cpu", batch_size: int = 16):
        try:
            import torch  # noqa: F401
        except ImportError as err:
            raise MetricError("PaSST needs torch: pip install 'avjudge[metrics]'") from err
        (path,) = resolve(CHECKPOINT, root).values()
        self.network = load_strict(build_passt(), load_torch_file(path), path, "a PaSST-S (distilled) state dict")
        self.network, self.mel, self.device = self.network.to(device), PasstMel(device), device
        self.batch_size, self.weights = batch_size, path

    def features(self, waveforms: list[np.ndarray]) -> list[dict[str, np.ndarray]]:
        """Each prepared waveform's ``embedding`` (768,) and ``logits`` (527,), float32."""
        return embeddings_and_logits(lambda x: self.network(self.mel(x)), waveforms, self.batch_size, self.device)
