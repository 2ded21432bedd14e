"""Synchformer (Iashin et al., ICASSP 2024): the audio-visual offset classifier behind DeSync.

Written from the paper and the MIT-licensed code av-benchmark ships (hkchengrex/av-benchmark @ 050a5cdb,
``av_bench/synchformer``), with the module names and shapes of its state dict, so MMAudio's released
``synchformer_state_dict.pth`` loads strictly. Three parts:

- video: MotionFormer (a ViT-B/16 with divided space-time attention) embeds each 16-frame segment of 224x224
  frames as 8 time tokens (2-frame tubelets); a transformer layer with a CLS token pools each tubelet's 14x14
  patches;
- audio: the Audio Spectrogram Transformer (AST) embeds each 128x66 log-mel segment; a
  transformer layer pools its 12 frequency patches, leaving 6 time tokens;
- sync: a 3-layer transformer over ``[OFF, video tokens, MOD, audio tokens]`` of 14 segments whose OFF token
  classifies the offset into 21 classes from -2 s to +2 s.

The sizes are arguments so tests can build a narrow one; the geometry (224 px, 16 frames, 66 mel frames,
14 segments) is fixed by the released weights' position embeddings.
"""

from __future__ import annotations

import torch
from torch import nn

FRAME_SIZE = 224
PATCH = 16
TUBELET = 2  # frames per video token
SEGMENT_FRAMES = 16
MEL_BINS = 128
MEL_FRAMES = 66
WINDOW_SEGMENTS = 14  # the sync transformer's input: 14 segments of each stream (4.8 s)
VIDEO_TOKENS = SEGMENT_FRAMES // TUBELET  # time tokens per video segment
AST_STRIDE = 10  # AST's patches overlap: 16x16 every 10 bins and 10 frames
AST_FREQ_PATCHES = (MEL_BINS - PATCH) // AST_STRIDE + 1
AUDIO_TOKENS = (MEL_FRAMES - PATCH) // AST_STRIDE + 1  # time patches per audio segment
CLASSES = 21


