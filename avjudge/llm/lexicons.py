"""Word categories for the offline rule backend: a swap stays inside its category
("red" -> "blue", "twice" -> "three times"), so a negative is minimal and plausible."""

from __future__ import annotations

from ..world import vocab

LEXICONS: dict[str, tuple[str, ...]] = {
    "colour": tuple(vocab.COLOURS) + ("black", "white", "brown", "grey", "gray"),
    "shape": tuple(vocab.SHAPES) + ("star", "oval", "rectangle"),
    "size": ("small", "medium", "large", "tiny", "huge", "big"),
    "material": ("wooden", "metal", "glass", "plastic", "stone", "paper", "leather", "cotton"),
    "clothing": ("shirt", "jacket", "dress", "coat", "sweater", "hat", "scarf", "t-shirt"),
    "count": tuple(vocab.NUMBER_WORDS[1:11]),
    "times": ("once", "twice", "three times", "four times", "five times", "six times"),
    "motion": tuple(vocab.MOTION_PHRASES.values()) + ("walks", "runs", "sits", "stands", "jumps", "waves", "nods"),
    "direction": ("left", "right", "upward", "downward"),
    "event": tuple(vocab.EVENTS.values()),
    "spatial": ("to the left of", "to the right of", "above", "below", "in front of", "behind", "next to"),
    "position": ("upper left", "upper right", "lower left", "lower right", "center", "foreground", "background"),
    "gender": ("man", "woman", "boy", "girl"),
    "voice_gender": ("male", "female"),
    "age": ("young", "old", "elderly", "middle-aged", "teenage", "little"),
    "emotion": (
        "happy",
        "sad",
        "angry",
        "calm",
        "tense",
        "excited",
        "nervous",
        "cheerful",
        "frightened",
        "relaxed",
        "distressed",
        "confident",
    ),
    "intensity": ("slightly", "very", "extremely", "mildly", "softly", "loudly", "quietly"),
    "relation": ("friends", "colleagues", "strangers", "siblings", "couple", "parent and child"),
    "interaction": ("hands", "hugs", "pushes", "pulls", "holds", "throws", "catches", "points at"),
    "state": ("open", "closed", "broken", "intact", "wet", "dry", "empty", "full", "on", "off"),
    "camera": ("close-up", "wide shot", "medium shot", "aerial view", "low angle", "high angle", "tracking shot"),
    "place": tuple(v["phrase"] for v in vocab.BACKGROUNDS.values()) + ("kitchen", "street", "park", "office", "beach"),
    "pitch": vocab.REGISTER_WORDS,
    "timbre": tuple(vocab.TIMBRE_WORDS.values()),
    "ambience": tuple(p for k, p in vocab.AMBIENCE_PHRASES.items() if k != "none") + ("traffic noise", "birdsong"),
    "presence": ("no background noise", "faint background noise", "loud background noise"),
    "instrument": ("piano", "guitar", "violin", "drum", "flute", "trumpet", "cello", "saxophone"),
    "genre": ("jazz", "rock", "classical", "pop", "folk", "electronic", "hip-hop"),
    "tempo": ("slow", "fast", "steady", "hurried", "leisurely"),
    "reverberation": ("echoing", "dry", "reverberant", "muffled", "close", "distant"),
    "polarity": ("good", "bad", "always", "never", "likes", "hates", "agree", "disagree", "can", "cannot"),
    "speech_act": ("asks", "says", "orders", "warns", "suggests", "promises"),
    "role": ("narrator", "host", "reporter", "lecturer", "customer", "teacher", "doctor"),
    "language": ("English", "Chinese", "Spanish", "French", "German", "Japanese", "Korean"),
    "order": ("first", "then", "finally", "before", "after"),
    # whole object names, so an order swap exchanges who acts rather than one attribute
    "object": tuple(f"{c} {s}" for c in vocab.COLOURS for s in vocab.SHAPES),
}
