"""A clip from wherever it is: a file, its encoded bytes, or frames and a waveform already decoded in memory (what
RL trainers hold), brought to what a decode plan asks, so every input of the same clip gives the same arrays.

`load_clip` is the one way the scoring core turns an input into a `MediaClip`: files and bytes are decoded with
the plan's options; a clip in memory is conformed to them (`conform`: the same channel mix, resampling and frame
choice the decoder applies), so scoring a clip's arrays equals scoring its file.
"""

from __future__ import annotations

import numpy as np

from ._open import Encoded, media_name
from .clip import MediaClip
from .decode import decode, remix, resample
from .errors import MediaError
from .needs import NATIVE_FPS, DecodeNeeds, frame_indices

IN_MEMORY = "<clip in memory>"


def from_arrays(
    frames=None,
    fps: float | None = None,
    audio=None,
    sample_rate: int | None = None,
    source: str = IN_MEMORY,
) -> MediaClip:
    """A clip from decoded arrays (numpy, or anything ``np.asarray`` reads, e.g. a CPU tensor).

    Args:
        frames: (T, H, W, 3) uint8 RGB, or float in [0, 1] as (T, H, W, 3) or (T, 3, H, W).
        fps: the frames' rate (they are taken as evenly spaced from time 0).
        audio: a waveform, (N,) mono or (C, N), float in [-1, 1].
        sample_rate: the waveform's rate.
        source: how messages name the clip.
    """
    if frames is None and audio is None:
        raise MediaError(source, "a clip in memory needs frames, audio or both")
    video = times = None
    if frames is not None:
        video = _frames_uint8(np.asarray(frames), source)
        if not fps or fps <= 0:
            raise MediaError(source, "frames in memory need their fps")
        times = np.arange(len(video), dtype=np.float64) / fps
    sound = None
    if audio is not None:
        sound = np.asarray(audio, dtype=np.float32)
        sound = sound[None] if sound.ndim == 1 else sound
        if sound.ndim != 2 or sound.shape[1] == 0:
            raise MediaError(source, f"audio in memory is (N,) or (C, N) samples, not shape {np.shape(audio)}")
        if not sample_rate or sample_rate <= 0:
            raise MediaError(source, "audio in memory needs its sample_rate")
        if not np.isfinite(sound).all():
            raise MediaError(source, "audio in memory holds NaN or infinite samples")
    duration = max(
        len(video) / fps if video is not None else 0.0, sound.shape[1] / sample_rate if sound is not None else 0.0
    )
    return MediaClip(
        frames=video,
        fps=float(fps) if video is not None else None,
        timestamps=times,
        audio=np.ascontiguousarray(sound) if sound is not None else None,
        sample_rate=int(sample_rate) if sound is not None else None,
        duration=float(duration),
        source=source,
    )


def _frames_uint8(frames: np.ndarray, source: str) -> np.ndarray:
    if frames.ndim != 4 or 3 not in (frames.shape[-1], frames.shape[1]):
        raise MediaError(source, f"frames in memory are (T, H, W, 3) or (T, 3, H, W), not shape {frames.shape}")
    if frames.shape[-1] != 3:  # channels first, as torch lays images out
        frames = np.moveaxis(frames, 1, -1)
    if frames.dtype == np.uint8:
        return np.ascontiguousarray(frames)
    if not np.issubdtype(frames.dtype, np.floating):
        raise MediaError(source, f"frames in memory are uint8 or float in [0, 1], not {frames.dtype}")
    if not np.isfinite(frames).all() or frames.min() < -1e-3 or frames.max() > 1 + 1e-3:
        raise MediaError(source, "float frames in memory must lie in [0, 1]")
    return np.ascontiguousarray(np.round(np.clip(frames, 0, 1) * 255).astype(np.uint8))


def conform(clip: MediaClip, needs: DecodeNeeds) -> MediaClip:
    """A clip in memory as decoding its file with ``needs`` gives it: the streams checked, frames at the plan's
    rate, audio mixed to its channels and resampled to its rate (as `avjudge.media.decode` does both)."""
    name = clip.source or IN_MEMORY
    if needs.video and clip.frames is None:
        raise MediaError(name, "has no video frames")
    if needs.audio and clip.audio is None:
        raise MediaError(name, "has no audio")
    changes = {}
    if needs.video and needs.fps != NATIVE_FPS and abs(clip.fps - needs.fps) > 1e-9:
        shown = frame_indices(clip.timestamps, clip.start, clip.duration, needs.fps)
        changes.update(
            frames=clip.frames[shown],
            fps=float(needs.fps),
            timestamps=clip.start + np.arange(len(shown)) / needs.fps,
        )
    if needs.audio:
        audio, rate = clip.audio, clip.sample_rate
        if needs.channels is not None:
            audio = remix(audio, [""] * audio.shape[0], needs.channels)
        if needs.sample_rate is not None and needs.sample_rate != rate:
            audio, rate = resample(audio, rate, needs.sample_rate), needs.sample_rate
            want = int(round(clip.duration * rate))
            audio = audio[:, :want] if audio.shape[1] >= want else np.pad(audio, ((0, 0), (0, want - audio.shape[1])))
        if audio is not clip.audio:
            changes.update(audio=np.ascontiguousarray(audio, dtype=np.float32), sample_rate=rate)
    if not needs.video and clip.frames is not None:  # what the plan does not read is not carried further
        changes.update(frames=None, fps=None, timestamps=None)
    if not needs.audio and clip.audio is not None:
        changes.update(audio=None, sample_rate=None)
    return clip.replace(**changes) if changes else clip


def load_clip(video: Encoded | MediaClip | None, needs: DecodeNeeds, audio: Encoded | None = None) -> MediaClip:
    """The clip of an input as ``needs`` asks: ``video`` a file, its bytes, or a `MediaClip` in memory; ``audio``
    a file (or bytes) whose sound replaces the video's own track, or stands alone where there is no video.

    Raises:
        MediaError: the input cannot give what ``needs`` asks (no such file, a stream missing, corrupt data).
    """
    if isinstance(video, MediaClip):
        if audio is not None:
            raise MediaError(video.source or IN_MEMORY, "a clip in memory carries its own audio; give no audio file")
        return conform(video, needs)
    sound = needs.options()
    sound = {"sample_rate": sound["sample_rate"], "channels": sound["channels"]}
    if video is None and audio is None:
        raise MediaError(None, "no media: give a video, an audio file or a clip in memory")
    if video is None and needs.video:
        raise MediaError(media_name(audio), "is audio alone, and frames are needed")
    if audio is not None and not needs.video:  # the separate sound is all that is read
        return decode(audio, video=False, audio=True, **sound)
    own_audio = needs.audio and audio is None
    clip = decode(video, **{**needs.options(), "audio": own_audio, **(sound if own_audio else {})})
    if needs.audio and audio is not None:
        track = decode(audio, video=False, audio=True, **sound)
        clip = clip.replace(audio=track.audio, sample_rate=track.sample_rate)
    return clip
