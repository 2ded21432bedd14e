"""Model inputs from decoded media, without torchvision.

Vision follows Qwen2-VL's processor exactly (smart resize to multiples of patch*merge,
bicubic resize, rescale, normalise, patchify in its token order); a test checks it against
transformers' own PIL image processor. Audio uses transformers' WhisperFeatureExtractor as
the checkpoint configures it. Torch twins of both keep gradients for the differentiable mode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import torch
from PIL import Image

from .bicubic import resize_like_pillow


@dataclass(frozen=True)
class VisionPreprocess:
    patch_size: int = 14
    temporal_patch_size: int = 2
    merge_size: int = 2
    min_pixels: int = 3136
    max_pixels: int = 12845056
    image_mean: tuple[float, float, float] = (0.48145466, 0.4578275, 0.40821073)
    image_std: tuple[float, float, float] = (0.26862954, 0.26130258, 0.27577711)

    @classmethod
    def from_config(cls, cfg: dict) -> "VisionPreprocess":
        known = {
            f: cfg[f]
            for f in ("patch_size", "temporal_patch_size", "merge_size", "min_pixels", "max_pixels")
            if f in cfg
        }
        size = cfg.get("size") or {}  # newer processor configs give the pixel bounds as a size dict
        for field, key in (("min_pixels", "shortest_edge"), ("max_pixels", "longest_edge")):
            if field not in known and key in size:
                known[field] = size[key]
        if "image_mean" in cfg:
            known["image_mean"] = tuple(cfg["image_mean"])
            known["image_std"] = tuple(cfg["image_std"])
        return cls(**known)

    def with_pixels(self, min_pixels: int | None, max_pixels: int | None) -> "VisionPreprocess":
        return replace(self, min_pixels=min_pixels or self.min_pixels, max_pixels=max_pixels or self.max_pixels)

    def target_size(self, height: int, width: int) -> tuple[int, int]:
        """Qwen2-VL's smart resize: multiples of patch*merge, pixel count within [min, max]."""
        factor = self.patch_size * self.merge_size
        if max(height, width) / min(height, width) > 200:
            raise ValueError(f"aspect ratio must be below 200, got {width}x{height}")
        h = max(factor, round(height / factor) * factor)
        w = max(factor, round(width / factor) * factor)
        if h * w > self.max_pixels:
            beta = math.sqrt(height * width / self.max_pixels)
            h = max(factor, math.floor(height / beta / factor) * factor)
            w = max(factor, math.floor(width / beta / factor) * factor)
        elif h * w < self.min_pixels:
            beta = math.sqrt(self.min_pixels / (height * width))
            h = math.ceil(height * beta / factor) * factor
            w = math.ceil(width * beta / factor) * factor
        return h, w

    def grid(self, shape: tuple[int, ...]) -> tuple[int, int, int]:
        """The (t, h, w) patch grid of (T, H, W, 3) frames, as `video_patches` makes it, without making it."""
        _check_frames(shape)
        h, w = self.target_size(shape[1], shape[2])
        return -(-shape[0] // self.temporal_patch_size), h // self.patch_size, w // self.patch_size

    def tokens(self, grid_thw) -> int:
        t, h, w = (int(v) for v in grid_thw)
        return t * h * w // self.merge_size**2


def _patchify(video, p: VisionPreprocess):
    """(T, C, H, W) -> ((grid_t*grid_h*grid_w), C*tp*ps*ps) in the vision tower's order; numpy or torch."""
    t, c, h, w = video.shape
    tp, ps, m = p.temporal_patch_size, p.patch_size, p.merge_size
    gt, gh, gw = t // tp, h // ps, w // ps
    x = video.reshape(gt, tp, c, gh // m, m, ps, gw // m, m, ps)
    order = (0, 3, 6, 4, 7, 2, 1, 5, 8)
    x = x.transpose(order) if isinstance(x, np.ndarray) else x.permute(order)
    return x.reshape(gt * gh * gw, c * tp * ps * ps), (gt, gh, gw)


def _pad_frames(frames, temporal: int):
    """Repeat the last frame so the count divides the temporal patch (as the official processor does)."""
    pad = -len(frames) % temporal
    if not pad:
        return frames
    tail = frames[-1:]
    if isinstance(frames, np.ndarray):
        return np.concatenate([frames] + [tail] * pad)
    return torch.cat([frames] + [tail] * pad)


def _check_frames(shape: tuple[int, ...]) -> None:
    if len(shape) != 4 or shape[-1] != 3:
        raise ValueError(f"frames must be (T, H, W, 3), got {tuple(shape)}")


def _normalisation(p: VisionPreprocess) -> tuple[np.ndarray, np.ndarray]:
    """(scale, shift) per channel: (x / 255 - mean) / std as x * scale - shift, in float32."""
    std = np.asarray(p.image_std, np.float32)[:, None]
    return 1.0 / (255.0 * std), np.asarray(p.image_mean, np.float32)[:, None] / std


def video_patches(frames: np.ndarray, p: VisionPreprocess) -> tuple[np.ndarray, tuple[int, int, int]]:
    """(T, H, W, 3) uint8 frames -> (pixel_values float32, grid_thw)."""
    _check_frames(frames.shape)
    h, w = p.target_size(frames.shape[1], frames.shape[2])
    resized = np.stack([np.asarray(Image.fromarray(f).resize((w, h), Image.BICUBIC)) for f in frames])
    # Patchify the bytes, then normalise per channel: each patch row holds one channel per contiguous
    # run of tp*ps*ps values, which numpy broadcasts far faster than a trailing axis of 3.
    patches, grid = _patchify(_pad_frames(resized.transpose(0, 3, 1, 2), p.temporal_patch_size), p)
    x = patches.reshape(len(patches), 3, -1).astype(np.float32)
    scale, shift = _normalisation(p)
    x *= scale  # in place: two passes over the largest array of the clip
    x -= shift
    return x.reshape(len(patches), -1), grid


def video_patches_on_device(frames: torch.Tensor, p: VisionPreprocess) -> tuple[torch.Tensor, tuple[int, int, int]]:
    """`video_patches` of (T, H, W, 3) uint8 frames as tensor work where the frames are (a GPU): the same
    float32 values, bit for bit (Pillow's resize reproduced by `bicubic.resize_like_pillow`)."""
    _check_frames(frames.shape)
    h, w = p.target_size(frames.shape[1], frames.shape[2])
    resized = resize_like_pillow(frames.permute(0, 3, 1, 2), h, w)
    patches, grid = _patchify(_pad_frames(resized, p.temporal_patch_size), p)
    x = patches.reshape(len(patches), 3, -1).to(torch.float32)
    scale, shift = (torch.from_numpy(v).to(x.device) for v in _normalisation(p))
    return (x * scale - shift).reshape(len(patches), -1), grid


def video_patches_torch(frames: torch.Tensor, p: VisionPreprocess) -> tuple[torch.Tensor, tuple[int, int, int]]:
    """Differentiable twin: (T, H, W, 3) float frames in [0, 1] -> (pixel_values, grid_thw)."""
    h, w = p.target_size(frames.shape[1], frames.shape[2])
    x = frames.permute(0, 3, 1, 2)
    if (h, w) != tuple(x.shape[-2:]):
        x = torch.nn.functional.interpolate(x, size=(h, w), mode="bicubic", align_corners=False, antialias=True)
    mean = torch.tensor(p.image_mean, dtype=x.dtype, device=x.device)[None, :, None, None]
    std = torch.tensor(p.image_std, dtype=x.dtype, device=x.device)[None, :, None, None]
    return _patchify(_pad_frames((x - mean) / std, p.temporal_patch_size), p)


def log_mel_torch(waveform: torch.Tensor, feature_extractor) -> torch.Tensor:
    """Differentiable Whisper log-mel of a (N,) waveform, as WhisperFeatureExtractor computes it."""
    log_spec = _log_mel(waveform, feature_extractor)
    return (torch.maximum(log_spec, log_spec.max() - 8.0) + 4.0) / 4.0


def _log_mel(waveform: torch.Tensor, fe) -> torch.Tensor:
    window = torch.hann_window(fe.n_fft, device=waveform.device, dtype=waveform.dtype)
    stft = torch.stft(waveform, fe.n_fft, fe.hop_length, window=window, return_complex=True)
    power = stft[..., :-1].abs() ** 2
    filters = torch.as_tensor(np.asarray(fe.mel_filters), dtype=waveform.dtype, device=waveform.device)
    return torch.clamp(filters.T @ power, min=1e-10).log10()


def whisper_features(audio, fe, total_frames: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(features (n_mels, frames), mask) equal to WhisperFeatureExtractor(padding="max_length") on the
    frames it marks valid, computed over the valid audio only, where ``audio`` is (a numpy array: the CPU; a
    tensor: its device).

    The extractor zero-pads every clip to its whole window (30 s for Qwen2-Audio, 300 s for
    Qwen2.5-Omni) before the STFT. A valid frame only sees the clip and the zeros just after it,
    and the normalisation's maximum lies in the valid part, so a short zero-padded copy gives the
    same numbers. ``total_frames`` pads with the value the extractor gives padding frames
    (Qwen2-Audio needs its full 3000); ``None`` returns the valid frames only.
    """
    audio = torch.as_tensor(audio, dtype=torch.float32)
    n = len(audio)
    if n > fe.n_samples:
        raise ValueError(f"audio of {n} samples is longer than the feature window of {fe.n_samples}")
    valid = whisper_frames(n, fe)
    frames = total_frames or valid
    # frames just past the valid ones still overlap the clip's tail through the STFT window
    computed = min(frames, valid + fe.n_fft // fe.hop_length + 1)
    # near the window's end the extractor reflects the real signal: then use the whole window as it does
    length = computed * fe.hop_length + fe.n_fft
    short = audio.new_zeros(fe.n_samples if length >= fe.n_samples else length)
    short[:n] = audio
    with torch.no_grad():
        log_spec = _log_mel(short, fe)[:, :computed]
        floor = log_spec.max() - 8.0
        # the value of frames that see only zeros: log10(1e-10) = -10, clamped like the rest
        pad_value = (torch.clamp(floor, min=-10.0) + 4.0) / 4.0
        out = pad_value.expand(log_spec.shape[0], frames).clone()
        out[:, :computed] = (torch.maximum(log_spec, floor) + 4.0) / 4.0
    mask = torch.zeros(frames, dtype=torch.long, device=audio.device)
    mask[:valid] = 1
    return out, mask


def whisper_frames(samples: int, fe) -> int:
    """Valid mel frames of ``samples`` samples of audio, as WhisperFeatureExtractor's mask counts them."""
    return max(1, -(-samples // fe.hop_length))


def audio_feature_tokens(valid_frames: int) -> int:
    """Tokens the Whisper-style audio encoders (Qwen2-Audio, Qwen2.5-Omni) emit for a number of valid mel frames."""
    after_conv = (valid_frames - 1) // 2 + 1
    return (after_conv - 2) // 2 + 1


def chunked_audio_tokens(valid_frames: int, n_window: int) -> int:
    """Tokens Qwen3-Omni's audio encoder emits: windows of 2*n_window mel frames, each downsampled 8x by three
    stride-2 convolutions (13 tokens per full 100-frame window), plus the shorter last window."""

    def downsampled(frames: int) -> int:
        for _ in range(3):
            frames = (frames - 1) // 2 + 1
        return frames

    window = 2 * n_window
    return downsampled(valid_frames % window) + (valid_frames // window) * downsampled(window)


def chunk_bounds(token_times: np.ndarray, tokens_per_chunk: int) -> list[tuple[int, int]]:
    """(start, end) index ranges of tokens whose time positions fall in successive chunks
    (Qwen2.5-Omni's rule for interleaving a video's own audio with its frames)."""
    bounds, start, chunk = [], 0, 1
    for i, value in enumerate(token_times):
        if value >= chunk * tokens_per_chunk:
            bounds.append((start, i))
            start, chunk = i, chunk + 1
    bounds.append((start, len(token_times)))
    return bounds


def _video_token_times(grid_thw, merge_size: int, second_per_grid: float, position_id_per_seconds: float) -> np.ndarray:
    """The time position of each of a video's tokens (TMRoPE's temporal index)."""
    t, h, w = (int(v) for v in grid_thw)
    per_frame = (h // merge_size) * (w // merge_size)
    return np.repeat(np.arange(t), per_frame) * second_per_grid * position_id_per_seconds


def _runs(kinds: np.ndarray, tokens: tuple[str, str]) -> str:
    """Placeholder text for a sequence of 0 (first token) / 1 (second token) kinds, run by run."""
    if not len(kinds):
        return ""
    edges = np.flatnonzero(np.diff(kinds)) + 1
    starts, ends = np.r_[0, edges], np.r_[edges, len(kinds)]
    return "".join(tokens[kinds[a]] * int(b - a) for a, b in zip(starts, ends))


def interleaved_video_audio(
    grid_thw,
    merge_size: int,
    second_per_grid: float,
    audio_tokens: int,
    fmt,
    position_id_per_seconds: float = 25,
    seconds_per_chunk: float = 2.0,
) -> str:
    """Qwen2.5-Omni: the placeholder run of a video whose audio is interleaved with its frames, chunk by chunk
    (``fmt``: the family's ChatFormat, which names the tokens)."""
    video_times = _video_token_times(grid_thw, merge_size, second_per_grid, position_id_per_seconds)
    per_chunk = int(position_id_per_seconds * seconds_per_chunk)
    video_chunks = chunk_bounds(video_times, per_chunk)
    audio_chunks = chunk_bounds(np.arange(audio_tokens), per_chunk)
    parts = [fmt.audio_start]
    for j in range(max(len(video_chunks), len(audio_chunks))):
        if j < len(video_chunks):
            parts.append(fmt.video_pad * (video_chunks[j][1] - video_chunks[j][0]))
        if j < len(audio_chunks):
            parts.append(fmt.audio_pad * (audio_chunks[j][1] - audio_chunks[j][0]))
    parts.append(fmt.audio_end)
    return "".join(parts)


def merged_video_audio(
    grid_thw, merge_size: int, second_per_grid: float, audio_tokens: int, fmt, position_id_per_seconds: float
) -> str:
    """Qwen3-Omni: a video's tokens and its own audio's merged one by one in time order (audio token i sits
    at time position i; a video token goes first on a tie)."""
    times = np.r_[
        _video_token_times(grid_thw, merge_size, second_per_grid, position_id_per_seconds), np.arange(audio_tokens)
    ]
    kinds = np.r_[np.zeros(len(times) - audio_tokens, np.int64), np.ones(audio_tokens, np.int64)]
    order = np.lexsort((kinds, times))  # stable: each stream keeps its own order
    return fmt.audio_start + _runs(kinds[order], (fmt.video_pad, fmt.audio_pad)) + fmt.audio_end
