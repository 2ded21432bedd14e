"""DOVER's two video backbones, written for avjudge with the module names of the official state dicts.

- ``FragmentSwin3D``: FAST-VQA's Video Swin-T ("swin_tiny_grpb") for fragment mini-cubes. Inside a
  window, two tokens of the same 32x32 fragment get one relative-position bias table
  (``fragment_position_bias_table``); tokens of different fragments get the usual table scaled by
  their fragment distance (the "gated" bias of the official code, which multiplies by the L1
  distance between fragment coordinates, not by a 0/1 gate).
- ``ConvNeXt3D``: ConvNeXt-T inflated to 3D (depthwise kernels 1x7x7 / 3x7x7 alternating "131").

Both return a spatio-temporal feature map (N, C, D, H, W); the heads score every position.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch
import torch.nn.functional as F
from torch import nn

MASK_VALUE = -100.0  # the official shifted-window mask adds -100, not -inf


@dataclass(frozen=True)
class SwinSize:
    embed_dim: int = 96
    depths: tuple[int, ...] = (2, 2, 6, 2)
    heads: tuple[int, ...] = (3, 6, 12, 24)
    window: tuple[int, int, int] = (8, 7, 7)
    fragment_bias: tuple[bool, ...] = (True, True, True, False)
    patch: tuple[int, int, int] = (2, 4, 4)


@dataclass(frozen=True)
class ConvNeXtSize:
    dims: tuple[int, ...] = (96, 192, 384, 768)
    depths: tuple[int, ...] = (3, 3, 9, 3)
    inflate: str = "131"  # temporal kernel length of block j is inflate[j % len(inflate)]


def relative_position_index(window: tuple[int, int, int]) -> torch.Tensor:
    """(N, N) index into a (2Wd-1)(2Wh-1)(2Ww-1) bias table for every token pair of a window."""
    coords = torch.stack(torch.meshgrid(*[torch.arange(w) for w in window], indexing="ij")).flatten(1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0)
    rel = rel + torch.tensor(window) - 1
    spans = [2 * w - 1 for w in window]
    return rel[..., 0] * spans[1] * spans[2] + rel[..., 1] * spans[2] + rel[..., 2]


def effective_window(size, window, shift):
    """A window no larger than the feature map; no shift along a dimension the window covers whole."""
    window = tuple(min(s, w) for s, w in zip(size, window))
    shift = tuple(0 if s <= w else sh for s, w, sh in zip(size, window, shift))
    return window, shift


def partition(x: torch.Tensor, window) -> torch.Tensor:
    """(B, D, H, W, ...) -> (B * windows, Wd*Wh*Ww, ...), windows in (d, h, w) order."""
    b, d, h, w = x.shape[:4]
    rest = x.shape[4:]
    x = x.reshape(b, d // window[0], window[0], h // window[1], window[1], w // window[2], window[2], *rest)
    x = x.permute(0, 1, 3, 5, 2, 4, 6, *range(7, 7 + len(rest)))
    return x.reshape(-1, window[0] * window[1] * window[2], *rest)


def unpartition(windows: torch.Tensor, window, b: int, d: int, h: int, w: int) -> torch.Tensor:
    c = windows.shape[-1]
    x = windows.reshape(b, d // window[0], h // window[1], w // window[2], *window, c)
    return x.permute(0, 1, 4, 2, 5, 3, 6, 7).reshape(b, d, h, w, c)


# The two tables below depend only on the feature-map geometry: built once, shared by every clip
# (the largest, stage 1's fragment distances, takes 0.7 s and 80 MB).
@lru_cache(maxsize=32)
def shift_mask(size, window, shift) -> torch.Tensor | None:
    """(windows, N, N) additive mask keeping attention inside the regions a cyclic shift brought together."""
    if not any(shift):
        return None
    labels = []
    for n, w, s in zip(size, window, shift):
        idx = torch.arange(n)
        labels.append(torch.zeros(n, dtype=torch.long) if s == 0 else (idx >= n - w).long() + (idx >= n - s).long())
    region = labels[0][:, None, None] * 9 + labels[1][None, :, None] * 3 + labels[2][None, None, :]
    region = partition(region[None, ..., None], window)[..., 0]
    return torch.where(region[:, :, None] != region[:, None, :], MASK_VALUE, 0.0)


@lru_cache(maxsize=32)
def fragment_distance(size, window, shift) -> torch.Tensor:
    """(windows, N, N) L1 distance between the fragment coordinates of two tokens of a window.

    The feature map is cut into a Wh x Ww grid of fragments by nearest-neighbour mapping (as
    ``F.interpolate(mode="nearest")`` maps a Wh x Ww grid onto the map), then shifted like the tokens.
    """
    d, h, w = size
    fh = torch.floor(torch.arange(h, dtype=torch.float32) * (window[1] / h)).long().clamp(max=window[1] - 1)
    fw = torch.floor(torch.arange(w, dtype=torch.float32) * (window[2] / w)).long().clamp(max=window[2] - 1)
    coords = torch.stack(torch.meshgrid(torch.zeros(d, dtype=torch.long), fh, fw, indexing="ij"), -1)[None]
    coords = torch.roll(coords, shifts=tuple(-s for s in shift), dims=(1, 2, 3))
    coords = partition(coords, window)
    return (coords[:, None, :, :] - coords[:, :, None, :]).abs().sum(-1).float()  # small integers, exact


class WindowAttention3D(nn.Module):
    def __init__(self, dim: int, window, heads: int, fragment_bias: bool):
        super().__init__()
        self.heads, self.scale = heads, (dim // heads) ** -0.5
        table = (2 * window[0] - 1) * (2 * window[1] - 1) * (2 * window[2] - 1)
        self.relative_position_bias_table = nn.Parameter(torch.zeros(table, heads))
        if fragment_bias:
            self.fragment_position_bias_table = nn.Parameter(torch.zeros(table, heads))
        self.register_buffer("relative_position_index", relative_position_index(window))
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def _bias(self, table: torch.Tensor, n: int) -> torch.Tensor:
        index = self.relative_position_index[:n, :n].reshape(-1)
        return table[index].reshape(n, n, -1).permute(2, 0, 1)  # heads, N, N

    def forward(self, x, mask, distance):
        bw, n, c = x.shape
        q, k, v = self.qkv(x).reshape(bw, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        bias = self._bias(self.relative_position_bias_table, n)[None]  # 1, heads, N, N
        if hasattr(self, "fragment_position_bias_table"):
            gate = distance[:, None].to(attn.dtype)
            bias = bias * gate + self._bias(self.fragment_position_bias_table, n)[None] * (1 - gate)
        windows = distance.shape[0]
        attn = attn.view(bw // windows, windows, self.heads, n, n) + bias[None]
        if mask is not None:
            attn = attn + mask[None, :, None].to(attn.dtype)
        attn = attn.view(bw, self.heads, n, n).softmax(-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(bw, n, c))


class Mlp(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class SwinBlock3D(nn.Module):
    def __init__(self, dim: int, heads: int, window, fragment_bias: bool):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention3D(dim, window, heads, fragment_bias)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, 4 * dim)

    def forward(self, x, window, shift, mask):
        b, d, h, w, _ = x.shape
        shortcut, x = x, self.norm1(x)
        if any(shift):
            x = torch.roll(x, shifts=tuple(-s for s in shift), dims=(1, 2, 3))
        distance = fragment_distance((d, h, w), window, shift).to(x.device)
        x = unpartition(self.attn(partition(x, window), mask, distance), window, b, d, h, w)
        if any(shift):
            x = torch.roll(x, shifts=shift, dims=(1, 2, 3))
        x = shortcut + x
        return x + self.mlp(self.norm2(x))


class PatchMerging(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(4 * dim)
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x):  # B, D, H, W, C
        parts = [x[:, :, 0::2, 0::2], x[:, :, 1::2, 0::2], x[:, :, 0::2, 1::2], x[:, :, 1::2, 1::2]]
        return self.reduction(self.norm(torch.cat(parts, -1)))


class SwinStage(nn.Module):
    def __init__(self, dim: int, depth: int, heads: int, window, fragment_bias: bool, downsample: bool):
        super().__init__()
        self.window = window
        self.blocks = nn.ModuleList(SwinBlock3D(dim, heads, window, fragment_bias) for _ in range(depth))
        self.downsample = PatchMerging(dim) if downsample else None

    def forward(self, x):  # B, C, D, H, W
        size = tuple(x.shape[2:])
        window, shift = effective_window(size, self.window, tuple(w // 2 for w in self.window))
        if any(s % w for s, w in zip(size, window)):
            raise ValueError(f"feature map {size} is not a whole number of {window} windows")
        mask = shift_mask(size, window, shift)
        mask = mask.to(x.device) if mask is not None else None
        x = x.permute(0, 2, 3, 4, 1)
        for i, block in enumerate(self.blocks):  # every second block attends in shifted windows
            x = block(x, window, shift, mask) if i % 2 else block(x, window, (0, 0, 0), None)
        if self.downsample is not None:
            x = self.downsample(x)
        return x.permute(0, 4, 1, 2, 3)


class PatchEmbed3D(nn.Module):
    def __init__(self, patch, dim: int):
        super().__init__()
        self.proj = nn.Conv3d(3, dim, kernel_size=patch, stride=patch)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        x = self.proj(x)
        return self.norm(x.permute(0, 2, 3, 4, 1)).permute(0, 4, 1, 2, 3)


class FragmentSwin3D(nn.Module):
    def __init__(self, size: SwinSize = SwinSize()):
        super().__init__()
        self.patch_embed = PatchEmbed3D(size.patch, size.embed_dim)
        stages = len(size.depths)
        self.layers = nn.ModuleList(
            SwinStage(
                size.embed_dim * 2**i,
                size.depths[i],
                size.heads[i],
                size.window,
                size.fragment_bias[i],
                downsample=i < stages - 1,
            )
            for i in range(stages)
        )
        self.norm = nn.LayerNorm(size.embed_dim * 2 ** (stages - 1))

    def forward(self, x):  # N, 3, T, H, W (normalised pixels)
        x = self.patch_embed(x)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x.permute(0, 2, 3, 4, 1)).permute(0, 4, 1, 2, 3)


class ChannelsLayerNorm(nn.Module):
    """ConvNeXt's LayerNorm over dim 1 (channels first) or the last dim, with its own weight / bias."""

    def __init__(self, dim: int, channels_first: bool, eps: float = 1e-6):
        super().__init__()
        self.weight, self.bias = nn.Parameter(torch.ones(dim)), nn.Parameter(torch.zeros(dim))
        self.channels_first, self.eps = channels_first, eps

    def forward(self, x):
        if not self.channels_first:
            return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)
        mean = x.mean(1, keepdim=True)
        var = (x - mean).pow(2).mean(1, keepdim=True)
        shape = (-1,) + (1,) * (x.dim() - 2)
        return self.weight.view(shape) * (x - mean) / torch.sqrt(var + self.eps) + self.bias.view(shape)


