"""Where models run: one reading of ``--device auto`` for judges and metrics alike."""

from __future__ import annotations


def device_name(device: str) -> str:
    """``auto``: CUDA when torch sees a GPU, else the CPU (also without torch); any other name as it is."""
    if device != "auto":
        return device
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"
