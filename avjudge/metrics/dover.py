"""DOVER++ video quality: technical and aesthetic scores and their fused overall score.

DOVER (Wu et al., ICCV 2023) scores two views of a clip, sampled from the file's own frames:
- technical: 3 segments of 32 frames (every 2nd frame), each frame cut into a 7x7 grid of 32x32
  fragments kept at native resolution (one random offset per cell and segment) and spliced into
  224x224, scored by a fragment-aware Video Swin-T;
- aesthetic: 32 frames, one per segment, resized to 224x224, scored by a 3D ConvNeXt-T.
Each head scores every position of its feature map; a view's score is the mean. The official
fusion: overall = sigmoid(0.6104 (t - 0.1107) / 0.07355 + 0.3896 (a - 0.08285) / 0.03774), in [0, 1].
DOVER++ is the same network trained on DIVIDE-MaxWell; both weight files load here.

Differences from the official script, on purpose: offsets come from a generator seeded per clip
(the official code draws them from the global RNG, so two runs differ), and frames come from the
clip avjudge decoded once. Kept as the official code does them: a clip smaller than 224 pixels is
upsampled with bilinear interpolation and truncated to uint8, and its fragment grid is still
laid out on the original size; the aesthetic resize is bilinear without antialiasing (torchvision
0.14 on tensors, the version DOVER was trained with).
"""

from __future__ import annotations

import numpy as np

from .base import NATIVE_FPS, Metric, MetricError, load_strict, load_torch_file, register
from .checkpoints import resolve

GRID, FRAGMENT, CLIP_LEN, INTERVAL, TECHNICAL_CLIPS = 7, 32, 32, 2, 3
VIEW = GRID * FRAGMENT  # 224
MEAN = (123.675, 116.28, 103.53)
STD = (58.395, 57.12, 57.375)
# (mean, std, weight) of each view's raw score in the official score-level fusion
FUSION = {"technical": (0.1107, 0.07355, 0.6104), "aesthetic": (0.08285, 0.03774, 0.3896)}


def segment_frames(n: int, segments: int, length: int, interval: int, rng: np.random.Generator) -> np.ndarray:
    """Frame indices: ``segments`` equal spans of an ``n``-frame clip, ``length`` frames every
    ``interval`` from a random start inside each span (start 0 when the span is too short);
    indices past the end wrap around, so short clips repeat."""
    span = n // segments
    starts = span * np.arange(segments)
    room = span - length * interval
    offsets = rng.integers(0, room, segments) if room > 0 else np.zeros(segments, dtype=np.int64)
    return ((np.arange(length) * interval)[None, :] + (starts + offsets)[:, None]).reshape(-1) % n


def _cell_offsets(cell: int, segments: int, rng: np.random.Generator) -> np.ndarray:
    """(7, 7, segments) offsets of each fragment inside its grid cell (0 where the cell is too small)."""
    shape = (GRID, GRID, segments)
    return rng.integers(0, cell - FRAGMENT, shape) if cell > FRAGMENT else np.zeros(shape, dtype=np.int64)


