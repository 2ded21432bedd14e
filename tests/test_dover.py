"""DOVER++: the frame and fragment sampling, the fragment-gated window attention, the official module
names and shapes, the fusion constants, and the metric end to end with a tiny random network."""

import json

import numpy as np
import pytest

from avjudge.metrics import MetricError, dover, get_metric
from avjudge.metrics.checkpoints import pin
from avjudge.metrics.dover import build_dover, fragment_view, fuse, normalise, resized_view, segment_frames
from avjudge.scoring.jobs import run_metrics

torch = pytest.importorskip("torch")
vb = pytest.importorskip("avjudge.metrics.video_backbones")


def test_segments_start_at_equal_spans_and_wrap_past_the_end():
    rng = np.random.default_rng(0)
    short = segment_frames(100, 3, 32, 2, rng)  # spans of 33 frames: too short to move, so starts 0, 33, 66
    assert list(short[:3]) == [0, 2, 4] and list(short[32:34]) == [33, 35]
    assert list(short[64:67]) == [66, 68, 70] and list(short[80:83]) == [98, 0, 2]  # 100 wraps to 0
    long = segment_frames(600, 3, 32, 2, rng).reshape(3, 32)  # spans of 200: a start within 0..135 of each
    for s, segment in enumerate(long):
        assert 200 * s <= segment[0] < 200 * s + 136 and set(np.diff(segment)) == {2}
    assert list(segment_frames(100, 32, 1, 2, rng)) == list(range(0, 96, 3))  # aesthetic: spans of 3, no room


def coordinate_video(t: int, h: int, w: int) -> np.ndarray:
    """Pixel (y, x) of frame k holds (y, x, k): where every fragment came from can be read off it."""
    y, x = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    frames = np.stack([np.stack([y, x, np.full_like(y, k)], -1) for k in range(t)])
    return frames.astype(np.uint8)


def test_fragments_are_native_32px_cubes_from_each_grid_cell():
    video = coordinate_video(64, 252, 245)  # cells of 36 x 35 pixels: room for offsets 0..3 and 0..2
    view = fragment_view(video, np.random.default_rng(1)).numpy()
    assert view.shape == (3, 64, 224, 224)
    for s in range(2):
        for i in range(7):
            for j in range(7):
                cube = view[:, 32 * s : 32 * (s + 1), 32 * i : 32 * (i + 1), 32 * j : 32 * (j + 1)]
                y0, x0 = cube[0, 0, 0, 0], cube[1, 0, 0, 0]
                assert 36 * i <= y0 <= 36 * i + 3 and 35 * j <= x0 <= 35 * j + 2
                assert (cube[0] == y0 + np.arange(32)[None, :, None]).all()  # whole rows, unscaled
                assert (cube[1] == x0 + np.arange(32)[None, None, :]).all()
                assert (cube[2] == 32 * s + np.arange(32)[:, None, None]).all()  # the segment's frames


def test_small_clips_are_upsampled_but_keep_the_official_grid_of_the_original_size():
    video = coordinate_video(32, 112, 112)  # half of 224: upsampled x2; cells of 16 px on the original
    view = fragment_view(video, np.random.default_rng(0)).numpy()
    # fragment rows start at min(16 i, 80) of the *upsampled* picture, i.e. original rows 0, 8, ..., 40
    starts = [view[0, 0, 32 * i, 0] for i in range(7)]
    assert starts == pytest.approx([0, 7.5, 15.5, 23.5, 31.5, 39.5, 39.5], abs=0.6)


def test_resized_view_and_normalisation():
    frames = np.full((32, 90, 160, 3), (123, 116, 103), np.uint8)
    view = resized_view(frames)
    assert view.shape == (3, 32, 224, 224) and (view[:, 0] == torch.tensor([123.0, 116, 103])[:, None, None]).all()
    batch = normalise(torch.arange(2 * 3 * 4.0).reshape(3, 8, 1, 1).expand(3, 8, 2, 2), clips=2)
    assert batch.shape == (2, 3, 4, 2, 2)
    assert batch[1, 0, 0, 0, 0] == pytest.approx((4 - 123.675) / 58.395)  # clip 1 holds frames 4..7


def test_fusion_uses_the_official_constants():
    assert fuse(0.1107, 0.08285) == pytest.approx(0.5)
    assert fuse(0.1107 + 0.07355, 0.08285) == pytest.approx(1 / (1 + np.exp(-0.6104)))
    assert fuse(0.1107, 0.08285 - 0.03774) == pytest.approx(1 / (1 + np.exp(0.3896)))


