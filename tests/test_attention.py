import numpy as np
import pytest
import torch

from avjudge.judges import Judge, JudgeSample
from avjudge.judges.attention import PACKED, packed_attention, register
from avjudge.world import MANIFEST

BOUNDS = [0, 3, 7, 12]


def windowed_reference(q, k, v, bounds, scale):
    """Softmax attention within each window, written out: (1, heads, tokens, dim) -> (1, tokens, heads, dim)."""
    out = torch.zeros_like(q)
    for a, b in zip(bounds[:-1], bounds[1:]):
        weights = torch.softmax(q[..., a:b, :].float() @ k[..., a:b, :].float().transpose(-1, -2) * scale, dim=-1)
        out[..., a:b, :] = (weights @ v[..., a:b, :].float()).to(q.dtype)
    return out.transpose(1, 2)


def _attend(device, dtype, requires_grad=False):
    torch.manual_seed(0)
    q, k, v = (
        torch.randn(1, 2, BOUNDS[-1], 16, device=device, dtype=dtype, requires_grad=requires_grad) for _ in range(3)
    )
    cu = torch.tensor(BOUNDS, device=device, dtype=torch.int32)
    lengths = np.diff(BOUNDS)
    out, _ = packed_attention(
        None,
        q,
        k,
        v,
        None,
        scaling=0.25,
        cu_seq_lens_q=cu,
        cu_seq_lens_k=cu,
        max_length_q=int(lengths.max()),
        max_length_k=int(lengths.max()),
    )
    return (q, k, v), out


def test_packed_attention_attends_within_each_window_only():
    (q, k, v), out = _attend("cpu", torch.float32)
    assert out.shape == (1, BOUNDS[-1], 2, 16)
    torch.testing.assert_close(out, windowed_reference(q, k, v, BOUNDS, 0.25))


@pytest.mark.gpu
def test_packed_attention_on_the_gpu_kernel_matches_the_reference_with_gradients():
    (q, k, v), out = _attend("cuda", torch.bfloat16, requires_grad=True)
    reference = windowed_reference(q, k, v, BOUNDS, 0.25)
    torch.testing.assert_close(out.float(), reference.float(), atol=2e-2, rtol=2e-2)
    grads = torch.autograd.grad(out.float().sum(), (q, k, v))
    expected = torch.autograd.grad(reference.float().sum(), (q, k, v))
    for got, want in zip(grads, expected):
        torch.testing.assert_close(got.float(), want.float(), atol=5e-2, rtol=5e-2)


def _samples(n=3):
    rng = np.random.default_rng(0)
    return [
        JudgeSample(
            frames=rng.integers(0, 256, (4, 120, 160, 3), dtype=np.uint8),
            fps=1.0,
            audio=(0.1 * rng.standard_normal(48000)).astype(np.float32),
        )
        for _ in range(n)
    ]


@pytest.mark.parametrize("family", ["qwen2_5_omni", "qwen3_omni"])
def test_omni_encoders_attend_through_packed_windows_with_the_same_scores(tiny_judges, family):
    from transformers import AttentionInterface

    packed = Judge.load("av", tiny_judges[family], batch_size=2)
    plain = Judge.load("av", tiny_judges[family], batch_size=2, attention="sdpa")
    model = packed.adapter.model
    assert model.config.vision_config._attn_implementation == PACKED
    assert model.config.audio_config._attn_implementation == PACKED
    assert model.config.text_config._attn_implementation == "sdpa"  # the language model keeps the default
    assert plain.adapter.model.config.vision_config._attn_implementation == "sdpa"
    windows = []

    def spy(module, query, *args, cu_seq_lens_q=None, **kwargs):
        windows.append(None if cu_seq_lens_q is None else len(cu_seq_lens_q) - 1)
        return packed_attention(module, query, *args, cu_seq_lens_q=cu_seq_lens_q, **kwargs)

    AttentionInterface.register(PACKED, spy)
    try:
        scores = [r.score for r in packed.score_samples(_samples())]
    finally:
        register()
    assert windows and all(n is not None and n >= 1 for n in windows)  # every encoder call came packed
    reference = [r.score for r in plain.score_samples(_samples())]
    np.testing.assert_allclose(scores, reference, atol=1e-6)


@pytest.mark.gpu
def test_packed_windows_on_the_gpu_score_as_transformers_does(tiny_judges):
    samples = _samples(4)
    scores = {
        attention: [
            r.score
            for r in Judge.load(
                "av", tiny_judges["qwen2_5_omni"], device="cuda", dtype="bfloat16", attention=attention
            ).score_samples(samples)
        ]
        for attention in ("auto", "sdpa")
    }
    np.testing.assert_allclose(scores["auto"], scores["sdpa"], atol=2e-2)


def test_an_attention_transformers_does_not_know_is_a_clean_cli_error(tiny_judges, small_world, tmp_path, capsys):
    from avjudge.cli import main

    out = tmp_path / "at.jsonl"
    assert (
        main(
            [
                "score",
                "--judge",
                f"at={tiny_judges['qwen2_audio']}",
                "--input",
                str(small_world / MANIFEST),
                "--out",
                str(out),
                "--attention",
                "no_such_attention",
            ]
        )
        == 2
    )
    assert "attention 'no_such_attention' cannot be used" in capsys.readouterr().err
    assert not out.exists()
