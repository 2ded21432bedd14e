"""Compile a judge's repeated blocks (encoder layers, decoder layers) with torch.compile, each in place.

transformers writes RMSNorm, rotary embeddings and the activations as chains of small element-wise operations, one
GPU kernel each: about 38% of the Qwen2.5-Omni AV judge's forward pass on an H100 (`benchmarks/real_size_judges.py
--end-to-end`'s profile). Compiled, each block's chain fuses into a few kernels. Compiling the blocks rather than the
whole model ("regional compilation") compiles one graph per kind of block, reused by all its instances, and leaves
the code between blocks (media placement, masks) as it is. Shapes are dynamic from the start: every batch's length
differs. Parameter names stay as they are, so a compiled judge still loads and scores as before.
"""

from __future__ import annotations

from torch import nn


def repeated_blocks(model: nn.Module) -> list[nn.Module]:
    """The members of every list of two or more modules of one class, outermost lists only (a block's own inner
    lists compile with it)."""
    blocks: list[nn.Module] = []
    inside: list[str] = []
    for name, module in model.named_modules():
        if any(name.startswith(prefix) for prefix in inside):
            continue
        if isinstance(module, nn.ModuleList) and len(module) > 1 and len({type(m) for m in module}) == 1:
            blocks.extend(module)
            inside.append(f"{name}." if name else "")
    return blocks


def compile_blocks(model: nn.Module) -> int:
    """Compile each repeated block of ``model`` in place (`torch.nn.Module.compile`); returns how many. The first
    batches of each new kind of input compile (tens of seconds), the rest reuse the graphs."""
    blocks = repeated_blocks(model)
    for block in blocks:
        block.compile(dynamic=True)
    return len(blocks)
