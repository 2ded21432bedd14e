"""SonicBench-style stimuli with exact labels, generated then measured.

For each of the 12 attributes and both paradigms the generator draws a value on the attribute's scale (recognition:
above or below the paper's threshold, kept a margin away from it; comparison: two values at least a margin apart),
renders synthetic sound with that value and everything else held fixed (4 s clips; a comparison is two clips with
exactly 0.5 s of silence between them and 10 ms fades), writes 16-bit WAV and measures the written file with
`avjudge.omni.meters`. An item whose measurement disagrees with its label is rendered again from a new
draw (up to a few times) or rejected, and counted.

The sounds are synthetic, not the paper's recordings: harmonic tones, noise bursts and clicks, so that every
attribute is set and measured exactly. Where the paper's attribute is semantic (timbre: which instrument; texture:
which ESC-50 class) it becomes a physical one here (timbre: hollow odd-harmonic tone against a full one; texture:
rough, 20-120 Hz amplitude modulation, against smooth). Direction is left against right (ITD and ILD of a spherical
head): front against back needs an HRTF set, and none installs here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.signal import fftconvolve

from ... import meters

SAMPLE_RATE = 16000
CLIP = 4.0  # seconds, each clip
GAP = 0.5  # seconds of silence between a comparison's clips
FADE = 0.010
LEVEL_LUFS = -23.0  # where the attributes other than loudness sit
CLAP_LUFS = -40.0  # claps in a room: sparse, so their peaks stand far above their loudness
WOODWORTH = meters.HEAD_RADIUS / meters.SPEED_OF_SOUND


@dataclass(frozen=True)
class Attribute:
    """One attribute: its scale, the paper's threshold, the margins, how to render and measure it, and its wording."""

    name: str
    unit: str
    low: float
    high: float
    threshold: float
    gap: float  # recognition values stay this far from the threshold (a ratio on a log scale)
    margin: float  # comparison values differ at least this much (a ratio on a log scale)
    render: Callable[[float, np.random.Generator], np.ndarray]
    measure: Callable[[np.ndarray, int], float]
    above: str  # what "above the threshold" sounds like, for the prompt
    below: str
    recognition_question: str
    comparison_question: str  # "which clip ..." is more
    log: bool = False  # draw on a log scale (ratios are what is heard)
    integer: bool = False  # a count

    def _value(self, s: float) -> float:
        v = self.unscale(s)
        return float(round(v)) if self.integer else v

    def scale(self, v: float) -> float:
        return float(np.log(v)) if self.log else float(v)

    def unscale(self, s: float) -> float:
        return float(np.exp(s)) if self.log else float(s)

    def draw_recognition(self, above: bool, rng: np.random.Generator) -> float:
        t, g = self.scale(self.threshold), np.log(self.gap) if self.log else self.gap
        lo, hi = (t + g, self.scale(self.high)) if above else (self.scale(self.low), t - g)
        return self._value(rng.uniform(lo, hi))

    def draw_pair(self, first_is_larger: bool, rng: np.random.Generator) -> tuple[float, float]:
        lo, hi = self.scale(self.low), self.scale(self.high)
        m = np.log(self.margin) if self.log else self.margin
        small = rng.uniform(lo, hi - m)
        large = rng.uniform(small + m, hi)
        pair = (self._value(large), self._value(small))
        return pair if first_is_larger else pair[::-1]


# ---- building blocks ----------------------------------------------------------------------------------------------


def _time(seconds: float) -> np.ndarray:
    return np.arange(int(round(seconds * SAMPLE_RATE))) / SAMPLE_RATE


