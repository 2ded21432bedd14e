"""Audio-video hard negatives (AVBench Table 3 and §3.2): the picture stays, the audio changes.

Default ranges are the paper's main text (§3.2); its appendix (§7.1) gives others (micro
< 0.1 s, medium 0.5-2 s), which a recipe sets as parameter overrides.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy.signal import butter, resample_poly, sosfiltfilt

from ..media import MediaClip
from .base import Bounds, Choice, Context, PerturbError, Range, Strategy, audio_of, register
from .signal import fit_length, mix_at_snr, pink_noise

_SNR = Bounds(-100.0, 100.0)  # dB: beyond it one signal is a 1e-5 trace of the other
_SEED = Bounds(0, 2**63 - 1, integer=True)  # what numpy's generators take
_SHIFT = Bounds(0.0)  # a magnitude, seconds; the clip's own length bounds it when applied
_FACTOR = Bounds(0.1, 10.0)  # a speed: the resampling ratio's terms stay small
_CUTOFF = Bounds(0.0, above=True)  # Hz; the clip's Nyquist frequency bounds it when applied
PITCH_NOTICEABLE = 0.15  # semitones: a pitch JND of 10-20 cents near 1 kHz (SonicBench's Appendix A)
# a filter's cutoff inside the sound's band: under 20 Hz nothing is heard to remove, and a low-pass near the Nyquist
# frequency keeps all but a sliver (at 16 kHz, 7,999 Hz changed a clip by less than its re-encoding did)
AUDIBLE_LOW_HZ, BAND_TOP = 20.0, 0.95
_ORDER = Bounds(1, 16, integer=True)  # a Butterworth order: 0 would pass the sound unchanged


def _with_audio(clip: MediaClip, audio: np.ndarray) -> MediaClip:
    return clip.replace(audio=np.ascontiguousarray(audio, dtype=np.float32))


def shift(audio: np.ndarray, samples: int) -> np.ndarray:
    """Positive: the audio comes later than the picture (silence first); negative: earlier."""
    n = audio.shape[1]
    out = np.zeros_like(audio)
    if samples >= 0:
        out[:, samples:] = audio[:, : max(n - samples, 0)]
    else:
        out[:, : max(n + samples, 0)] = audio[:, -samples:]
    return out


class _TimeShift(Strategy):
    """``fill``: what the shift does where one stream has nothing left to show. ``window`` (the default, Synchformer's
    way) cuts both streams to the stretch where both are real, the sound taken from ``shift_s`` earlier or later in the
    source, so only the audio-visual alignment gives the shift away; a pair's window is drawn inside that stretch.
    ``silence`` (the AVBench paper's way) pads a silent head or tail a judge can hear without looking; ``wrap``
    rotates the track, which puts a seam in it."""

    family = "temporal"
    # ITU-R BT.1359-1: sound ahead of the picture is detectable from about 45 ms (sound behind it from 125 ms)
    noticeable = {"shift_s": 0.045}
    noticeable_units = {"shift_s": " s"}
    optional = ("fill",)  # records from before `window` existed were padded

    def apply(self, clip, params, ctx):
        audio = audio_of(clip)
        samples = int(round(params["shift_s"] * clip.sample_rate))
        if abs(samples) >= audio.shape[1]:
            raise PerturbError(f"a shift of {params['shift_s']:.2f} s is longer than the clip")
        fill = params.get("fill", "silence")  # records from before `window` existed were padded
        if fill == "window":
            seconds = samples / clip.sample_rate
            length = audio.shape[1] / clip.sample_rate - abs(seconds)
            return clip.window(max(seconds, 0.0), length, audio_offset=max(-seconds, 0.0))
        if fill == "wrap":
            return _with_audio(clip, np.roll(audio, samples, axis=1))
        return _with_audio(clip, shift(audio, samples))

    def kept_span(self, params, duration, ctx):
        if params.get("fill", "silence") != "window":
            return 0.0, duration
        return max(params["shift_s"], 0.0), duration + min(params["shift_s"], 0.0)

    def largest_cut(self):
        return self.ranges["shift_s"].high if "window" in self.ranges["fill"].options else 0.0

    def sample_fitting(self, rng, ctx, window, duration, tries=20):
        """A cut shift drawn uniformly among those whose sound, taken ``shift_s`` earlier or later, stays inside the
        source for this window: any window place fits every shift type, so where a window sits says nothing of it."""
        fill = self.ranges["fill"].sample(rng)
        if fill != "window":
            return {"shift_s": self.ranges["shift_s"].sample(rng), "fill": fill}
        start, spec = window["start_s"], self.ranges["shift_s"]
        lowest = start + window["duration_s"] - duration  # the sound must start at or after the source's start...
        intervals = [(max(spec.low, lowest), min(spec.high, start))]  # ... and end at or before its end
        if spec.signed:
            intervals.append((max(-spec.high, lowest), min(-spec.low, start)))
        intervals = [(low, high) for low, high in intervals if high >= low - 1e-9]
        if not intervals:
            raise PerturbError(f"no shift of {spec.describe()} keeps the window at {start:.2f} s of {duration:.2f} s")
        lengths = np.array([high - low for low, high in intervals]) + 1e-12
        low, high = intervals[int(rng.choice(len(intervals), p=lengths / lengths.sum()))]
        return {"shift_s": float(rng.uniform(low, max(low, high))), "fill": fill}


_FILL = Choice(("window",), allowed=("silence", "wrap"))


@register
class TimeShiftMicro(_TimeShift):
    name = "time_shift_micro"
    description = "audio moved a fraction of a second against the picture (high-precision temporal negative)"
    defaults = {"shift_s": Range(0.2, 1.0, signed=True, unit="s", bounds=_SHIFT), "fill": _FILL}


@register
class TimeShiftMedium(_TimeShift):
    name = "time_shift_medium"
    description = "audio moved seconds against the picture (temporal negative)"
    defaults = {"shift_s": Range(1.0, 3.0, signed=True, unit="s", bounds=_SHIFT), "fill": _FILL}


@register
class SpeedChange(Strategy):
    name = "speed_change"
    family = "acoustic"
    description = "audio played faster or slower (pitch follows); the clip cut to the faster sound, never padded"
    defaults = {
        "factor": Range(0.8, 1.2, unit="x", bounds=_FACTOR),
        "min_deviation": Range(0.05, 0.05, bounds=Bounds(0.0, 0.9)),
    }
    stored = {"factor": _FACTOR}
    tells = ("audio",)
    # played faster or slower, the pitch moves with it: the pitch step a person notices (PitchShift's) bounds it
    noticeable = {"factor": PITCH_NOTICEABLE}
    noticeable_units = {"factor": " semitones of pitch"}

    @classmethod
    def departure(cls, name, value):
        return 12 * abs(math.log2(value)) if name == "factor" else abs(value)

    def least_departure(self):
        lo, hi, dev = self.ranges["factor"].low, self.ranges["factor"].high, self.ranges["min_deviation"].low
        nearest = min((f for f in (lo, hi, 1 - dev, 1 + dev) if lo <= f <= hi), key=lambda f: abs(f - 1), default=lo)
        return {"factor": self.departure("factor", nearest)}

    def sample(self, rng, clip, ctx):
        lo, hi = self.ranges["factor"].low, self.ranges["factor"].high
        dev = self.ranges["min_deviation"].low
        for _ in range(100):
            factor = float(rng.uniform(lo, hi))
            if abs(factor - 1.0) >= dev:
                return {"factor": factor}
        raise PerturbError(f"factor range {lo}..{hi} has nothing at least {dev} away from 1")

    def apply(self, clip, params, ctx):
        audio = audio_of(clip)
        ratio = Fraction(params["factor"]).limit_denominator(1000)
        # playing f times faster = resampling to 1/f of the samples
        faster = resample_poly(audio, ratio.denominator, ratio.numerator, axis=1)
        if faster.shape[1] >= audio.shape[1]:
            return _with_audio(clip, faster[:, : audio.shape[1]])
        # faster sound ends early: the clip ends with it (silence after it would be a tell of its own)
        return _with_audio(clip, faster).window(0.0, faster.shape[1] / clip.sample_rate)

    def kept_span(self, params, duration, ctx):
        return 0.0, duration / max(params["factor"], 1.0)


@register
class PitchShift(Strategy):
    name = "pitch_shift"
    family = "acoustic"
    description = "pitch moved by a few semitones, duration and timing kept (speaker / physical negative)"
    # Rubber Band's limit through pedalboard: ±72 semitones
    defaults = {"semitones": Range(2.0, 3.0, signed=True, unit="semitones", bounds=Bounds(0.0, 72.0))}
    noticeable = {"semitones": PITCH_NOTICEABLE}
    noticeable_units = {"semitones": " semitones"}
    tells = ("audio",)

    def apply(self, clip, params, ctx):
        import pedalboard

        audio = audio_of(clip)
        # offline Rubber Band: no latency to undo; the faster engine measured as accurate as the high-quality one
        shifted = pedalboard.time_stretch(
            audio,
            clip.sample_rate,
            stretch_factor=1.0,
            pitch_shift_in_semitones=params["semitones"],
            high_quality=False,
        )
        return _with_audio(clip, fit_length(shifted, audio.shape[1]))


@register
class Filter(Strategy):
    name = "filter"
    family = "acoustic"
    description = "high- or low-pass filtering, zero phase (acoustic structural negative)"
    defaults = {
        "kind": Choice(("lowpass", "highpass")),
        "lowpass_hz": Range(300.0, 1000.0, unit="Hz", bounds=_CUTOFF),
        "highpass_hz": Range(2000.0, 4000.0, unit="Hz", bounds=_CUTOFF),
        "order": Range(6, 6, bounds=_ORDER),
    }
    stored = {"kind": Choice(("lowpass", "highpass")), "cutoff_hz": _CUTOFF, "order": _ORDER}
    tells = ("audio",)

    def sample(self, rng, clip, ctx):
        kind = self.ranges["kind"].sample(rng)
        cutoff = self.ranges[f"{kind}_hz"].sample(rng)
        return {"kind": kind, "cutoff_hz": cutoff, "order": int(self.ranges["order"].low)}

    def apply(self, clip, params, ctx):
        audio = audio_of(clip)
        low, high = AUDIBLE_LOW_HZ, BAND_TOP * clip.sample_rate / 2
        if not low <= params["cutoff_hz"] <= high:
            raise PerturbError(
                f"a {params['kind']} cutoff of {params['cutoff_hz']:.0f} Hz is outside the sound's band ({low:.0f} to "
                f"{high:.0f} Hz at {clip.sample_rate} Hz): it would leave the sound as it was, or fail"
            )
        sos = butter(params["order"], params["cutoff_hz"], params["kind"], fs=clip.sample_rate, output="sos")
        return _with_audio(clip, sosfiltfilt(sos, audio, axis=1))


def _need_pool(ctx: Context, name: str):
    if ctx.pool is None:
        raise PerturbError(f"{name} borrows audio from other clips: give it a source pool")
    return ctx.pool


def _record_id(ctx: Context) -> str | None:
    return ctx.record.get("id") if ctx.record else None


@register
class NoiseAddition(Strategy):
    name = "noise_addition"
    family = "scene"
    description = "noise mixed in at a set SNR: white, pink, babble of other clips, or another clip's ambience"
    defaults = {
        "kind": Choice(("white", "pink", "babble", "ambience")),
        "snr_db": Range(0.0, 15.0, unit="dB", bounds=_SNR),
        "babble_voices": Range(3, 5, bounds=Bounds(1, 32, integer=True)),
    }
    stored = {"kind": Choice(("white", "pink", "babble", "ambience")), "snr_db": _SNR, "seed": _SEED, "sources": list}
    optional = ("sources",)  # white and pink noise borrow no clip
    tells = ("audio",)

    @classmethod
    def check_params(cls, params):
        params = super().check_params(params)
        sources = params.get("sources", [])
        if (params["kind"] in ("babble", "ambience") and not sources) or not all(isinstance(s, str) for s in sources):
            raise PerturbError(f"{cls.name}.sources: {params['kind']} noise names the ids of the clips it mixes in")
        return params

    def sample(self, rng, clip, ctx):
        kind = self.ranges["kind"].sample(rng)
        params = {"kind": kind, "snr_db": self.ranges["snr_db"].sample(rng), "seed": int(rng.integers(2**31))}
        if kind in ("babble", "ambience"):
            pool = _need_pool(ctx, f"noise_addition ({kind})")
            count = int(rng.integers(self.ranges["babble_voices"].low, self.ranges["babble_voices"].high + 1))
            params["sources"] = [
                pool.random_other(rng, _record_id(ctx)) for _ in range(count if kind == "babble" else 1)
            ]
        return params

    def apply(self, clip, params, ctx):
        audio = audio_of(clip)
        n = audio.shape[1]
        rng = np.random.default_rng(params["seed"])
        if params["kind"] == "white":
            noise = rng.standard_normal(audio.shape)
        elif params["kind"] == "pink":
            noise = np.stack([pink_noise(n, rng) for _ in range(audio.shape[0])])
        else:
            pool = _need_pool(ctx, "noise_addition")
            parts = [fit_length(pool.audio(s, clip.sample_rate, audio.shape[0]), n) for s in params["sources"]]
            noise = np.sum(parts, axis=0)
        return _with_audio(clip, mix_at_snr(audio, noise, params["snr_db"]))


@register
class RandomMismatch(Strategy):
    name = "random_mismatch"
    family = "semantic"
    description = "the audio of a random other clip (basic semantic negative)"
    needs_pool = True
    stored = {"source": str}

    def sample(self, rng, clip, ctx):
        return {"source": _need_pool(ctx, self.name).random_other(rng, _record_id(ctx))}

    def apply(self, clip, params, ctx):
        audio = audio_of(clip)
        other = _need_pool(ctx, self.name).audio(params["source"], clip.sample_rate, audio.shape[0])
        if other.shape[1] >= audio.shape[1]:
            return _with_audio(clip, other[:, : audio.shape[1]])
        # a shorter clip's sound: the clip ends with it rather than fall silent
        return _with_audio(clip, other).window(0.0, other.shape[1] / clip.sample_rate)

    def kept_span(self, params, duration, ctx):
        return 0.0, min(duration, _need_pool(ctx, self.name).duration(params["source"]))


@register
class SemanticMismatch(RandomMismatch):
    name = "semantic_mismatch"
    description = "the audio of a clip whose audio caption is among the most similar (high-level semantic negative)"
    defaults = {"top_k": Range(3, 3, bounds=Bounds(1, integer=True))}

    def sample(self, rng, clip, ctx):
        pool = _need_pool(ctx, self.name)
        if _record_id(ctx) is None:
            raise PerturbError("semantic_mismatch needs the clip's source record to find its neighbours")
        return {"source": pool.nearest(_record_id(ctx), rng, int(self.ranges["top_k"].low))}


@register
class SpeakerCount(Strategy):
    name = "speaker_count"
    family = "scene"
    description = "an extra voice speaking over the clip (speaker-count conflict); needs espeak-ng"
    defaults = {
        "voice": Choice(("male", "female")),
        "snr_db": Range(0.0, 6.0, unit="dB", bounds=_SNR),
        "offset_s": Range(0.0, 1.5, unit="s", bounds=Bounds(0.0)),
    }
    stored = {"text": str, "voice": Choice(("male", "female")), "snr_db": _SNR, "offset_s": Bounds(0.0)}
    tells = ("audio",)  # a second voice over the first is heard without the picture

    def sample(self, rng, clip, ctx):
        pool = _need_pool(ctx, self.name)
        texts = pool.utterances(_record_id(ctx))
        text = texts[int(rng.integers(len(texts)))][1] if texts else "and then I heard someone say something else"
        return {"text": text, **super().sample(rng, clip, ctx)}

    def apply(self, clip, params, ctx):
        from .sources import synthesize

        audio = audio_of(clip)
        try:
            voice = synthesize(params["text"], params["voice"], clip.sample_rate)
        except RuntimeError as err:
            raise PerturbError(str(err)) from err
        extra = shift(
            fit_length(np.repeat(voice[None], audio.shape[0], 0), audio.shape[1]),
            int(params["offset_s"] * clip.sample_rate),
        )
        return _with_audio(clip, mix_at_snr(audio, extra, params["snr_db"]))


# background (clip metadata) -> ambiences that contradict it
_OPPOSITE_AMBIENCE = {"indoor": ("rain", "wind"), "outdoor": ("hum", "babble")}


@register
class AmbienceSwap(Strategy):
    name = "ambience_swap"
    family = "scene"
    description = "ambience of the other kind of place mixed in (indoor picture, outdoor rain; and the reverse)"
    defaults = {"snr_db": Range(0.0, 10.0, unit="dB", bounds=_SNR)}
    stored = {"ambience": Choice(("rain", "wind", "hum", "babble")), "snr_db": _SNR, "seed": _SEED}
    tells = ("audio",)  # a second ambience mixed over the clip's own

    def sample(self, rng, clip, ctx):
        background = ((ctx.record or {}).get("meta") or {}).get("background")
        options = _OPPOSITE_AMBIENCE.get(background, ("rain", "wind", "hum", "babble"))
        return {
            "ambience": str(options[int(rng.integers(len(options)))]),
            "snr_db": self.ranges["snr_db"].sample(rng),
            "seed": int(rng.integers(2**31)),
        }

    def apply(self, clip, params, ctx):
        from .sources import ambience

        audio = audio_of(clip)
        bed = ambience(params["ambience"], audio.shape[1], clip.sample_rate, np.random.default_rng(params["seed"]))
        return _with_audio(clip, mix_at_snr(audio, np.repeat(bed[None], audio.shape[0], 0), params["snr_db"]))
