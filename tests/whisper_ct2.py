"""Test support: turn a CTranslate2 Whisper model (the bundled tiny.en) into an openai-whisper checkpoint,
so the openai_whisper backend is tested with real weights that exist offline.

CTranslate2's model.bin (binary version 6): a header, then named variables (shape, dtype id, raw bytes), then
aliases. Self-attention projections are stored fused as [q; k; v] with a zero key bias; cross-attention as q
and a fused [k; v].
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

_CT2_DTYPES = (np.float32, np.int8, np.int16, np.int32, np.float16)  # ids 0..4; bfloat16 (5) is not read


def read_ct2(path: Path) -> dict[str, np.ndarray]:
    data = Path(path).read_bytes()
    offset = 0

    def unpack(fmt):
        nonlocal offset
        (value,) = struct.unpack_from(fmt, data, offset)
        offset += struct.calcsize(fmt)
        return value

    def string():
        nonlocal offset
        size = unpack("H")  # counts the trailing NUL
        text = data[offset : offset + size - 1].decode()
        offset += size
        return text

    version = unpack("I")
    if version != 6:
        raise ValueError(f"{path}: CTranslate2 binary version {version}, this reader knows 6")
    string(), unpack("I")  # spec name, revision
    variables = {}
    for _ in range(unpack("I")):
        name = string()
        shape = [unpack("I") for _ in range(unpack("B"))]
        dtype, size = _CT2_DTYPES[unpack("B")], unpack("I")
        variables[name] = np.frombuffer(data, dtype, size // np.dtype(dtype).itemsize, offset).reshape(shape)
        offset += size
    for _ in range(unpack("I")):
        alias, target = string(), string()
        variables[alias] = variables[target]
    return variables


def _linear(out: dict, name: str, weight: np.ndarray, bias: np.ndarray | None):
    out[f"{name}.weight"] = weight
    if bias is not None:
        out[f"{name}.bias"] = bias


def _attention(out: dict, ours: str, ct2: dict, theirs: str, cross: bool):
    if cross:
        q_w, q_b = ct2[f"{theirs}/linear_0/weight"], ct2[f"{theirs}/linear_0/bias"]
        kv_w, kv_b = ct2[f"{theirs}/linear_1/weight"], ct2[f"{theirs}/linear_1/bias"]
        k_w, v_w, v_b = *np.split(kv_w, 2), np.split(kv_b, 2)[1]
        proj = "linear_2"
    else:
        (q_w, k_w, v_w), (q_b, _, v_b) = (
            np.split(ct2[f"{theirs}/linear_0/weight"], 3),
            np.split(ct2[f"{theirs}/linear_0/bias"], 3),
        )
        proj = "linear_1"
    _linear(out, f"{ours}.query", q_w, q_b)
    _linear(out, f"{ours}.key", k_w, None)  # Whisper's key projection has no bias
    _linear(out, f"{ours}.value", v_w, v_b)
    _linear(out, f"{ours}.out", ct2[f"{theirs}/{proj}/weight"], ct2[f"{theirs}/{proj}/bias"])
    _norm(out, f"{ours}_ln", ct2, f"{theirs}/layer_norm")


def _norm(out: dict, ours: str, ct2: dict, theirs: str):
    _linear(out, ours, ct2[f"{theirs}/gamma"], ct2[f"{theirs}/beta"])


def _block(out: dict, ours: str, ct2: dict, theirs: str, cross: bool):
    _attention(out, f"{ours}.attn", ct2, f"{theirs}/self_attention", cross=False)
    if cross:
        _attention(out, f"{ours}.cross_attn", ct2, f"{theirs}/attention", cross=True)
    for index, ct2_index in ((0, 0), (2, 1)):
        _linear(
            out,
            f"{ours}.mlp.{index}",
            ct2[f"{theirs}/ffn/linear_{ct2_index}/weight"],
            ct2[f"{theirs}/ffn/linear_{ct2_index}/bias"],
        )
    _norm(out, f"{ours}.mlp_ln", ct2, f"{theirs}/ffn/layer_norm")


def ct2_to_openai_whisper(model_dir: Path, out_file: Path) -> Path:
    """Write {"dims", "model_state_dict"}, the file format whisper.load_model reads."""
    import torch

    ct2 = read_ct2(Path(model_dir) / "model.bin")
    layers = {
        side: sum(name.startswith(f"{side}/layer_") and name.endswith("ffn/linear_0/weight") for name in ct2)
        for side in ("encoder", "decoder")
    }
    state = {
        "encoder.positional_embedding": ct2["encoder/position_encodings/encodings"],
        "decoder.positional_embedding": ct2["decoder/position_encodings/encodings"],
        "decoder.token_embedding.weight": ct2["decoder/embeddings/weight"],
    }
    for conv in ("conv1", "conv2"):
        _linear(state, f"encoder.{conv}", ct2[f"encoder/{conv}/weight"], ct2[f"encoder/{conv}/bias"])
    _norm(state, "encoder.ln_post", ct2, "encoder/layer_norm")
    _norm(state, "decoder.ln", ct2, "decoder/layer_norm")
    for side, cross in (("encoder", False), ("decoder", True)):
        for i in range(layers[side]):
            _block(state, f"{side}.blocks.{i}", ct2, f"{side}/layer_{i}", cross)
    state_width = ct2["encoder/conv1/weight"].shape[0]
    dims = {
        "n_mels": ct2["encoder/conv1/weight"].shape[1],
        "n_audio_ctx": ct2["encoder/position_encodings/encodings"].shape[0],
        "n_audio_state": state_width,
        "n_audio_head": int(ct2["encoder/num_heads"]),
        "n_audio_layer": layers["encoder"],
        "n_vocab": ct2["decoder/embeddings/weight"].shape[0],
        "n_text_ctx": ct2["decoder/position_encodings/encodings"].shape[0],
        "n_text_state": state_width,
        "n_text_head": int(ct2["decoder/num_heads"]),
        "n_text_layer": layers["decoder"],
    }
    torch.save({"dims": dims, "model_state_dict": {k: torch.from_numpy(v.copy()) for k, v in state.items()}}, out_file)
    return out_file
