"""Pillow's bicubic resize of 8-bit images, exactly, as tensor work on any device.

The Qwen2-VL processor (and `media_inputs.video_patches`) resize frames with ``PIL.Image.resize(BICUBIC)``. A
GPU resize must give the same bytes, or scores move. Pillow (``libImaging/Resample.c``) resizes in two passes, each
rounding to 8 bits; each output pixel is a sum of input pixels times filter weights held as integers with 22
fractional bits. Here each pass is one float64 matrix product with those integer weights: every partial sum is an
integer far below 2**53, so float64 holds it exactly in any summation order, and the rounding that follows is
Pillow's. Which pass goes first changes the rounding: Pillow up to 12 always resizes horizontally first, Pillow 13
sometimes vertically first (python-pillow/Pillow#9549), so the order is read off the installed Pillow once per size.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch

PRECISION_BITS = 32 - 8 - 2  # Pillow's fixed point for 8-bit images
BICUBIC_A = -0.5
BICUBIC_SUPPORT = 2.0


def _bicubic(x: np.ndarray) -> np.ndarray:
    """Pillow's bicubic filter; the same operations in the same order, so the same doubles."""
    a = BICUBIC_A
    x = np.abs(x)
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1
    far = (((x - 5) * x + 8) * x - 4) * a
    return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))


@lru_cache(maxsize=64)
def pillow_weights(in_size: int, out_size: int) -> np.ndarray:
    """(out_size, in_size) integer weights of one pass, as Pillow's ``precompute_coeffs`` and
    ``normalize_coeffs_8bpc`` compute them (float64 holding integers)."""
    scale = in_size / out_size
    filterscale = max(scale, 1.0)
    support = BICUBIC_SUPPORT * filterscale
    ksize = int(np.ceil(support)) * 2 + 1
    centers = (np.arange(out_size) + 0.5) * scale
    # C's (int) cast truncates toward zero; a negative start is clamped to 0 either way
    xmin = np.maximum(np.trunc(centers - support + 0.5), 0).astype(np.int64)
    xmax = np.minimum(np.trunc(centers + support + 0.5).astype(np.int64), in_size) - xmin
    taps = np.arange(ksize)
    used = taps[None, :] < xmax[:, None]
    k = np.where(used, _bicubic((taps[None, :] + xmin[:, None] - centers[:, None] + 0.5) * (1.0 / filterscale)), 0.0)
    total = np.zeros(out_size)
    for tap in range(ksize):  # summed tap by tap, as C does (numpy's pairwise sum rounds differently)
        total += k[:, tap]
    k = np.where(total[:, None] != 0.0, k / np.where(total == 0.0, 1.0, total)[:, None], k)
    fixed = np.trunc(np.where(k < 0, -0.5, 0.5) + k * (1 << PRECISION_BITS))
    weights = np.zeros((out_size, in_size))
    rows = np.repeat(np.arange(out_size), ksize)
    cols = (xmin[:, None] + taps[None, :]).ravel()
    keep = used.ravel()
    weights[rows[keep], cols[keep]] = fixed.ravel()[keep]
    return weights


@lru_cache(maxsize=64)
def _weights_on(in_size: int, out_size: int, device: torch.device) -> torch.Tensor:
    """`pillow_weights`, transposed, on ``device``: copied there once per size, not once per batch."""
    return torch.from_numpy(pillow_weights(in_size, out_size).T.copy()).to(device)


def _pass(x: torch.Tensor, out_size: int) -> torch.Tensor:
    """One pass over the last axis of float64 ``x`` (integers 0..255) to ``out_size``, rounded to 8 bits as
    Pillow's ``clip8``."""
    summed = x @ _weights_on(x.shape[-1], out_size, x.device) + float(1 << (PRECISION_BITS - 1))
    return torch.floor(summed * (1.0 / (1 << PRECISION_BITS))).clamp_(0, 255)


@lru_cache(maxsize=64)
def vertical_first(in_h: int, in_w: int, out_h: int, out_w: int) -> bool:
    """Whether the installed Pillow resizes an image of this size vertically first: one random probe of the size
    through Pillow and through each order (the orders round differently on nearly every pixel of noise)."""
    from PIL import Image

    probe = np.random.default_rng(0).integers(0, 256, (in_h, in_w), dtype=np.uint8)
    expected = torch.from_numpy(np.array(Image.fromarray(probe).resize((out_w, out_h), Image.BICUBIC)))
    x = torch.from_numpy(probe)[None, None].to(torch.float64)
    vertical = _pass(_pass(x.transpose(-1, -2), out_h).transpose(-1, -2), out_w)
    return bool(torch.equal(vertical[0, 0].to(torch.uint8), expected))


def resize_like_pillow(images: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """(N, C, H, W) uint8 images resized to (height, width) with Pillow's bicubic filter: the bytes
    ``Image.resize((width, height), Image.BICUBIC)`` gives, on the images' own device."""
    if images.dtype != torch.uint8 or images.ndim != 4:
        raise ValueError(f"need (N, C, H, W) uint8 images, got {tuple(images.shape)} {images.dtype}")
    x = images.to(torch.float64)
    in_h, in_w = x.shape[-2:]

    def horizontal(x):
        return _pass(x, width) if in_w != width else x  # Pillow skips a pass of the same size

    def vertical(x):
        return _pass(x.transpose(-1, -2), height).transpose(-1, -2) if in_h != height else x

    if in_w != width and in_h != height and vertical_first(in_h, in_w, height, width):
        return horizontal(vertical(x)).to(torch.uint8)
    return vertical(horizontal(x)).to(torch.uint8)