def fade(x: np.ndarray, seconds: float = FADE) -> np.ndarray:
    n = min(int(seconds * SAMPLE_RATE), len(x) // 2)
    ramp = np.sin(np.linspace(0, np.pi / 2, n)) ** 2
    x = x.copy()
    x[:n] *= ramp[:, None] if x.ndim == 2 else ramp
    x[len(x) - n :] *= ramp[::-1, None] if x.ndim == 2 else ramp[::-1]
    return x


def _place(sound: np.ndarray, start: float, total: float = CLIP) -> np.ndarray:
    out = np.zeros((int(round(total * SAMPLE_RATE)),) + sound.shape[1:])
    s = int(start * SAMPLE_RATE)
    out[s : s + len(sound)] = sound[: len(out) - s]
    return out


def _at_level(x: np.ndarray, lufs: float) -> np.ndarray:
    """Scaled so that its unweighted mean square over the sounding part reads ``lufs`` (the renderer's own rule;
    the meters' K-weighted BS.1770 loudness is what labels it)."""
    sounding = x[np.abs(x) > 1e-4 * np.abs(x).max()]
    rms = np.sqrt(np.mean(sounding**2))
    return x * (10 ** ((lufs + 0.691) / 20) / rms)


def harmonic_tone(f0: float, seconds: float, amplitudes, rng: np.random.Generator) -> np.ndarray:
    """A sum of harmonics k*f0 with the given amplitudes (below 0.45 fs), random phases, 10 ms fades."""
    t = _time(seconds)
    x = np.zeros_like(t)
    for k, a in enumerate(amplitudes, start=1):
        if a and k * f0 < 0.45 * SAMPLE_RATE:
            x += a * np.sin(2 * np.pi * k * f0 * t + rng.uniform(0, 2 * np.pi))
    return fade(x, 0.002)


def _tone(f0: float, seconds: float, rng: np.random.Generator, harmonics: int = 6) -> np.ndarray:
    return harmonic_tone(f0, seconds, [1 / k for k in range(1, harmonics + 1)], rng)


def _hit(rng: np.random.Generator, seconds: float = 0.12) -> np.ndarray:
    """A drum-like hit: a decaying noise burst over a decaying low tone."""
    t = _time(seconds)
    envelope = np.exp(-t / 0.03)
    return fade((0.6 * rng.standard_normal(len(t)) + np.sin(2 * np.pi * 180 * t)) * envelope, 0.002)


def _room(rt60: float, direct_gain: float, rng: np.random.Generator, length: float = 1.2) -> np.ndarray:
    """An impulse response: a direct impulse, then exponentially decaying noise of unit energy (a diffuse tail whose
    energy falls 60 dB in ``rt60``) from 3 ms."""
    t = _time(length)
    tail = rng.standard_normal(len(t)) * 10 ** (-3 * t / rt60)
    tail[: int(0.003 * SAMPLE_RATE)] = 0
    tail /= np.sqrt(np.sum(tail**2))
    tail[0] = direct_gain
    return tail


def _click() -> np.ndarray:
    return np.array([1.0, -0.5, 0.25])


# ---- renderers: value -> one 4 s clip -------------------------------------------------------------------------------


def render_pitch(note: float, rng) -> np.ndarray:
    return _at_level(_place(_tone(440 * 2 ** ((note - 69) / 12), 3.5, rng), 0.25), LEVEL_LUFS)


def _tilt_for_centroid(f0: float, centroid: float, harmonics: int) -> np.ndarray:
    """Harmonic amplitudes k^-alpha with alpha chosen (bisection) so that the power centroid is ``centroid``."""
    k = np.arange(1, harmonics + 1)
    lo, hi = -1.0, 6.0
    for _ in range(60):
        alpha = (lo + hi) / 2
        p = k ** (-2 * alpha)
        lo, hi = (alpha, hi) if np.sum(k * f0 * p) / np.sum(p) > centroid else (lo, alpha)
    return k ** (-alpha)


def render_brightness(centroid: float, rng) -> np.ndarray:
    f0 = rng.uniform(180, 260)
    harmonics = int(0.45 * SAMPLE_RATE // f0)
    return _at_level(_place(harmonic_tone(f0, 3.5, _tilt_for_centroid(f0, centroid, harmonics), rng), 0.25), LEVEL_LUFS)


def render_loudness(lufs: float, rng) -> np.ndarray:
    return _at_level(_place(_tone(rng.uniform(300, 500), 3.5, rng, harmonics=3), 0.25), lufs)


def velocity_db(velocity: float) -> float:
    """The attack's peak above the sustain, in dB, of a note struck at MIDI ``velocity`` (this generator's law)."""
    return 3.0 + 18.0 * velocity / 127


def render_velocity(velocity: float, rng) -> np.ndarray:
    """A tone whose first 100 ms swell above its sustain by `velocity_db` (a 2 ms onset, so the swell is heard)."""
    t = _time(3.5)
    attack = 10 ** (velocity_db(velocity) / 20)
    envelope = 1 + (attack - 1) * np.exp(-t / 0.1)
    x = fade(_tone(rng.uniform(200, 400), 3.5, rng) * envelope, 0.002)
    return _at_level(_place(x, 0.25), LEVEL_LUFS)


def render_duration(seconds: float, rng) -> np.ndarray:
    return _at_level(_place(_tone(rng.uniform(250, 450), seconds, rng), 0.1), LEVEL_LUFS)


def render_tempo(bpm: float, rng) -> np.ndarray:
    """Hits every beat across the whole 4 s (the clip's length never changes with the tempo)."""
    x = np.zeros(int(CLIP * SAMPLE_RATE))
    hit = _hit(rng)
    for start in np.arange(rng.uniform(0.05, 0.15), CLIP - 0.15, 60 / bpm):
        s = int(start * SAMPLE_RATE)
        x[s : s + len(hit)] += hit
    return _at_level(x, LEVEL_LUFS)


def render_direction(degrees: float, rng) -> np.ndarray:
    """Pink-ish noise bursts from ``degrees`` to the right: the Woodworth ITD as a fractional delay of the far ear,
    and an ILD of up to 10 dB."""
    noise = np.cumsum(rng.standard_normal(int(3.5 * SAMPLE_RATE))) * 0.02
    noise = np.diff(noise, prepend=0) + 0.3 * noise / np.abs(noise).max()
    bursts = (np.sin(2 * np.pi * 2 * _time(3.5)) > -0.3).astype(float)
    mono = fade(noise * bursts)
    theta = np.radians(degrees)
    itd = WOODWORTH * (theta + np.sin(theta))
    spectrum = np.fft.rfft(mono)
    freqs = np.fft.rfftfreq(len(mono), 1 / SAMPLE_RATE)
    delayed = np.fft.irfft(spectrum * np.exp(-2j * np.pi * freqs * abs(itd)), len(mono))
    ild = 10 ** (10 * abs(np.sin(theta)) / 20)
    near, far = mono * np.sqrt(ild), delayed / np.sqrt(ild)
    stereo = np.stack([far, near] if degrees > 0 else [near, far], axis=1)
    return _at_level(_place(stereo, 0.25), LEVEL_LUFS)


ROOM_RT60 = 0.6  # the room the distance stimuli are in
CRITICAL_DISTANCE = 1.0  # metres where the direct sound's energy equals the diffuse tail's


def _claps(ir: np.ndarray, times=(0.2, 1.5, 2.8)) -> np.ndarray:
    x = np.zeros(int(CLIP * SAMPLE_RATE))
    for start in times:
        x[int(start * SAMPLE_RATE) : int(start * SAMPLE_RATE) + 3] += _click()
    return fftconvolve(x, ir)[: len(x)]


def render_distance(metres: float, rng) -> np.ndarray:
    """Three claps in one room; only the direct sound's share changes, the level is compensated."""
    return _at_level(_claps(_room(ROOM_RT60, CRITICAL_DISTANCE / metres, rng)), CLAP_LUFS)


def render_reverberation(rt60: float, rng) -> np.ndarray:
    return _at_level(_claps(_room(rt60, 1.0, rng, length=min(2.0, 1.5 * rt60 + 0.2)), times=(0.2, 2.2)), CLAP_LUFS)


def render_texture(depth: float, rng) -> np.ndarray:
    """A steady tone amplitude-modulated at 30-70 Hz (rough when deep, smooth when shallow)."""
    t = _time(3.5)
    modulation = 1 + depth * np.sin(2 * np.pi * rng.uniform(30, 70) * t)
    return _at_level(_place(_tone(rng.uniform(300, 500), 3.5, rng) * modulation, 0.25), LEVEL_LUFS)


def render_timbre(even_db: float, rng) -> np.ndarray:
    """A 1/k tone of 10 harmonics whose even harmonics hold ``even_db`` of energy against the odd ones above the
    fundamental (hollow, clarinet-like, when far below 0 dB)."""
    k = np.arange(1, 11)
    full_ratio = np.sum(1 / k[1::2] ** 2) / np.sum(1 / k[2::2] ** 2)  # evens 2..10 over odds 3..9
    gain = np.sqrt(10 ** (even_db / 10) / full_ratio)
    amplitudes = [(gain if j % 2 == 0 else 1.0) / j for j in k]
    return _at_level(_place(harmonic_tone(rng.uniform(180, 300), 3.5, amplitudes, rng), 0.25), LEVEL_LUFS)


def render_counting(count: float, rng) -> np.ndarray:
    """``count`` identical hits at random times, at least 0.3 s apart."""
    n = int(round(count))
    slots = np.sort(rng.choice(np.arange(0.1, 3.7, 0.3), size=n, replace=False))
    x = np.zeros(int(CLIP * SAMPLE_RATE))
    hit = _hit(rng)
    for start in slots + rng.uniform(0, 0.05, size=n):
        s = int(start * SAMPLE_RATE)
        x[s : s + len(hit)] += hit
    return _at_level(x, LEVEL_LUFS)


# ---- the attributes -------------------------------------------------------------------------------------------------


def _distance_from_audio(x: np.ndarray, sr: int) -> float:
    """Metres, read from the measured direct-to-reverberant ratio through the room's law."""
    return CRITICAL_DISTANCE * 10 ** (-meters.direct_to_reverberant_db(x, sr) / 20)


def _velocity_from_audio(x: np.ndarray, sr: int) -> float:
    """MIDI velocity, read from the measured attack through the generator's velocity law."""
    return (meters.attack_ratio_db(x, sr) - 3.0) * 127 / 18.0


def _count(x: np.ndarray, sr: int) -> float:
    return float(len(meters.onset_times(x, sr)))


# name, unit, scale low and high, the paper's threshold (or this generator's where the paper has none), the
# recognition gap and the comparison margin, renderer, meter, wording
ATTRIBUTE_SPECS: dict[str, Attribute] = {
    a.name: a
    for a in (
        Attribute(
            "pitch",
            "MIDI note",
            48,
            84,
            65,
            2,
            1,
            render_pitch,
            lambda x, sr: meters.midi(meters.fundamental(x, sr)),
            "high",
            "low",
            "Is the pitch of this sound high or low (above or below MIDI note 65)?",
            "has the higher pitch",
        ),
        Attribute(
            "brightness",
            "Hz spectral centroid",
            350,
            3000,
            1000,
            1.3,
            1.6,
            render_brightness,
            meters.spectral_centroid,
            "bright",
            "dark",
            "Is this sound's spectral energy skewed toward high frequencies (bright) or low ones (dark)?",
            "sounds brighter",
            log=True,
        ),
        Attribute(
            "loudness",
            "LUFS",
            -40,
            -8,
            -15,
            4,
            6,
            render_loudness,
            meters.integrated_loudness,
            "loud",
            "soft",
            "Is this sound loud or soft (louder or softer than -15 LUFS)?",
            "is louder",
        ),
        Attribute(
            "velocity",
            "MIDI velocity",
            10,
            127,
            75,
            18,
            35,
            render_velocity,
            _velocity_from_audio,
            "struck hard",
            "struck softly",
            "Was this note struck hard or softly (MIDI velocity above or below 75)?",
            "has the stronger initial transient",
        ),
        Attribute(
            "duration",
            "seconds",
            0.5,
            3.8,
            2.4,
            0.4,
            0.6,
            render_duration,
            meters.active_duration,
            "longer than 2.4 seconds",
            "2.4 seconds or shorter",
            "Does the sound last longer than 2.4 seconds?",
            "is longer",
        ),
        Attribute(
            "tempo",
            "BPM",
            60,
            180,
            100,
            1.15,
            1.3,
            render_tempo,
            meters.tempo_bpm,
            "fast",
            "slow",
            "Is the rhythm fast or slow (above or below 100 BPM)?",
            "has the faster rhythm",
            log=True,
        ),
        Attribute(
            "direction",
            "degrees to the right",
            -80,
            80,
            0,
            25,
            40,
            render_direction,
            meters.azimuth,
            "from the right",
            "from the left",
            "Does the sound come from the left or from the right?",
            "comes from further to the right",
        ),
        Attribute(
            "distance",
            "metres",
            0.4,
            12,
            3,
            1.6,
            2.5,
            render_distance,
            _distance_from_audio,
            "beyond 3 m",
            "within 3 m",
            "Is the sound source within 3 metres or beyond?",
            "sounds farther away",
            log=True,
        ),
        Attribute(
            "reverberation",
            "seconds RT60",
            0.1,
            1.6,
            0.4,
            1.5,
            2.0,
            render_reverberation,
            meters.reverberation_time,
            "reverberant",
            "dry",
            "Is this sound reverberant or dry?",
            "sounds like a larger room with more reverb",
            log=True,
        ),
        Attribute(
            "texture",
            "modulation depth",
            0.0,
            1.0,
            0.35,
            0.15,
            0.35,
            render_texture,
            meters.modulation_depth,
            "rough",
            "smooth",
            "Is the texture of this sound rough or smooth?",
            "sounds rougher",
        ),
        Attribute(
            "timbre",
            "dB even over odd harmonics",
            -30,
            5,
            -12,
            6,
            12,
            render_timbre,
            meters.even_to_odd_db,
            "full, like a bowed string",
            "hollow, like a clarinet",
            "Does this tone sound hollow like a clarinet or full like a bowed string?",
            "sounds fuller (less hollow)",
        ),
        Attribute(
            "counting",
            "events",
            1,
            8,
            4.5,
            1.5,
            2,
            render_counting,
            _count,
            "more than 4 times",
            "4 times or fewer",
            "Is the sound repeated more than 4 times?",
            "has more sound repetitions",
            integer=True,
        ),
    )
}


# ---- items ----------------------------------------------------------------------------------------------------------

MAX_TRIES = 8  # draws per item before it is rejected
CLIP_PEAK = 0.99  # a rendering that would clip is drawn again
INSTRUCTION = "Only answer 'A' or 'B'. Do not add any explanation, punctuation, or extra text."


@dataclass(frozen=True)
class Item:
    id: str
    attribute: str
    paradigm: str
    audio: np.ndarray  # (n,) or (n, 2), float in [-1, 1]
    prompt: str
    question: str
    options: tuple[str, str]
    answer: str
    label: dict
    tries: int


def to_pcm16(x: np.ndarray) -> np.ndarray:
    return np.round(np.clip(x, -1, 1) * 32767).astype(np.int16)


def _written(x: np.ndarray) -> np.ndarray:
    """The samples as a 16-bit WAV file holds them: what the meters measure."""
    return to_pcm16(x).astype(np.float64) / 32767


def _recognition(spec: Attribute, index: int, rng: np.random.Generator) -> tuple[Item | None, int]:
    above = index % 2 == 0
    a_is_above = (index // 2) % 2 == 0  # the option order, counterbalanced against the label
    meanings = (spec.above, spec.below) if a_is_above else (spec.below, spec.above)
    for tries in range(1, MAX_TRIES + 1):
        value = spec.draw_recognition(above, rng)
        audio = spec.render(value, rng)
        if np.abs(audio).max() > CLIP_PEAK:
            continue
        measured = spec.measure(_written(audio), SAMPLE_RATE)
        if bool(measured > spec.threshold) != above:
            continue
        prompt = f"{spec.recognition_question} Answer 'A' for {meanings[0]}, 'B' for {meanings[1]}. {INSTRUCTION}"
        label = {
            "above_threshold": above,
            "value": value,
            "measured": measured,
            "threshold": spec.threshold,
            "unit": spec.unit,
        }
        item_id = f"{spec.name}_single_{index:03d}"
        answer = "A" if above == a_is_above else "B"
        return Item(
            item_id, spec.name, "recognition", audio, prompt, spec.recognition_question, meanings, answer, label, tries
        ), tries
    return None, MAX_TRIES


def _comparison(spec: Attribute, index: int, rng: np.random.Generator) -> tuple[Item | None, int]:
    first_is_larger = index % 2 == 0
    for tries in range(1, MAX_TRIES + 1):
        values = spec.draw_pair(first_is_larger, rng)
        clips = [fade(spec.render(v, rng)) for v in values]
        if max(np.abs(c).max() for c in clips) > CLIP_PEAK:
            continue
        measured = [spec.measure(_written(c), SAMPLE_RATE) for c in clips]
        if (measured[0] > measured[1]) != first_is_larger:
            continue
        silence = np.zeros((int(GAP * SAMPLE_RATE),) + clips[0].shape[1:])
        question = (
            f"Two clips are played with {GAP} seconds of silence between them. Which clip {spec.comparison_question}?"
        )
        prompt = f"{question} Answer 'A' for the first, 'B' for the second. {INSTRUCTION}"
        label = {"first_is_larger": first_is_larger, "values": list(values), "measured": measured, "unit": spec.unit}
        item_id = f"{spec.name}_pair_{index:03d}"
        answer = "A" if first_is_larger else "B"
        audio = np.concatenate([clips[0], silence, clips[1]])
        return Item(
            item_id,
            spec.name,
            "comparison",
            audio,
            prompt,
            question,
            ("the first clip", "the second clip"),
            answer,
            label,
            tries,
        ), tries
    return None, MAX_TRIES


PARADIGM_BUILDERS = {"recognition": _recognition, "comparison": _comparison}


def make_item(attribute: str, paradigm: str, index: int, seed: int) -> tuple[Item | None, int]:
    """One item, drawn from its own seeded generator (the same whatever order or process makes it); None where no
    draw's measurement agreed with its label. Returns the item and the draws it took."""
    names = list(ATTRIBUTE_SPECS)
    rng = np.random.default_rng([seed, names.index(attribute), list(PARADIGM_BUILDERS).index(paradigm), index])
    return PARADIGM_BUILDERS[paradigm](ATTRIBUTE_SPECS[attribute], index, rng)


def pcm16(item: Item) -> np.ndarray:
    """The item's audio as the 16-bit samples its WAV file holds."""
    return to_pcm16(item.audio)


def measure_segments(samples: np.ndarray, attribute: str, paradigm: str) -> list[float]:
    """The attribute measured on a written item's samples (float in [-1, 1]): one value for a recognition clip, one
    per clip of a comparison (the first 4 s and the last 4 s)."""
    spec = ATTRIBUTE_SPECS[attribute]
    if paradigm == "recognition":
        return [spec.measure(samples, SAMPLE_RATE)]
    n, gap = int(CLIP * SAMPLE_RATE), int(GAP * SAMPLE_RATE)
    return [spec.measure(samples[:n], SAMPLE_RATE), spec.measure(samples[n + gap : 2 * n + gap], SAMPLE_RATE)]
