"""LAION aesthetics (improved aesthetic predictor): CLIP ViT-L/14 image embeddings, L2-normalised, scored
by the predictor's MLP head (about 1-10, higher is more pleasing), on frames at 1 fps, averaged.

CLIP comes from a local transformers directory (``CLIPModel`` + its image processor), the head from
``sac+logos+ava1-l14-linearMSE.pth`` loaded with ``weights_only=True`` and ``strict=True``.
"""

from __future__ import annotations

import numpy as np

from .base import Metric, MetricError, load_strict, load_torch_file, register
from .checkpoints import resolve

HEAD_LAYERS = (1024, 128, 64, 16)  # hidden sizes of the head; dropout between the first three has no weights
HEAD_DROPOUT = (0.2, 0.2, 0.1)


def build_head(embedding_dim: int):
    """The predictor's MLP: Linear layers with dropout after the first three, no activations (its state
    dict keys are ``layers.{0,2,4,6,7}``)."""
    from torch import nn

    layers, width = [], embedding_dim
    for i, hidden in enumerate(HEAD_LAYERS):
        layers.append(nn.Linear(width, hidden))
        if i < len(HEAD_DROPOUT):
            layers.append(nn.Dropout(HEAD_DROPOUT[i]))
        width = hidden
    layers.append(nn.Linear(width, 1))

    class AestheticHead(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.Sequential(*layers)

        def forward(self, x):
            return self.layers(x)

    return AestheticHead()


@register
class LaionAesthetic(Metric):
    name = "laion_aesthetic"
    aspect = "video"
    scales = {"laion_aesthetic": (1.0, 10.0), "laion_aesthetic_min": (1.0, 10.0)}
    description = "LAION aesthetic predictor on CLIP ViT-L/14 embeddings of frames at 1 fps (mean; ~1-10)"
    video_fps = 1.0
    checkpoints = ("clip_vit_l14", "laion_aesthetic")

    def __init__(self, root=None, batch_size: int = 16):
        try:
            import torch  # noqa: F401
            from transformers import CLIPImageProcessorPil, CLIPModel
        except ImportError as err:
            raise MetricError(
                "laion_aesthetic needs torch and transformers: pip install 'avjudge[metrics,judges]'"
            ) from err
        clip_dir = resolve("clip_vit_l14", root)["config.json"].parent
        (head_path,) = resolve("laion_aesthetic", root).values()
        # the PIL pipeline (bicubic resize, centre crop) is the one CLIP and the head were trained with
        self.processor = CLIPImageProcessorPil.from_pretrained(clip_dir)
        self.clip = CLIPModel.from_pretrained(clip_dir).eval()
        dim = self.clip.config.projection_dim
        self.head = load_strict(
            build_head(dim), load_torch_file(head_path), head_path, f"an aesthetic head for {dim}-d CLIP embeddings"
        )
        self.batch_size = batch_size

    def frame_scores(self, frames: np.ndarray) -> np.ndarray:
        """(T,) aesthetic score of each RGB frame."""
        import torch

        scores = []
        with torch.inference_mode():
            for start in range(0, len(frames), self.batch_size):
                pixels = self.processor(images=list(frames[start : start + self.batch_size]), return_tensors="pt")
                embeds = self.clip.get_image_features(pixel_values=pixels["pixel_values"]).pooler_output
                embeds = embeds / embeds.norm(dim=-1, keepdim=True)
                scores.append(self.head(embeds)[:, 0].float().numpy())
        return np.concatenate(scores)

    def compute(self, clip, **ctx):
        frames = self.frames_of(clip)
        if len(frames) == 0:
            raise MetricError(f"{clip.source or 'clip'} has no frames for {self.name}")
        scores = self.frame_scores(frames)
        return {"laion_aesthetic": float(scores.mean()), "laion_aesthetic_min": float(scores.min())}
