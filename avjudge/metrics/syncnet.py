"""Lip sync (SyncNet, Chung & Zisserman 2016): the LSE-C confidence and AV offset of every face track.

Pipeline: frames at 25 fps, audio at 16 kHz mono; face tracks (``faces.py``) cropped to 224x224;
SyncNet embeds every 5-frame window of a track (BGR pixel values 0-255, as trained) and the 20 MFCC
frames under it (13 coefficients at 100 Hz from 16-bit-scale samples, the first replaced by log
energy: ``python_speech_features.mfcc`` defaults, which SyncNet was trained on). For each window and
each offset k in -vshift..vshift the Euclidean distance to the audio window k frames away is taken;
averaged over windows this gives one distance per offset. Per track:

- ``offset``: vshift minus the index of the smallest mean distance, in frames (40 ms); positive means
  the audio comes before the picture, negative that it lags;
- ``min_dist`` (LSE-D): that smallest mean distance;
- ``confidence`` (LSE-C): median of the mean distances minus their minimum.

The clip's scores are those of its most confident track (the face that speaks); a clip with no face
track is an error ("no face found"), never a number.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import AudioNeeds, Metric, MetricError, load_strict, load_torch_file, register
from .checkpoints import resolve
from .faces import DETECTORS, FaceDetector, TrackOptions, crop_track, face_tracks

FPS = 25
SAMPLE_RATE = 16000
WINDOW = 5  # frames per SyncNet window
MFCC_PER_FRAME = 100 // FPS  # MFCC frames (10 ms hop) per video frame
SAMPLES_PER_FRAME = SAMPLE_RATE // FPS


@dataclass(frozen=True)
class SyncResult:
    offset: int
    min_dist: float
    confidence: float
    windows: int


def mfcc_features(audio: np.ndarray) -> np.ndarray:
    """(13, n) MFCCs of 16 kHz float audio, computed on the 16-bit sample scale SyncNet saw in training."""
    try:
        from python_speech_features import mfcc
    except ImportError as err:
        raise MetricError("syncnet needs python_speech_features: pip install 'avjudge[metrics]'") from err
    return mfcc(audio.astype(np.float64) * 32768.0, SAMPLE_RATE).T.astype(np.float32)


def sync_distances(lip: np.ndarray, audio: np.ndarray, vshift: int) -> np.ndarray:
    """(n, 2 vshift + 1): distance of lip window i to audio window i + k - vshift (zero vectors past the
    ends), for (n, d) embeddings of the same windows."""
    padded = np.pad(audio, ((vshift, vshift), (0, 0)))
    shifted = np.stack([padded[k : k + len(lip)] for k in range(2 * vshift + 1)], axis=1)  # (n, 2v+1, d)
    return np.linalg.norm(lip[:, None, :] - shifted, axis=-1)


def sync_result(distances: np.ndarray, vshift: int) -> SyncResult:
    mean = distances.mean(axis=0)
    best = int(np.argmin(mean))
    return SyncResult(
        offset=vshift - best,
        min_dist=float(mean[best]),
        confidence=float(np.median(mean) - mean[best]),
        windows=len(distances),
    )


def build_network():
    """SyncNet's two streams; module names and layer order match ``syncnet_v2.model``'s state dict."""
    from torch import nn

    def stack(conv, bn, specs) -> nn.Sequential:
        layers = []
        for spec in specs:
            if spec[0] == "pool":
                layers.append((nn.MaxPool2d if conv is nn.Conv2d else nn.MaxPool3d)(**spec[1]))
            else:
                layers += [conv(*spec[:2], **spec[2]), bn(spec[1]), nn.ReLU(inplace=True)]
        return nn.Sequential(*layers)

    def head() -> nn.Sequential:
        return nn.Sequential(nn.Linear(512, 512), nn.BatchNorm1d(512), nn.ReLU(inplace=True), nn.Linear(512, 1024))

    class SyncNetwork(nn.Module):
        def __init__(self):
            super().__init__()
            same = {"kernel_size": 3, "padding": 1}
            self.netcnnaud = stack(
                nn.Conv2d,
                nn.BatchNorm2d,
                [
                    (1, 64, same),
                    ("pool", {"kernel_size": 1, "stride": 1}),
                    (64, 192, same),
                    ("pool", {"kernel_size": 3, "stride": (1, 2)}),
                    (192, 384, same),
                    (384, 256, same),
                    (256, 256, same),
                    ("pool", {"kernel_size": 3, "stride": 2}),
                    (256, 512, {"kernel_size": (5, 4)}),
                ],
            )
            flat = {"kernel_size": (1, 3, 3), "padding": (0, 1, 1)}
            self.netcnnlip = stack(
                nn.Conv3d,
                nn.BatchNorm3d,
                [
                    (3, 96, {"kernel_size": (5, 7, 7), "stride": (1, 2, 2)}),
                    ("pool", {"kernel_size": (1, 3, 3), "stride": (1, 2, 2)}),
                    (96, 256, {"kernel_size": (1, 5, 5), "stride": (1, 2, 2), "padding": (0, 1, 1)}),
                    ("pool", {"kernel_size": (1, 3, 3), "stride": (1, 2, 2), "padding": (0, 1, 1)}),
                    (256, 256, flat),
                    (256, 256, flat),
                    (256, 256, flat),
                    ("pool", {"kernel_size": (1, 3, 3), "stride": (1, 2, 2)}),
                    (256, 512, {"kernel_size": (1, 6, 6)}),
                ],
            )
            self.netfcaud, self.netfclip = head(), head()

        def embed_audio(self, x):
            """(B, 1, 13, 20) MFCC windows -> (B, 1024)"""
            return self.netfcaud(self.netcnnaud(x).flatten(1))

        def embed_lips(self, x):
            """(B, 3, 5, 224, 224) BGR windows -> (B, 1024)"""
            return self.netfclip(self.netcnnlip(x).flatten(1))

    return SyncNetwork()


class SyncEncoder:
    """Embeds lip and MFCC windows in batches with a SyncNet network."""

    def __init__(self, network, batch_size: int = 20):
        self.network, self.batch_size = network, batch_size

    def _embed(self, fn, make, n: int) -> np.ndarray:
        import torch

        out = []
        with torch.inference_mode():
            for start in range(0, n, self.batch_size):
                batch = torch.from_numpy(make(range(start, min(n, start + self.batch_size))))
                out.append(fn(batch).float().numpy())
        return np.concatenate(out)

    def embed_lips(self, crops: np.ndarray, n: int) -> np.ndarray:
        """(T, 224, 224, 3) RGB crops -> (n, 1024) embeddings of windows starting at frames 0..n-1."""
        bgr = np.ascontiguousarray(crops[..., ::-1].transpose(3, 0, 1, 2), dtype=np.float32)  # (3, T, H, W)
        return self._embed(self.network.embed_lips, lambda idx: np.stack([bgr[:, i : i + WINDOW] for i in idx]), n)

    def embed_audio(self, mfcc: np.ndarray, n: int) -> np.ndarray:
        """(13, M) MFCCs -> (n, 1024) embeddings of the windows under video windows 0..n-1."""
        span = WINDOW * MFCC_PER_FRAME
        return self._embed(
            self.network.embed_audio,
            lambda idx: np.stack([mfcc[None, :, i * MFCC_PER_FRAME : i * MFCC_PER_FRAME + span] for i in idx]),
            n,
        )


def track_sync(encoder, crops: np.ndarray, mfcc: np.ndarray, audio_samples: int, vshift: int) -> SyncResult:
    """Sync of one face track; ``mfcc`` starts at the track's first frame."""
    # as SyncNet's own evaluation: the frames that have audio under them, less one window
    n = min(len(crops), audio_samples // SAMPLES_PER_FRAME) - WINDOW
    if n < 1:
        raise MetricError(
            f"a face track of {len(crops)} frames with {audio_samples / SAMPLE_RATE:.2f} s of audio "
            f"is too short for syncnet (needs {WINDOW + 1} frames)"
        )
    return sync_result(sync_distances(encoder.embed_lips(crops, n), encoder.embed_audio(mfcc, n), vshift), vshift)


def lip_sync(
    frames: np.ndarray,
    audio: np.ndarray,
    encoder,
    detector: FaceDetector,
    options: TrackOptions = TrackOptions(),
    vshift: int = 15,
) -> list[SyncResult]:
    """One SyncResult per face track of 25 fps ``frames`` with 16 kHz mono ``audio``."""
    mfcc = mfcc_features(audio)
    results = []
    for track in face_tracks(frames, detector, options):
        first = int(track.frames[0])
        results.append(
            track_sync(
                encoder,
                crop_track(frames, track, options),
                mfcc[:, first * MFCC_PER_FRAME :],
                len(audio) - first * SAMPLES_PER_FRAME,
                vshift,
            )
        )
    return results


@register
class SyncNet(Metric):
    name = "syncnet"
    aspect = "sync"  # its LSE-C has no bounded scale: a reward term gives its output and midpoint
    description = "SyncNet lip sync: confidence (LSE-C), distance (LSE-D) and AV offset of the speaking face"
    audio = AudioNeeds(sample_rate=SAMPLE_RATE)
    video_fps = float(FPS)
    checkpoints = ("syncnet",)

    def __init__(
        self,
        root=None,
        detector: str = "haar",
        vshift: int = 15,
        batch_size: int = 20,
        options: TrackOptions = TrackOptions(),
    ):
        try:
            import torch  # noqa: F401
        except ImportError as err:
            raise MetricError("syncnet needs torch: pip install 'avjudge[metrics]'") from err
        (path,) = resolve(self.checkpoints[0], root).values()
        network = load_strict(build_network(), load_torch_file(path), path, "a SyncNet v2 state dict")
        self.encoder = SyncEncoder(network, batch_size)
        self.detector = DETECTORS.lookup(detector)()
        self.vshift, self.options = vshift, options

    def compute(self, clip, **ctx):
        frames, audio = self.frames_of(clip), self.audio_of(clip)
        results = lip_sync(frames, audio, self.encoder, self.detector, self.options, self.vshift)
        if not results:
            raise MetricError(
                f"no face found in {clip.source or 'clip'} (no face of at least "
                f"{self.options.min_face} px seen for {self.options.min_frames} frames)"
            )
        best = max(results, key=lambda r: r.confidence)
        return {
            "syncnet_confidence": best.confidence,
            "syncnet_min_dist": best.min_dist,
            "syncnet_offset": float(best.offset),
            "syncnet_faces": float(len(results)),
        }
