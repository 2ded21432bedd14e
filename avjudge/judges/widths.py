"""Pad a judge's MLP widths with zeros up to a multiple of N elements: the same function, other GEMM kernels.

Qwen2.5-Omni's vision tower has MLPs 3,420 wide, which is not a multiple of 8 bf16 elements (16 bytes). On an H100
its 96 matrix products (gate, up and down in each of 32 blocks) ran on Ampere (sm80) CUTLASS kernels, a fifth of
the forward pass's GPU time (`benchmarks/real_size_judges.py --end-to-end`'s profile); the Hopper kernels need
16-byte-aligned rows. Padding the inner width with zero rows of the layers that widen and zero columns of the layer
that narrows leaves every output unchanged: the padded units are zero (or multiplied by zero weights) whatever the
activation. Only scoring pads: a trained or saved model keeps its released shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class MlpLayout:
    """The layers around an MLP's inner width: those that widen to it and the one that narrows from it. Their only
    link is element-wise (an activation, a product of the widened branches), so zero units stay inert."""

    widen: tuple[str, ...]
    narrow: str


GATED = MlpLayout(("gate_proj", "up_proj"), "down_proj")  # down(act(gate(x)) * up(x))
TWO_LAYER = MlpLayout(("linear_fc1",), "linear_fc2")  # fc2(act(fc1(x)))
ENCODER_LAYER = MlpLayout(("fc1",), "fc2")  # a Whisper-style encoder layer's own fc2(act(fc1(x)))

# transformers' module classes (by name) whose forward is one of those layouts, as read in transformers 5.23.
MLP_LAYOUTS: dict[str, MlpLayout] = {
    "Qwen2MLP": GATED,
    "Qwen2_5OmniMLP": GATED,
    "Qwen3OmniMoeThinkerTextMLP": GATED,
    "Qwen3OmniMoeVisionMLP": TWO_LAYER,
    "Qwen2_5OmniAudioEncoderLayer": ENCODER_LAYER,
    "Qwen2AudioEncoderLayer": ENCODER_LAYER,
    "Qwen3OmniMoeAudioEncoderLayer": ENCODER_LAYER,
}


def _padded(tensor: torch.Tensor, dim: int, extra: int) -> nn.Parameter:
    shape = list(tensor.shape)
    shape[dim] = extra
    return nn.Parameter(torch.cat([tensor, tensor.new_zeros(shape)], dim=dim), requires_grad=tensor.requires_grad)


def _widen(layer: nn.Linear, width: int) -> None:
    extra = width - layer.out_features
    layer.weight = _padded(layer.weight.data, 0, extra)
    if layer.bias is not None:
        layer.bias = _padded(layer.bias.data, 0, extra)
    layer.out_features = width


def _narrow_from(layer: nn.Linear, width: int) -> None:
    layer.weight = _padded(layer.weight.data, 1, width - layer.in_features)
    layer.in_features = width


def align_mlp_widths(model: nn.Module, multiple: int) -> int:
    """Pad the inner width of every MLP of a known layout up to a multiple of ``multiple``; returns how many were
    padded. MLPs whose layers are not plain ``nn.Linear`` (LoRA-wrapped, quantised) are left as they are."""
    if multiple <= 0:
        raise ValueError(f"align widths to a positive multiple, not {multiple}")
    padded = 0
    for module in model.modules():
        layout = MLP_LAYOUTS.get(type(module).__name__)
        if layout is None:
            continue
        widen = [getattr(module, name) for name in layout.widen]
        narrow = getattr(module, layout.narrow)
        if not all(type(layer) is nn.Linear for layer in (*widen, narrow)):
            continue
        inner = narrow.in_features
        width = -(-inner // multiple) * multiple
        if width == inner:
            continue
        for layer in widen:
            _widen(layer, width)
        _narrow_from(narrow, width)
        padded += 1
    return padded
