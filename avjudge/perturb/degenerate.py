"""Degenerate clips (family ``degenerate``): what a generator drifts toward when it games a reward (reward hacking)
rather than what a real clip gets wrong. The reward audit (`avjudge.rewards.audit`) scores a reward on them; a recipe
may weigh them like any strategy, so judges learn to refuse them.

Unlike the audio strategies, some change the picture: black frames, the first frame frozen, the first second looped,
the frames reversed or shuffled; others the sound: silence, white noise. Beside them, one nuisance that is not a
fault (family ``nuisance``): a stretch muted and black on both streams at once, which a judge must not punish.
"""

from __future__ import annotations

import numpy as np

from .base import Bounds, PerturbError, Range, Strategy, audio_of, frames_of, register

_SEED = Range(0, 2**31 - 1, bounds=Bounds(0, 2**31 - 1))  # drawn as a float; applied as its whole part


class _Degenerate(Strategy):
    family = "degenerate"


@register
class BlackFrames(_Degenerate):
    name = "black_frames"
    description = "every frame black, the sound kept"
    tells = ("video",)

    def apply(self, clip, params, ctx):
        return clip.replace(frames=np.zeros_like(frames_of(clip)))


@register
class FrozenFrame(_Degenerate):
    name = "frozen_frame"
    description = "the first frame held for the whole clip, the sound kept"
    tells = ("video",)

    def apply(self, clip, params, ctx):
        frames = frames_of(clip)
        return clip.replace(frames=np.ascontiguousarray(np.broadcast_to(frames[:1], frames.shape)))


@register
class LoopedFirstSecond(_Degenerate):
    name = "looped_first_second"
    description = "the first second, picture and sound, repeated to the clip's length"
    tells = ("audio", "video")

    def apply(self, clip, params, ctx):
        changes = {}
        if clip.frames is not None:
            first = clip.frames[clip.timestamps < clip.start + 1.0] if clip.timestamps is not None else clip.frames
            first = first if len(first) else clip.frames[:1]
            changes["frames"] = np.ascontiguousarray(np.resize(first, clip.frames.shape))
        if clip.audio is not None:
            second = clip.audio[:, : max(1, clip.sample_rate)]
            reps = -(-clip.audio.shape[1] // second.shape[1])
            changes["audio"] = np.ascontiguousarray(np.tile(second, (1, reps))[:, : clip.audio.shape[1]])
        return clip.replace(**changes)


@register
class ReversedFrames(_Degenerate):
    name = "reversed_frames"
    description = "the frames in reverse order, the sound kept"
    tells = ("video",)

    def apply(self, clip, params, ctx):
        return clip.replace(frames=np.ascontiguousarray(frames_of(clip)[::-1]))


@register
class ShuffledFrames(_Degenerate):
    name = "shuffled_frames"
    description = "the frames in a random order, the sound kept"
    tells = ("video",)
    defaults = {"seed": _SEED}

    def apply(self, clip, params, ctx):
        frames = frames_of(clip)
        order = np.random.default_rng(int(params["seed"])).permutation(len(frames))
        return clip.replace(frames=np.ascontiguousarray(frames[order]))


@register
class Silence(_Degenerate):
    name = "silence"
    description = "the sound silenced, the picture kept"
    tells = ("audio",)

    def apply(self, clip, params, ctx):
        return clip.replace(audio=np.zeros_like(audio_of(clip)))


@register
class WhiteNoise(_Degenerate):
    name = "white_noise"
    description = "the sound replaced by white noise of the same loudness"
    tells = ("audio",)
    defaults = {"seed": _SEED}

    def apply(self, clip, params, ctx):
        audio = audio_of(clip)
        rms = float(np.sqrt(np.mean(audio.astype(np.float64) ** 2))) or 0.1
        noise = np.random.default_rng(int(params["seed"])).standard_normal(audio.shape) * rms
        return clip.replace(audio=np.clip(noise, -1, 1).astype(np.float32))


@register
class InSyncMute(Strategy):
    """Not a negative: a nuisance both streams share (PEAVS's in-sync mutes and black frames), so silence alone is
    never evidence of a mismatch. A recipe's ``nuisance_positives`` makes positives of it; the reward audit checks
    that a judge does not punish it."""

    name = "in_sync_mute"
    family = "nuisance"
    description = "a stretch silent and black on both streams at once (in sync: a positive, not a negative)"
    defaults = {
        "start_s": Range(0.0, 1.0, unit="s", bounds=Bounds(0.0)),
        "length_s": Range(0.3, 0.8, unit="s", bounds=Bounds(0.0, above=True)),
    }

    def apply(self, clip, params, ctx):
        begin, length = params["start_s"], params["length_s"]
        if begin >= clip.duration:
            raise PerturbError(f"a mute from {begin:g} s is past the {clip.duration:.2f} s clip: it would mute nothing")
        audio, frames = audio_of(clip).copy(), frames_of(clip).copy()
        audio[:, int(round(begin * clip.sample_rate)) : int(round((begin + length) * clip.sample_rate))] = 0.0
        at = clip.timestamps - clip.start
        frames[(at >= begin - 1e-6) & (at < begin + length - 1e-6)] = 0
        return clip.replace(audio=audio, frames=frames)
