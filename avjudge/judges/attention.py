"""Packed window attention for the Qwen-Omni audio and vision encoders.

Those encoders attend within windows and frames, given to the attention as cumulative lengths.
Without flash-attn installed, transformers makes one sdpa call per window: about 3,000 small calls
for one 8 s 720p clip in the Qwen2.5-Omni vision tower, which leaves an H100 mostly idle
(`benchmarks/real_size_judges.py --attention packed,sdpa` measures it). ``packed_attention`` gives
all windows to PyTorch's own variable-length flash kernel (``torch.nn.attention.varlen``) in one call
where that kernel runs (CUDA, half precision), and elsewhere does what transformers does. It is
registered under a name containing "flash" because that is what makes transformers pass the window
bounds instead of splitting the windows itself.
"""

from __future__ import annotations

import torch

PACKED = "avjudge_flash_varlen"


def _varlen_kernel():
    try:
        from torch.nn.attention.varlen import varlen_attn
    except ImportError:  # PyTorch before 2.9
        return None
    return varlen_attn


def packed_attention(
    module,
    query,
    key,
    value,
    attention_mask,
    scaling=None,
    dropout=0.0,
    cu_seq_lens_q=None,
    cu_seq_lens_k=None,
    max_length_q=None,
    max_length_k=None,
    is_causal=False,
    **kwargs,
):
    """transformers' attention interface; ``query``, ``key``, ``value``: (1, heads, tokens, head_dim) with windows
    bounded by ``cu_seq_lens_q``. Returns ((1, tokens, heads, head_dim), None)."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if cu_seq_lens_q is None:  # an attention call without windows
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, is_causal=is_causal, **kwargs
        )
    kernel = _varlen_kernel()
    if kernel is not None and query.is_cuda and query.dtype in (torch.bfloat16, torch.float16) and not dropout:
        bounds_q = cu_seq_lens_q.to(torch.int32)
        bounds_k = bounds_q if cu_seq_lens_k is None else cu_seq_lens_k.to(torch.int32)
        q, k, v = (t[0].transpose(0, 1) for t in (query, key, value))  # (tokens, heads, head_dim)
        out = kernel(q, k, v, bounds_q, bounds_k, max_length_q, max_length_k or max_length_q, scale=scaling)
        return out.unsqueeze(0), None
    lengths = (cu_seq_lens_q[1:] - cu_seq_lens_q[:-1]).tolist()
    windows = zip(*(torch.split(t, lengths, dim=2) for t in (query, key, value)))
    outputs = [
        sdpa_attention_forward(module, q, k, v, None, dropout=dropout, scaling=scaling, is_causal=False)[0]
        for q, k, v in windows
    ]
    return torch.cat(outputs, dim=1), None


def register() -> str:
    from transformers import AttentionInterface

    AttentionInterface.register(PACKED, packed_attention)
    return PACKED


def pack_encoder_windows(model, sub_configs: tuple[str, ...]) -> None:
    """Let the encoders named by their sub-configs (e.g. ``vision_config``) attend through ``packed_attention``."""
    present = [name for name in sub_configs if getattr(model.config, name, None) is not None]
    if present:
        model.set_attn_implementation(dict.fromkeys(present, register()))