class ConvNeXtBlock3D(nn.Module):
    def __init__(self, dim: int, temporal_kernel: int):
        super().__init__()
        self.dwconv = nn.Conv3d(
            dim, dim, kernel_size=(temporal_kernel, 7, 7), padding=(temporal_kernel // 2, 3, 3), groups=dim
        )
        self.norm = ChannelsLayerNorm(dim, channels_first=False)
        self.pwconv1, self.act, self.pwconv2 = nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.full((dim,), 1e-6))

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 4, 1)
        y = self.gamma * self.pwconv2(self.act(self.pwconv1(self.norm(y))))
        return x + y.permute(0, 4, 1, 2, 3)


class ConvNeXt3D(nn.Module):
    def __init__(self, size: ConvNeXtSize = ConvNeXtSize()):
        super().__init__()
        dims = size.dims
        self.downsample_layers = nn.ModuleList(
            [
                nn.Sequential(
                    nn.Conv3d(3, dims[0], kernel_size=(2, 4, 4), stride=(2, 4, 4)), ChannelsLayerNorm(dims[0], True)
                )
            ]
        )
        for i in range(len(dims) - 1):
            self.downsample_layers.append(
                nn.Sequential(
                    ChannelsLayerNorm(dims[i], True),
                    nn.Conv3d(dims[i], dims[i + 1], kernel_size=(1, 2, 2), stride=(1, 2, 2)),
                )
            )
        self.stages = nn.ModuleList(
            nn.Sequential(
                *[ConvNeXtBlock3D(dims[i], int(size.inflate[j % len(size.inflate)])) for j in range(size.depths[i])]
            )
            for i in range(len(dims))
        )
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)

    def forward(self, x):
        for down, stage in zip(self.downsample_layers, self.stages):
            x = stage(down(x))
        return self.norm(x.permute(0, 2, 3, 4, 1)).permute(0, 4, 1, 2, 3)


class QualityHead(nn.Module):
    """DOVER's VQAHead: a 1x1x1 conv MLP scoring every position of the feature map (dropout: eval only)."""

    def __init__(self, in_channels: int = 768, hidden: int = 64):
        super().__init__()
        self.fc_hid = nn.Conv3d(in_channels, hidden, 1)
        self.gelu = nn.GELU()
        self.fc_last = nn.Conv3d(hidden, 1, 1)

    def forward(self, x):
        return self.fc_last(self.gelu(self.fc_hid(x)))