def test_fragment_distance_and_shift_mask_by_hand():
    size, window, shift = (1, 4, 4), (1, 2, 2), (0, 1, 1)
    # unshifted, every 2x2 window is one of the 2x2 fragments
    assert (vb.fragment_distance(size, window, (0, 0, 0)) == 0).all()
    distance = vb.fragment_distance(size, window, shift)
    # shifted by one, the first window holds rows 1-2 and columns 1-2: fragment rows 0,1 and columns 0,1
    assert distance[0].tolist() == [[0, 1, 1, 2], [1, 0, 2, 1], [1, 2, 0, 1], [2, 1, 1, 0]]
    mask = vb.shift_mask(size, window, shift)
    assert (mask[0] == 0).all()  # a window away from the wrapped border needs no mask
    assert (mask[3] == -100).sum() == 12  # the corner window joins four wrapped regions: only self-pairs stay
    assert vb.shift_mask(size, window, (0, 0, 0)) is None
    index = vb.relative_position_index((1, 2, 2))
    # pair (i, j) -> (dh, dw) = (h_i - h_j + 1, w_i - w_j + 1) -> 3 dh + dw in a table of (1)(3)(3) entries
    assert [index[0, 3], index[3, 0], index[1, 2], index[2, 1]] == [0, 8, 2, 6]


def test_fragment_gate_mixes_the_two_bias_tables():
    """q = k = 0 and v = identity: each output is the softmax of the biases alone over the window's inputs.
    Same fragment (distance 0) -> the fragment table; distance d -> d * relative - (d - 1) * fragment."""
    attn = vb.WindowAttention3D(dim=2, window=(1, 1, 2), heads=1, fragment_bias=True)
    with torch.no_grad():
        attn.qkv.weight.zero_()
        attn.qkv.bias.zero_()
        attn.qkv.weight[4:6] = torch.eye(2)
        attn.proj.weight.copy_(torch.eye(2))
        attn.proj.bias.zero_()
        attn.relative_position_bias_table[:, 0] = torch.tensor([0.3, 0.0, -0.4])  # index: (dx + 1)
        attn.fragment_position_bias_table[:, 0] = torch.tensor([1.0, 0.0, 2.0])
    x = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    for d, (b01, b10) in {0: (1.0, 2.0), 1: (0.3, -0.4), 2: (2 * 0.3 - 1.0, 2 * -0.4 - 2.0)}.items():
        distance = torch.tensor([[[0, d], [d, 0]]])
        out = attn(x, None, distance)[0].detach()
        w0 = torch.softmax(torch.tensor([0.0, b01]), 0)  # token 0 attends to itself (bias 0) and token 1
        w1 = torch.softmax(torch.tensor([b10, 0.0]), 0)
        assert torch.allclose(out, torch.stack([w0, w1]), atol=1e-6), d


def test_one_window_over_the_whole_map_is_plain_self_attention():
    torch.manual_seed(0)
    block = vb.SwinBlock3D(dim=8, heads=2, window=(8, 7, 7), fragment_bias=False).eval()
    x = torch.randn(1, 2, 3, 3, 8)
    out = block(x, (2, 3, 3), (0, 0, 0), None)
    tokens = block.norm1(x).reshape(1, 18, 8)
    q, k, v = block.attn.qkv(tokens).reshape(1, 18, 3, 2, 4).permute(2, 0, 3, 1, 4)
    mixed = torch.nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(1, 18, 8)
    expected = x + block.attn.proj(mixed).reshape(1, 2, 3, 3, 8)
    expected = expected + block.mlp(block.norm2(expected))
    assert torch.allclose(out, expected, atol=1e-5)


def test_shifted_windows_mix_only_tokens_of_one_region():
    """On a 4x4 map with 2x2 windows shifted by one, the token at (1, 1) shares its window with (1..2, 1..2);
    the token at (0, 0) lands in the wrapped corner window with three other regions and sees only itself."""
    torch.manual_seed(0)
    block = vb.SwinBlock3D(dim=4, heads=1, window=(1, 2, 2), fragment_bias=True).eval()
    size, window, shift = (1, 4, 4), (1, 2, 2), (0, 1, 1)
    mask = vb.shift_mask(size, window, shift)
    x = torch.randn(1, *size, 4)
    base = block(x, window, shift, mask)
    for (r, c), reached in {(1, 1): {(1, 1), (1, 2), (2, 1), (2, 2)}, (0, 0): {(0, 0)}}.items():
        nudged = x.clone()
        nudged[0, 0, r, c, 0] += 1.0  # one channel: a shift of all channels would vanish in the LayerNorm
        changed = (block(nudged, window, shift, mask) - base).abs().amax(-1)[0, 0] > 1e-6
        assert {tuple(p) for p in changed.nonzero().tolist()} == reached


