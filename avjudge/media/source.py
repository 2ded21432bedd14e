"""A clip from wherever it is: a file, its encoded bytes, or frames and a waveform already decoded in memory (what
RL trainers hold), brought to what a decode plan asks, so every input of the same clip gives the same arrays.

`load_clip` is the one way the scoring core turns an input into a `MediaClip`: files and bytes are decoded with
the plan's options within a `DecodeBudget`; a clip in memory is held to the same budget and conformed to the plan
(`conform`: the same channel mix, resampling, frame choice and frame scaling the decoder applies), so scoring a
clip's arrays equals scoring its file.
"""

from __future__ import annotations

import numpy as np

from . import arrays
from ._open import Encoded, media_name
from .budget import DecodeBudget, fit_pixels
from .clip import MediaClip
from .decode import decode, remix, resample, too_long
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
    """A clip from decoded arrays (numpy, or anything ``np.asarray`` reads, e.g. a CPU tensor), checked as
    `avjudge.media.arrays` says (a refused input is a `MediaError`).

    Args:
        frames: (T, H, W, 3) uint8 RGB, or float in [0, 1] as (T, H, W, 3) or (T, 3, H, W).
        fps: the frames' rate (they are taken as evenly spaced from time 0).
        audio: a waveform, (N,) mono or (C, N) (or (N, C)), float in [-1, 1] or integer PCM.
        sample_rate: the waveform's rate.
        source: how messages name the clip.
    """
    if frames is None and audio is None:
        raise MediaError(source, "a clip in memory needs frames, audio or both")
    if frames is not None and fps is None:
        raise MediaError(source, "frames in memory need their fps")
    if audio is not None and sample_rate is None:
        raise MediaError(source, "audio in memory needs its sample_rate")
    video = None if frames is None else arrays.picture(frames, source)
    sound = None if audio is None else arrays.waveform(audio, source)
    fps, sample_rate, duration = arrays.checked_extent(video, fps, sound, sample_rate, source)
    return MediaClip(
        frames=video,
        fps=fps,
        timestamps=None if video is None else np.arange(len(video), dtype=np.float64) / fps,
        audio=sound,
        sample_rate=None if sound is None else int(round(sample_rate)),
        duration=duration,
        source=source,
    )


def conform(clip: MediaClip, needs: DecodeNeeds) -> MediaClip:
    """A clip in memory as decoding its file with ``needs`` gives it: the streams checked, frames at the plan's
    rate and at most its pixels, its first ``max_seconds`` only, audio mixed to its channels and resampled to its rate
    (as `avjudge.media.decode` does all of them)."""
    name = clip.source or IN_MEMORY
    if needs.video and clip.frames is None:
        raise MediaError(name, "has no video frames")
    if needs.audio and clip.audio is None:
        raise MediaError(name, "has no audio")
    if needs.longest is not None and clip.duration > needs.longest + 1e-6:
        raise MediaError(name, too_long(clip.duration, needs.longest))
    changes = {}
    if needs.video and needs.fps != NATIVE_FPS and abs(clip.fps - needs.fps) > 1e-9:
        shown = frame_indices(clip.timestamps, clip.start, clip.duration, needs.fps)
        changes.update(
            frames=clip.frames[shown],
            fps=float(needs.fps),
            timestamps=clip.start + np.arange(len(shown)) / needs.fps,
        )
    if needs.max_seconds is not None and clip.duration > needs.max_seconds:  # only its head is read
        clip, changes = clip.replace(**changes).window(0.0, needs.max_seconds), {}
    if needs.video and needs.max_pixels is not None and clip.frames.shape[1] * clip.frames.shape[2] > needs.max_pixels:
        changes["frames"] = np.stack([fit_pixels(f, needs.max_pixels) for f in changes.get("frames", clip.frames)])
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


def load_clip(
    video: Encoded | MediaClip | None,
    needs: DecodeNeeds,
    audio: Encoded | None = None,
    budget: DecodeBudget = DecodeBudget(),
) -> MediaClip:
    """The clip of an input as ``needs`` asks: ``video`` a file, its bytes, or a `MediaClip` in memory; ``audio``
    a file (or bytes) whose sound replaces the video's own track, or stands alone where there is no video. Each is
    held to ``budget`` before it is decoded (a clip in memory: by its arrays).

    Raises:
        MediaError: the input cannot give what ``needs`` asks (no such file, a stream missing, corrupt data), or asks
            more than ``budget``.
    """
    if isinstance(video, MediaClip):
        if audio is not None:
            raise MediaError(video.source or IN_MEMORY, "a clip in memory carries its own audio; give no audio file")
        _within(budget, video)
        return conform(video, needs)
    plan = {**needs.options(), "budget": budget}
    sound = {key: plan[key] for key in ("sample_rate", "channels", "audio_to_end", "end", "budget", "longest")}
    if video is None and audio is None:
        raise MediaError(None, "no media: give a video, an audio file or a clip in memory")
    if video is None and needs.video:
        raise MediaError(media_name(audio), "is audio alone, and frames are needed")
    if audio is not None and not needs.video:  # the separate sound is all that is read
        return decode(audio, video=False, audio=True, **sound)
    own_audio = needs.audio and audio is None
    clip = decode(video, **{**plan, "audio": own_audio})
    if needs.audio and audio is not None:
        track = decode(audio, video=False, audio=True, **sound)
        clip = clip.replace(audio=track.audio, sample_rate=track.sample_rate)
    return clip


def _within(budget: DecodeBudget, clip: MediaClip) -> None:
    """A clip in memory held to the budget a file is: its length, its frames' size, what its arrays hold."""
    frames = None if clip.frames is None else (clip.frames.shape[2], clip.frames.shape[1])
    sound = None if clip.audio is None else (clip.sample_rate, clip.audio.shape[0])
    budget.check(clip.source or IN_MEMORY, clip.duration, frames, None, clip.fps, sound)  # kept as they are