def fragment_view(frames, rng: np.random.Generator):
    """(3, T, 224, 224) float tensor of 0-255 values: 7x7 fragments of 32x32 per 32-frame segment."""
    import torch

    video = torch.from_numpy(np.ascontiguousarray(frames)).permute(3, 0, 1, 2)  # C, T, H, W uint8
    t, height, width = video.shape[1:]
    if t % CLIP_LEN:
        raise ValueError(f"{t} frames is not a whole number of {CLIP_LEN}-frame segments")
    ratio = min(height / VIEW, width / VIEW)
    if ratio < 1:
        video = (torch.nn.functional.interpolate(video / 255.0, scale_factor=1 / ratio, mode="bilinear") * 255.0).to(
            torch.uint8
        )
    # the official grid and offsets come from the size before upsampling
    rows = [min(height // GRID * i, height - FRAGMENT) for i in range(GRID)]
    cols = [min(width // GRID * j, width - FRAGMENT) for j in range(GRID)]
    cell_h, cell_w = height // GRID, width // GRID
    segments = t // CLIP_LEN
    dy, dx = (_cell_offsets(cell, segments, rng) for cell in (cell_h, cell_w))
    out = torch.zeros((3, t, VIEW, VIEW))
    for i, y0 in enumerate(rows):
        for j, x0 in enumerate(cols):
            for s in range(segments):
                y, x = y0 + int(dy[i, j, s]), x0 + int(dx[i, j, s])
                out[
                    :,
                    s * CLIP_LEN : (s + 1) * CLIP_LEN,
                    i * FRAGMENT : (i + 1) * FRAGMENT,
                    j * FRAGMENT : (j + 1) * FRAGMENT,
                ] = video[:, s * CLIP_LEN : (s + 1) * CLIP_LEN, y : y + FRAGMENT, x : x + FRAGMENT]
    return out


def resized_view(frames, antialias: bool = False):
    """(3, T, 224, 224) float tensor of 0-255 values: whole frames resized (bilinear), rounded to uint8."""
    import torch

    video = torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2).float()  # T, C, H, W
    video = torch.nn.functional.interpolate(
        video, size=(VIEW, VIEW), mode="bilinear", align_corners=False, antialias=antialias
    )
    return video.round().clamp(0, 255).permute(1, 0, 2, 3)


def normalise(view, clips: int):
    """(clips, 3, T / clips, 224, 224): ImageNet mean / std on 0-255 values, segments as a batch."""
    import torch

    mean, std = torch.tensor(MEAN).view(3, 1, 1, 1), torch.tensor(STD).view(3, 1, 1, 1)
    view = (view - mean) / std
    return view.reshape(3, clips, -1, *view.shape[2:]).transpose(0, 1)


def fuse(technical: float, aesthetic: float) -> float:
    x = sum(
        weight * (score - mean) / std for score, (mean, std, weight) in zip((technical, aesthetic), FUSION.values())
    )
    return float(1.0 / (1.0 + np.exp(-x)))


def build_dover(swin=None, convnext=None, head_hidden: int = 64):
    """The DOVER network with the official module names (``technical_backbone``, ``aesthetic_backbone``,
    ``technical_head``, ``aesthetic_head``); sizes default to the released models."""
    from torch import nn

    from .video_backbones import ConvNeXt3D, ConvNeXtSize, FragmentSwin3D, QualityHead, SwinSize

    swin, convnext = swin or SwinSize(), convnext or ConvNeXtSize()

    class Dover(nn.Module):
        def __init__(self):
            super().__init__()
            self.technical_backbone = FragmentSwin3D(swin)
            self.aesthetic_backbone = ConvNeXt3D(convnext)
            self.technical_head = QualityHead(swin.embed_dim * 2 ** (len(swin.depths) - 1), head_hidden)
            self.aesthetic_head = QualityHead(convnext.dims[-1], head_hidden)

        def forward(self, technical, aesthetic):
            """Raw (technical, aesthetic) scores: each head's map averaged over positions and segments."""
            return (
                self.technical_head(self.technical_backbone(technical)).mean(),
                self.aesthetic_head(self.aesthetic_backbone(aesthetic)).mean(),
            )

    return Dover()


def dover_scores(model, frames: np.ndarray, seed: int = 0, antialias: bool = False) -> dict[str, float]:
    """DOVER's three scores for (T, H, W, 3) uint8 frames at the file's own rate."""
    import torch

    n = len(frames)
    rng = np.random.default_rng(seed)
    technical = frames[segment_frames(n, TECHNICAL_CLIPS, CLIP_LEN, INTERVAL, rng)]
    aesthetic = frames[segment_frames(n, CLIP_LEN, 1, INTERVAL, rng)]
    with torch.inference_mode():
        t, a = model(
            normalise(fragment_view(technical, rng), TECHNICAL_CLIPS), normalise(resized_view(aesthetic, antialias), 1)
        )
    t, a = float(t), float(a)
    return {"dover_technical": t, "dover_aesthetic": a, "dover_overall": fuse(t, a)}


@register
class DoverPlusPlus(Metric):
    name = "dover"
    aspect = "video"
    scales = {"dover_overall": (0.0, 1.0)}  # the fused score is a sigmoid
    description = (
        "DOVER++ video quality: technical (fragments, Swin-T) and aesthetic (ConvNeXt-T) views, fused overall in [0, 1]"
    )
    video_fps = NATIVE_FPS
    checkpoints = ("dover",)

    def __init__(self, root=None, seed: int = 0, antialias: bool = False):
        try:
            import torch  # noqa: F401
        except ImportError as err:
            raise MetricError("dover needs torch: pip install 'avjudge[metrics]'") from err
        (path,) = resolve("dover", root).values()
        self.model = load_strict(build_dover(), load_torch_file(path), path, "a DOVER / DOVER++ state dict")
        self.seed, self.antialias = seed, antialias

    def compute(self, clip, **ctx):
        frames = self.frames_of(clip)
        if len(frames) == 0:
            raise MetricError(f"{clip.source or 'clip'} has no frames for {self.name}")
        return dover_scores(self.model, frames, self.seed, self.antialias)
