"""The world's vocabulary: every name a scene, a caption or a text perturbation may use.

Physical links make perturbations detectable: a shape fixes its timbre, a colour fixes its
pitch, a background fixes which ambiences are plausible.
"""

from __future__ import annotations

COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 40, 40),
    "green": (40, 180, 60),
    "blue": (50, 80, 220),
    "yellow": (235, 210, 40),
    "purple": (150, 60, 200),
    "orange": (245, 140, 30),
    "cyan": (40, 200, 210),
    "pink": (240, 120, 180),
}
WHITE = (255, 255, 255)
# colour -> pitch (Hz) of the sound the object makes: eight notes five semitones apart, 110-831 Hz.
# Colour is what any one vision patch shows and pitch what a few mel bands show, so whether a sound
# can come from something on screen is decidable from the encoders' most basic features: the
# cross-modal link a small judge can learn (shape, the timbre's link, needs a whole object's outline).
PITCHES: dict[str, float] = {colour: round(110.0 * 2 ** (5 * k / 12), 2) for k, colour in enumerate(COLOURS)}

# shape -> timbre of the sound it makes
SHAPES: dict[str, str] = {
    "circle": "sine",
    "square": "square",
    "triangle": "saw",
    "diamond": "pluck",
    "ring": "noise_burst",
}
TIMBRE_WORDS: dict[str, str] = {
    "sine": "pure sine tone",
    "square": "buzzy square-wave tone",
    "saw": "bright sawtooth tone",
    "pluck": "plucked-string note",
    "noise_burst": "short noise burst",
}

# size -> radius as a fraction of the shorter frame side
SIZES: dict[str, float] = {"small": 0.07, "medium": 0.10, "large": 0.14}
# pitch register words, by the pitch's upper bound in Hz
REGISTERS: tuple[tuple[float, str], ...] = ((220.0, "low"), (440.0, "mid-pitched"), (float("inf"), "high"))
REGISTER_WORDS: tuple[str, ...] = tuple(word for _, word in REGISTERS)


def register_word(f0: float) -> str:
    return next(word for bound, word in REGISTERS if f0 < bound)


# motion -> (dx, dy, scale change) over the whole clip, in fractions of the frame
MOTIONS: dict[str, tuple[float, float, float]] = {
    "static": (0.0, 0.0, 0.0),
    "left": (-0.35, 0.0, 0.0),
    "right": (0.35, 0.0, 0.0),
    "up": (0.0, -0.3, 0.0),
    "down": (0.0, 0.3, 0.0),
    "diagonal": (0.25, -0.25, 0.0),
    "growing": (0.0, 0.0, 0.5),
    "shrinking": (0.0, 0.0, -0.35),
}
MOTION_PHRASES: dict[str, str] = {
    "static": "stays still",
    "left": "moves to the left",
    "right": "moves to the right",
    "up": "moves upward",
    "down": "moves downward",
    "diagonal": "drifts diagonally up and to the right",
    "growing": "slowly grows",
    "shrinking": "slowly shrinks",
}

# visual event -> (verb, how it looks while its sound plays)
EVENTS: dict[str, str] = {"flash": "flashes white", "pulse": "pulses larger", "bounce": "hops upward"}

BACKGROUNDS: dict[str, dict] = {
    "indoor": {
        "phrase": "an indoor room with a plain beige wall and a brown floor",
        "wall": (205, 190, 160),
        "floor": (140, 110, 90),
        "ambiences": ("none", "hum", "babble"),
    },
    "outdoor": {
        "phrase": "an outdoor field under a light blue sky above dark grass",
        "sky": (150, 195, 235),
        "grass": (90, 120, 50),
        "ambiences": ("none", "rain", "wind"),
    },
}
AMBIENCE_PHRASES: dict[str, str] = {
    "none": "no background noise",
    "hum": "the steady electrical hum of a room",
    "babble": "the murmur of a crowd",
    "rain": "rain falling",
    "wind": "wind blowing",
}

NUMBER_WORDS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
]
TIMES_WORDS = {1: "once", 2: "twice"}


def number_word(n: int) -> str:
    return NUMBER_WORDS[n] if 0 <= n < len(NUMBER_WORDS) else str(n)


def times_word(n: int) -> str:
    return TIMES_WORDS.get(n, f"{number_word(n)} times")