class ClsPool(nn.TransformerEncoderLayer):
    """A pre-norm transformer layer over ``[CLS, tokens]`` that returns the CLS token: the pooling Synchformer
    uses over a tubelet's patches and over a spectrogram column's frequency patches."""

    def __init__(self, width: int, heads: int):
        super().__init__(
            width,
            heads,
            dim_feedforward=4 * width,
            dropout=0.0,
            activation=nn.GELU(),
            layer_norm_eps=1e-6,
            batch_first=True,
            norm_first=True,
        )
        self.cls_token = nn.Parameter(torch.zeros(1, 1, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(N, L, D) -> (N, D)"""
        x = torch.cat([self.cls_token.expand(len(x), -1, -1), x], dim=1)
        return super().forward(x)[:, 0]


class DividedAttention(nn.Module):
    """Self-attention of a video's patch tokens within groups (the same patch across time, or one time step's
    patches), each group also seeing the CLS token; the CLS token attends to every token."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    @staticmethod
    def _attend(q, k, v):
        return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v

    def forward(self, x: torch.Tensor, frames: int, over_time: bool) -> torch.Tensor:
        n, length, width = x.shape
        patches = (length - 1) // frames
        head = width // self.heads
        q, k, v = self.qkv(x).view(n, length, 3, self.heads, head).permute(2, 0, 3, 1, 4)  # 3 x (n, h, L, d)
        q = q * head**-0.5
        cls_out = self._attend(q[:, :, :1], k, v)  # (n, h, 1, d)

        def grouped(t):  # (n, h, frames * patches, d) -> (n, h, groups, group length, d)
            t = t.reshape(n, self.heads, frames, patches, head)
            return t.transpose(2, 3) if over_time else t

        groups = patches if over_time else frames
        q_, k_, v_ = (grouped(t[:, :, 1:]) for t in (q, k, v))
        k_ = torch.cat([k[:, :, None, :1].expand(-1, -1, groups, -1, -1), k_], dim=3)
        v_ = torch.cat([v[:, :, None, :1].expand(-1, -1, groups, -1, -1), v_], dim=3)
        out = self._attend(q_, k_, v_)
        out = (out.transpose(2, 3) if over_time else out).reshape(n, self.heads, frames * patches, head)
        out = torch.cat([cls_out, out], dim=2).transpose(1, 2).reshape(n, length, width)
        return self.proj(out)


class Mlp(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class DividedBlock(nn.Module):
    """MotionFormer's divided space-time block: attention over time, then over space, then the MLP."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(width, eps=1e-6) for _ in range(3))
        self.attn, self.timeattn = DividedAttention(width, heads), DividedAttention(width, heads)
        self.mlp = Mlp(width)

    def forward(self, x: torch.Tensor, frames: int) -> torch.Tensor:
        x = x + self.timeattn(self.norm3(x), frames, over_time=True)
        x = x + self.attn(self.norm1(x), frames, over_time=False)
        return x + self.mlp(self.norm2(x))


class PatchEmbed(nn.Module):
    def __init__(self, conv: nn.Module):
        super().__init__()
        self.proj = conv


class VideoEncoder(nn.Module):
    """MotionFormer's feature extractor: (N, 3, 16, 224, 224) segments -> (N, 8, D) time tokens."""

    def __init__(self, width: int, heads: int, depth: int):
        super().__init__()
        grid = FRAME_SIZE // PATCH
        # a 2-D patch embedding the released weights carry but MotionFormer never applies (its tubelets are 3-D)
        self.patch_embed = PatchEmbed(nn.Conv2d(3, width, PATCH, PATCH))
        self.patch_embed_3d = PatchEmbed(nn.Conv3d(3, width, (TUBELET, PATCH, PATCH), (TUBELET, PATCH, PATCH)))
        self.cls_token = nn.Parameter(torch.zeros(1, 1, width))
        self.pos_embed = nn.Parameter(torch.zeros(1, grid * grid + 1, width))
        self.temp_embed = nn.Parameter(torch.zeros(1, VIDEO_TOKENS, width))
        self.blocks = nn.ModuleList(DividedBlock(width, heads) for _ in range(depth))
        self.norm = nn.LayerNorm(width, eps=1e-6)
        self.spatial_attn_agg = ClsPool(width, heads)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = len(x)
        x = self.patch_embed_3d.proj(x)  # (n, D, t, h, w)
        _, width, frames, h, w = x.shape
        x = x.flatten(2).transpose(1, 2)  # (n, t*h*w, D), time major
        # separate space and time position embeddings: each time step's patches get the spatial table plus
        # that step's temporal row
        space = self.pos_embed[:, 1:].repeat(1, frames, 1)
        time = self.temp_embed[:, :frames].repeat_interleave(h * w, dim=1)
        x = torch.cat([self.cls_token.expand(n, -1, -1), x], dim=1)
        x = x + torch.cat([self.pos_embed[:, :1], space + time], dim=1)
        for block in self.blocks:
            x = block(x, frames)
        x = self.norm(x[:, 1:])  # (n, t*h*w, D)
        x = x.reshape(n * frames, h * w, width)  # each tubelet's patches
        return self.spatial_attn_agg(x).view(n, frames, width)


class AstSelfAttention(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.query, self.key, self.value = (nn.Linear(width, width) for _ in range(3))


class Dense(nn.Module):
    def __init__(self, inputs: int, outputs: int):
        super().__init__()
        self.dense = nn.Linear(inputs, outputs)


class AstAttention(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.attention, self.output = AstSelfAttention(width), Dense(width, width)


class AstLayer(nn.Module):
    """A pre-norm ViT layer with the names of ``transformers``' AST before its 5.0 renaming (the names the released
    Synchformer weights carry)."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.attention = AstAttention(width)
        self.intermediate, self.output = Dense(width, 4 * width), Dense(4 * width, width)
        self.layernorm_before, self.layernorm_after = nn.LayerNorm(width, eps=1e-12), nn.LayerNorm(width, eps=1e-12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, length, width = x.shape
        a = self.attention.attention
        h = self.layernorm_before(x)

        def split(t):
            return t.view(n, length, self.heads, width // self.heads).transpose(1, 2)

        q, k, v = split(a.query(h)), split(a.key(h)), split(a.value(h))
        att = torch.softmax(q @ k.transpose(-2, -1) / (k.shape[-1] ** 0.5), dim=-1)
        x = x + self.attention.output.dense((att @ v).transpose(1, 2).reshape(n, length, width))
        hidden = nn.functional.gelu(self.intermediate.dense(self.layernorm_after(x)))
        return x + self.output.dense(hidden)


class AstPatches(nn.Module):
    def __init__(self, conv: nn.Module):
        super().__init__()
        self.projection = conv


class AstEmbeddings(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.cls_token = nn.Parameter(torch.zeros(1, 1, width))
        self.distillation_token = nn.Parameter(torch.zeros(1, 1, width))
        self.patch_embeddings = AstPatches(nn.Conv2d(1, width, PATCH, AST_STRIDE))
        self.position_embeddings = nn.Parameter(torch.zeros(1, 2 + AST_FREQ_PATCHES * AUDIO_TOKENS, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(N, 66, 128) -> (N, 2 + f*t, D), patches frequency major"""
        x = self.patch_embeddings.projection(x.transpose(1, 2)[:, None]).flatten(2).transpose(1, 2)
        n = len(x)
        x = torch.cat([self.cls_token.expand(n, -1, -1), self.distillation_token.expand(n, -1, -1), x], dim=1)
        return x + self.position_embeddings


class AstEncoder(nn.Module):
    def __init__(self, width: int, heads: int, depth: int):
        super().__init__()
        self.layer = nn.ModuleList(AstLayer(width, heads) for _ in range(depth))


class Ast(nn.Module):
    """The Audio Spectrogram Transformer (Gong et al. 2021) at Synchformer's spectrogram length."""

    def __init__(self, width: int, heads: int, depth: int):
        super().__init__()
        self.embeddings = AstEmbeddings(width)
        self.encoder = AstEncoder(width, heads, depth)
        self.layernorm = nn.LayerNorm(width, eps=1e-12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embeddings(x)
        for layer in self.encoder.layer:
            x = layer(x)
        return self.layernorm(x)


class AudioEncoder(nn.Module):
    """AST's feature extractor: (N, 66, 128) log-mel segments -> (N, 6, D) time tokens."""

    def __init__(self, width: int, heads: int, depth: int):
        super().__init__()
        self.ast = Ast(width, heads, depth)
        self.freq_attn_agg = ClsPool(width, heads)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = len(x)
        tokens = self.ast(x)[:, 2:]  # without the CLS and distillation tokens
        width = tokens.shape[-1]
        # each time column's frequency patches are pooled to one token
        columns = tokens.view(n, AST_FREQ_PATCHES, AUDIO_TOKENS, width).transpose(1, 2)
        return self.freq_attn_agg(columns.reshape(n * AUDIO_TOKENS, AST_FREQ_PATCHES, width)).view(
            n, AUDIO_TOKENS, width
        )


class SelfAttention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.key, self.query, self.value, self.proj = (nn.Linear(width, width) for _ in range(4))

    def forward(self, x):
        n, length, width = x.shape

        def split(t):
            return t.view(n, length, self.heads, width // self.heads).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        att = torch.softmax(q @ k.transpose(-2, -1) * (k.shape[-1] ** -0.5), dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(n, length, width))


class SyncBlock(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = SelfAttention(width, heads)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class PositionTable(nn.Module):
    def __init__(self, length: int, width: int):
        super().__init__()
        self.pos_emb = nn.Parameter(torch.zeros(1, length, width))


class SyncTransformer(nn.Module):
    """Classifies the offset of 14 segments' video tokens against their audio tokens."""

    def __init__(self, width: int, heads: int, depth: int, classes: int):
        super().__init__()
        length = 2 + WINDOW_SEGMENTS * (VIDEO_TOKENS + AUDIO_TOKENS)
        self.vis_in_lnorm, self.aud_in_lnorm = nn.LayerNorm(width), nn.LayerNorm(width)
        self.OFF_tok = nn.Parameter(torch.zeros(1, 1, width))  # noqa: N815 (the released state dict's name)
        self.MOD_tok = nn.Parameter(torch.zeros(1, 1, width))  # noqa: N815
        self.pos_emb_cfg = PositionTable(length, width)
        self.blocks = nn.Sequential(*(SyncBlock(width, heads) for _ in range(depth)))
        self.ln_f = nn.LayerNorm(width)
        self.off_head = nn.Linear(width, classes)

    def forward(self, video: torch.Tensor, audio: torch.Tensor) -> torch.Tensor:
        """(B, Lv, D) and (B, La, D) -> (B, classes) logits"""
        n = len(video)
        x = torch.cat(
            [
                self.OFF_tok.expand(n, -1, -1),
                self.vis_in_lnorm(video),
                self.MOD_tok.expand(n, -1, -1),
                self.aud_in_lnorm(audio),
            ],
            dim=1,
        )
        x = self.ln_f(self.blocks(x + self.pos_emb_cfg.pos_emb))
        return self.off_head(x[:, 0])


class Synchformer(nn.Module):
    def __init__(
        self,
        width: int = 768,
        heads: int = 12,
        video_depth: int = 12,
        audio_depth: int = 12,
        sync_heads: int = 8,
        sync_depth: int = 3,
        classes: int = CLASSES,
    ):
        super().__init__()
        self.vfeat_extractor = VideoEncoder(width, heads, video_depth)
        self.afeat_extractor = AudioEncoder(width, heads, audio_depth)
        self.vproj, self.aproj = nn.Linear(width, width), nn.Linear(width, width)
        self.transformer = SyncTransformer(width, sync_heads, sync_depth, classes)

    @classmethod
    def sized_for(cls, state: dict) -> Synchformer:
        """The Synchformer whose sizes a state dict has: width and depths from its tensors, heads of the released
        model's size (64 channels in the encoders, 96 in the sync transformer)."""

        def count(prefix: str) -> int:
            return len({k[len(prefix) :].split(".")[0] for k in state if k.startswith(prefix)})

        width = state["vproj.weight"].shape[0]
        return cls(
            width=width,
            heads=max(1, width // 64),
            video_depth=count("vfeat_extractor.blocks."),
            audio_depth=count("afeat_extractor.ast.encoder.layer."),
            sync_heads=max(1, width // 96),
            sync_depth=count("transformer.blocks."),
            classes=state["transformer.off_head.weight"].shape[0],
        )

    def extract_vfeats(self, segments: torch.Tensor) -> torch.Tensor:
        """(B, S, 16, 3, 224, 224) normalised frames -> (B, S, 8, D)"""
        b, s = segments.shape[:2]
        x = segments.flatten(0, 1).transpose(1, 2)  # (B*S, 3, 16, H, W)
        return self.vfeat_extractor(x).view(b, s, VIDEO_TOKENS, -1)

    def extract_afeats(self, segments: torch.Tensor) -> torch.Tensor:
        """(B, S, 1, 128, 66) normalised log-mels -> (B, S, 6, D)"""
        b, s = segments.shape[:2]
        x = segments.flatten(0, 2).transpose(1, 2)  # (B*S, 66, 128)
        return self.afeat_extractor(x).view(b, s, AUDIO_TOKENS, -1)

    def compare_v_a(self, video: torch.Tensor, audio: torch.Tensor) -> torch.Tensor:
        """(B, 14, 8, D) and (B, 14, 6, D) features -> (B, 21) offset logits"""
        video, audio = self.vproj(video), self.aproj(audio)
        return self.transformer(video.flatten(1, 2), audio.flatten(1, 2))