def test_full_size_network_has_the_official_names_and_shapes():
    """Shapes read off the official DOVER code (swin_tiny_grpb, convnext_3d_tiny, VQAHead 768 -> 64 -> 1)."""
    state = build_dover().state_dict()
    expected = {
        "technical_backbone.patch_embed.proj.weight": (96, 3, 2, 4, 4),
        "technical_backbone.patch_embed.norm.weight": (96,),
        "technical_backbone.layers.0.blocks.0.attn.relative_position_bias_table": (15 * 13 * 13, 3),
        "technical_backbone.layers.2.blocks.5.attn.fragment_position_bias_table": (2535, 12),
        "technical_backbone.layers.1.blocks.1.attn.relative_position_index": (392, 392),
        "technical_backbone.layers.0.blocks.1.mlp.fc1.weight": (384, 96),
        "technical_backbone.layers.0.downsample.reduction.weight": (192, 384),
        "technical_backbone.layers.2.downsample.norm.weight": (1536,),
        "technical_backbone.layers.3.blocks.1.attn.qkv.bias": (2304,),
        "technical_backbone.norm.weight": (768,),
        "technical_head.fc_hid.weight": (64, 768, 1, 1, 1),
        "technical_head.fc_last.weight": (1, 64, 1, 1, 1),
        "aesthetic_backbone.downsample_layers.0.0.weight": (96, 3, 2, 4, 4),
        "aesthetic_backbone.downsample_layers.0.1.weight": (96,),
        "aesthetic_backbone.downsample_layers.3.1.weight": (768, 384, 1, 2, 2),
        "aesthetic_backbone.stages.0.0.dwconv.weight": (96, 1, 1, 7, 7),
        "aesthetic_backbone.stages.0.1.dwconv.weight": (96, 1, 3, 7, 7),
        "aesthetic_backbone.stages.2.8.gamma": (384,),
        "aesthetic_backbone.norm.weight": (768,),
        "aesthetic_head.fc_last.bias": (1,),
    }
    assert {k: tuple(state[k].shape) for k in expected} == expected
    assert not any("layers.3" in k and "fragment_position" in k for k in state)  # no fragment bias in stage 4
    assert not any(k.startswith("aesthetic_backbone.head") for k in state)  # the classifier is removed


TINY_SWIN = vb.SwinSize(embed_dim=8, depths=(2, 2), heads=(1, 2), fragment_bias=(True, False))
TINY_CONVNEXT = vb.ConvNeXtSize(dims=(8, 16), depths=(2, 1))


@pytest.fixture
def tiny_dover(tmp_path, monkeypatch):
    monkeypatch.setattr(dover, "build_dover", lambda: build_dover(TINY_SWIN, TINY_CONVNEXT, head_hidden=4))
    torch.manual_seed(0)
    root = tmp_path / "ckpt"
    (root / "dover").mkdir(parents=True)
    torch.save(dover.build_dover().state_dict(), root / "dover" / "DOVER_plus_plus.pth")
    pin("dover", root)
    monkeypatch.setenv("AVJUDGE_CHECKPOINTS", str(root))
    return root


def test_dover_metric_end_to_end_on_native_frames(tiny_dover, small_world, tmp_path):
    clips = sorted((small_world / "clips").iterdir())[:2]
    run_metrics(["dover"], small_world / "world.jsonl", tmp_path / "dover.jsonl", progress=False)
    rows = [json.loads(line) for line in (tmp_path / "dover.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and not any(r["errors"] for r in rows)
    for row in rows:
        assert row["dover_overall"] == pytest.approx(fuse(row["dover_technical"], row["dover_aesthetic"]))
    from avjudge.media import decode

    clip = decode(clips[0])  # the file's own 25 fps frames, as the runner decoded them
    metric = get_metric("dover")
    first = metric.compute(clip)
    assert first == metric.compute(clip)  # offsets come from a seeded generator: the same clip, the same score
    assert get_metric("dover", seed=1).compute(clip)["dover_technical"] != first["dover_technical"]
    with pytest.raises(MetricError, match="no video"):
        metric.compute(decode(clips[0], video=False))


def test_dover_refuses_a_network_of_another_shape(tiny_dover, monkeypatch):
    monkeypatch.setattr(
        dover,
        "build_dover",
        lambda: build_dover(TINY_SWIN, vb.ConvNeXtSize(dims=(8, 32), depths=(2, 1)), head_hidden=4),
    )
    with pytest.raises(MetricError, match=r"(?s)not a DOVER / DOVER\+\+ state dict.*size mismatch"):
        get_metric("dover")
