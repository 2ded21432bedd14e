"""Face tracks for lip-sync scoring: detect faces in every frame, link the detections into tracks and
cut a square face crop from each frame of a track, as SyncNet was trained on.

The default detector is OpenCV's frontal-face Haar cascade: its XML ships inside the
opencv-python-headless wheel (4.x; the 5.0 wheels no longer carry it), so it runs offline with
no download. Detectors are a registry, so a stronger one (S3FD) can be added with its weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.ndimage import median_filter

from ..registry import Registry
from .base import MetricError


@dataclass(frozen=True)
class TrackOptions:
    min_face: int = 50  # smallest face side in pixels worth scoring
    iou: float = 0.5  # overlap that continues a track from one detection to the next
    max_gap: int = 25  # frames a track may go undetected (interpolated across)
    min_frames: int = 25  # shorter tracks are dropped (one second at 25 fps)
    crop_size: int = 224  # SyncNet's input
    crop_scale: float = 0.4  # margin around the face box; the crop reaches below the chin
    smooth: int = 13  # median-filter length over box centre and size


@dataclass(frozen=True)
class FaceTrack:
    frames: np.ndarray  # (n,) consecutive frame indices
    boxes: np.ndarray  # (n, 4) x1, y1, x2, y2 per frame, gaps interpolated


class FaceDetector:
    name: ClassVar[str]

    def detect(self, frame: np.ndarray, min_face: int) -> np.ndarray:
        """(k, 4) x1, y1, x2, y2 boxes of the faces in one RGB frame."""
        raise NotImplementedError


DETECTORS = Registry("face detector", MetricError)


def _cv2():
    try:
        import cv2
    except ImportError as err:
        raise MetricError(
            "face detection needs OpenCV: pip install 'avjudge[metrics]' (opencv-python-headless<5)"
        ) from err
    return cv2


@DETECTORS.register
class HaarDetector(FaceDetector):
    name = "haar"

    def __init__(self):
        cv2 = _cv2()
        path = cv2.data.haarcascades + "haarcascade_frontalface_default.xml"
        self.cascade = cv2.CascadeClassifier(path)
        if self.cascade.empty():
            raise MetricError(
                f"OpenCV could not load its face cascade {path}; opencv-python-headless 5.x wheels "
                "do not ship it: install 'opencv-python-headless<5'"
            )

    def detect(self, frame, min_face):
        cv2 = _cv2()
        gray = cv2.equalizeHist(cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY))
        found = self.cascade.detectMultiScale(gray, scaleFactor=1.1, minNeighbors=5, minSize=(min_face, min_face))
        boxes = np.asarray(found, np.float64).reshape(-1, 4)
        boxes[:, 2:] += boxes[:, :2]
        return boxes


def iou(a: np.ndarray, b: np.ndarray) -> float:
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def link_tracks(detections: list[np.ndarray], options: TrackOptions = TrackOptions()) -> list[FaceTrack]:
    """Greedy tracking: each detection joins the open track whose last box overlaps it most (IoU above
    ``options.iou``, last seen at most ``max_gap`` frames before), else starts a track. Gaps are
    interpolated; tracks shorter than ``min_frames`` are dropped."""
    open_tracks: list[list[tuple[int, np.ndarray]]] = []
    closed: list[list[tuple[int, np.ndarray]]] = []
    for index, boxes in enumerate(detections):
        for track in [t for t in open_tracks if index - t[-1][0] > options.max_gap]:
            open_tracks.remove(track)
            closed.append(track)
        taken: set[int] = set()
        for box in boxes:
            scores = [(iou(t[-1][1], box), i) for i, t in enumerate(open_tracks) if i not in taken]
            best = max(scores, default=(0.0, -1))
            if best[0] > options.iou:
                open_tracks[best[1]].append((index, box))
                taken.add(best[1])
            else:
                open_tracks.append([(index, box)])
                taken.add(len(open_tracks) - 1)
    tracks = []
    for track in closed + open_tracks:
        seen = np.array([i for i, _ in track])
        frames = np.arange(seen[0], seen[-1] + 1)
        if len(frames) < options.min_frames:
            continue
        boxes = np.stack([b for _, b in track])
        tracks.append(FaceTrack(frames, np.stack([np.interp(frames, seen, boxes[:, k]) for k in range(4)], axis=1)))
    return tracks


def crop_track(frames: np.ndarray, track: FaceTrack, options: TrackOptions = TrackOptions()) -> np.ndarray:
    """(n, crop_size, crop_size, 3) uint8: a square around each smoothed box, widened by ``crop_scale``
    on the sides and below (where the mouth is), outside-the-frame parts filled with grey."""
    cv2 = _cv2()
    boxes = track.boxes
    half = median_filter(
        np.maximum(boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]) / 2, options.smooth, mode="nearest"
    )
    cx = median_filter((boxes[:, 0] + boxes[:, 2]) / 2, options.smooth, mode="nearest")
    cy = median_filter((boxes[:, 1] + boxes[:, 3]) / 2, options.smooth, mode="nearest")
    crops = np.empty((len(track.frames), options.crop_size, options.crop_size, 3), np.uint8)
    cs = options.crop_scale
    for k, index in enumerate(track.frames):
        pad = int(half[k] * (1 + 2 * cs))
        padded = np.pad(frames[index], ((pad, pad), (pad, pad), (0, 0)), constant_values=110)
        y, x, h = cy[k] + pad, cx[k] + pad, half[k]
        face = padded[int(y - h) : int(y + h * (1 + 2 * cs)), int(x - h * (1 + cs)) : int(x + h * (1 + cs))]
        crops[k] = cv2.resize(face, (options.crop_size, options.crop_size), interpolation=cv2.INTER_LINEAR)
    return crops


def face_tracks(frames: np.ndarray, detector: FaceDetector, options: TrackOptions = TrackOptions()) -> list[FaceTrack]:
    return link_tracks([detector.detect(f, options.min_face) for f in frames], options)
