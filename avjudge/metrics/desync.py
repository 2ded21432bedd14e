"""DeSync: the audio-video offset Synchformer predicts, as av-benchmark (MMAudio's evaluation) computes it.

Per clip (the first ``seconds``, 8 s as av-benchmark, at least 4.8 s):

- video at 25 fps, each frame resized so its short side is 224 (bicubic, antialiased, rounded to 8 bits as
  torchvision's ``Resize`` does to uint8 frames), centre-cropped to 224x224, scaled to [-1, 1]; cut into
  16-frame segments every 8 frames;
- audio at 16 kHz mono, cut into 10,240-sample segments every 5,120 (the same 0.64 s / 0.32 s); each segment's
  power mel spectrogram (n_fft 1024, a 400-sample Hann window, hop 160, 128 HTK mel bands, no filter norm,
  centred with reflection: torchaudio's ``MelSpectrogram`` as av-benchmark builds it), ``log(x + 1e-6)``, padded
  from 65 to 66 frames with zeros, normalised with AudioSet's mean -4.2677393 and twice its std 4.5689974;
- Synchformer classifies the offset of the first 14 segments (4.8 s) and of the last 14 into 21 classes from
  -2 s to +2 s; DeSync is the mean of the two predicted offsets' absolute values (av-benchmark's ``DeSync``).

Outputs: ``desync_score`` (1 - the probability-weighted |offset| / 2, averaged over the two windows: 1 in sync,
0 two seconds off; continuous, so a reward can climb it), ``desync`` (av-benchmark's number, seconds, lower is
better), ``desync_start`` and ``desync_end`` (each window's predicted offset, signed as Synchformer's classes)
and ``desync_confidence`` (the mean probability of the two predicted classes). `Desync.probabilities` gives
each window's 21 class probabilities.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import AudioNeeds, Metric, MetricError, load_strict, load_torch_file, register
from .checkpoints import resolve

FPS = 25
SAMPLE_RATE = 16000
FRAME_STEP = 8  # frames between video segments
SEGMENT_SAMPLES = 10240  # 0.64 s, the audio under a 16-frame segment
SAMPLE_STEP = 5120
N_FFT, WIN_LENGTH, HOP = 1024, 400, 160
LOG_MEL_MEAN, LOG_MEL_STD = -4.2677393, 4.5689974
OFFSETS = np.linspace(-2.0, 2.0, 21)  # seconds, Synchformer's classes
CHECKPOINT = "synchformer"


def resize_short_side(frames: np.ndarray, size: int):
    """(T, H, W, 3) uint8 -> (T, 3, size', size'') float tensor of 8-bit values: the short side ``size``, the long
    side ``int(size * long / short)`` as torchvision computes it."""
    import torch

    t, h, w, _ = frames.shape
    if h <= w:
        out = (size, int(size * w / h))
    else:
        out = (int(size * h / w), size)
    x = torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2).float()
    x = torch.nn.functional.interpolate(x, size=out, mode="bicubic", antialias=True, align_corners=False)
    return x.round_().clamp_(0, 255)


def sync_frames(frames: np.ndarray):
    """(T, H, W, 3) uint8 -> (T, 3, 224, 224) frames in [-1, 1], as av-benchmark's sync transform."""
    from .synchformer import FRAME_SIZE

    x = resize_short_side(frames, FRAME_SIZE)
    h, w = x.shape[-2:]
    top, left = int(round((h - FRAME_SIZE) / 2.0)), int(round((w - FRAME_SIZE) / 2.0))
    x = x[..., top : top + FRAME_SIZE, left : left + FRAME_SIZE]
    return (x / 255.0 - 0.5) / 0.5


def video_segments(frames, count: int):
    """The first ``count`` 16-frame segments, every 8 frames, of `sync_frames` output: (count, 16, 3, 224, 224)."""
    import torch

    from .synchformer import SEGMENT_FRAMES

    return torch.stack([frames[i * FRAME_STEP : i * FRAME_STEP + SEGMENT_FRAMES] for i in range(count)])


def mel_filterbank(sample_rate: int = SAMPLE_RATE, n_fft: int = N_FFT, n_mels: int = 128) -> np.ndarray:
    """(n_fft // 2 + 1, n_mels) triangular HTK-mel filters from 0 Hz to Nyquist, unnormalised (torchaudio's
    ``melscale_fbanks`` defaults)."""
    freqs = np.linspace(0, sample_rate / 2, n_fft // 2 + 1)
    mel_max = 2595.0 * np.log10(1.0 + (sample_rate / 2) / 700.0)
    points = 700.0 * (10 ** (np.linspace(0.0, mel_max, n_mels + 2) / 2595.0) - 1.0)
    slopes = points[None, :] - freqs[:, None]  # (freqs, n_mels + 2)
    widths = np.diff(points)
    down = -slopes[:, :-2] / widths[:-1]
    up = slopes[:, 2:] / widths[1:]
    return np.maximum(0.0, np.minimum(down, up)).astype(np.float32)


def audio_segments(audio: np.ndarray, count: int):
    """The first ``count`` segments' normalised log-mels: (count, 1, 128, 66)."""
    import torch

    from .synchformer import MEL_FRAMES

    x = torch.from_numpy(np.ascontiguousarray(audio, dtype=np.float32))
    segments = torch.stack([x[i * SAMPLE_STEP : i * SAMPLE_STEP + SEGMENT_SAMPLES] for i in range(count)])
    window = torch.hann_window(WIN_LENGTH)
    spec = torch.stft(segments, N_FFT, HOP, WIN_LENGTH, window, center=True, pad_mode="reflect", return_complex=True)
    power = spec.abs() ** 2  # (count, 513, 65)
    mel = torch.from_numpy(mel_filterbank()).T @ power  # (count, 128, 65)
    mel = torch.log(mel + 1e-6)
    mel = torch.nn.functional.pad(mel, (0, MEL_FRAMES - mel.shape[-1]))
    return ((mel - LOG_MEL_MEAN) / (2 * LOG_MEL_STD))[:, None]


def segment_count(frames: int, samples: int) -> int:
    """Segments both streams have (av-benchmark's clips give 24 of each)."""
    from .synchformer import SEGMENT_FRAMES

    return min((frames - SEGMENT_FRAMES) // FRAME_STEP + 1, (samples - SEGMENT_SAMPLES) // SAMPLE_STEP + 1)


def windows(segments: int) -> list[slice]:
    """av-benchmark's two windows: the first 14 segments and the last 14."""
    from .synchformer import WINDOW_SEGMENTS

    return [slice(0, WINDOW_SEGMENTS), slice(segments - WINDOW_SEGMENTS, segments)]


@dataclass(frozen=True)
class SyncWindows:
    probabilities: np.ndarray  # (2, 21): the first and the last window's class probabilities

    @property
    def offsets(self) -> np.ndarray:
        return OFFSETS[self.probabilities.argmax(axis=1)]

    def scores(self) -> dict[str, float]:
        expected = (self.probabilities * np.abs(OFFSETS)).sum(axis=1)
        return {
            "desync_score": float(1.0 - expected.mean() / 2.0),
            "desync": float(np.abs(self.offsets).mean()),
            "desync_start": float(self.offsets[0]),
            "desync_end": float(self.offsets[1]),
            "desync_confidence": float(self.probabilities.max(axis=1).mean()),
        }


def sync_windows(network, frames: np.ndarray, audio: np.ndarray, batch_size: int = 8, device: str = "cpu"):
    """Synchformer's class probabilities for av-benchmark's two windows of 25 fps ``frames`` and 16 kHz ``audio``
    (already cut to the clip's evaluated length)."""
    import torch

    from .synchformer import SEGMENT_FRAMES, WINDOW_SEGMENTS

    count = segment_count(len(frames), len(audio))
    if count < WINDOW_SEGMENTS:
        need = ((WINDOW_SEGMENTS - 1) * SAMPLE_STEP + SEGMENT_SAMPLES) / SAMPLE_RATE
        have = min(len(frames) / FPS, len(audio) / SAMPLE_RATE)
        raise MetricError(f"{have:.2f} s of video and audio is too short for desync (needs {need:.1f} s)")
    # every frame resized once, though the segments overlap
    frames = sync_frames(frames[: (count - 1) * FRAME_STEP + SEGMENT_FRAMES])
    with torch.inference_mode():
        video, sound = [], []
        for start in range(0, count, batch_size):
            n = min(batch_size, count - start)
            clip_frames = frames[start * FRAME_STEP : (start + n - 1) * FRAME_STEP + SEGMENT_FRAMES]
            clip_audio = audio[start * SAMPLE_STEP : (start + n - 1) * SAMPLE_STEP + SEGMENT_SAMPLES]
            video.append(network.extract_vfeats(video_segments(clip_frames, n)[None].to(device)))
            sound.append(network.extract_afeats(audio_segments(clip_audio, n)[None].to(device)))
        video, sound = torch.cat(video, dim=1), torch.cat(sound, dim=1)
        spans = windows(count)
        logits = network.compare_v_a(torch.cat([video[:, s] for s in spans]), torch.cat([sound[:, s] for s in spans]))
        return SyncWindows(torch.softmax(logits.float(), dim=-1).cpu().numpy())


@register
class Desync(Metric):
    name = "desync"
    aspect = "sync"
    description = (
        "DeSync (av-benchmark): Synchformer's predicted audio-video offset in seconds over the first and last "
        "4.8 s, and a continuous sync score"
    )
    audio = AudioNeeds(sample_rate=SAMPLE_RATE)
    video_fps = float(FPS)
    checkpoints = (CHECKPOINT,)
    takes_device = True
    scales = {"desync_score": (0.0, 1.0), "desync": (0.0, 2.0)}

    def __init__(self, root=None, device: str = "cpu", batch_size: int = 8, seconds: float = 8.0):
        try:
            import torch  # noqa: F401
        except ImportError as err:
            raise MetricError("desync needs torch: pip install 'avjudge[metrics]'") from err
        from .synchformer import Synchformer

        (path,) = resolve(CHECKPOINT, root).values()
        state = load_torch_file(path)
        network = load_strict(Synchformer.sized_for(state), state, path, "a Synchformer state dict")
        self.network, self.device = network.to(device), device
        self.batch_size, self.seconds = batch_size, seconds

    def probabilities(self, clip) -> SyncWindows:
        frames = self.frames_of(clip)[: int(FPS * self.seconds)]
        audio = self.audio_of(clip)[: int(SAMPLE_RATE * self.seconds)]
        return sync_windows(self.network, frames, audio, self.batch_size, self.device)

    def compute(self, clip, **ctx):
        return self.probabilities(clip).scores()
