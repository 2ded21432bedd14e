"""Text-negative taxonomies: video-text (AVBench Table 4) and audio-text (Table 5).

Each dimension names the lexicon categories the offline rule backend may swap to realise
it ("mode": "order" exchanges two phrases inside a sentence that states an order).
Weights follow §7.2: about 25% of samples to temporal and semantic dimensions, the rest
spread evenly. Table 5's layout merges some rows; the split below gives 40 secondary
dimensions in 15 primary categories.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Dimension:
    key: str
    primary: str
    description: str
    error_types: str
    categories: tuple[str, ...]
    mode: str = "swap"
    weight: float = 1.0


def _vt(key, title, focus, errors, categories, mode="swap"):
    return Dimension(key, title, focus, errors, tuple(categories), mode)


VT_DIMENSIONS: tuple[Dimension, ...] = (
    _vt(
        "appearance",
        "Appearance",
        "Visual attributes",
        "Color, shape, material, clothing, details",
        ["colour", "shape", "material", "clothing", "size"],
    ),
    _vt(
        "emotion_expression",
        "Emotion & Expression",
        "Emotional expressions",
        "Emotion, facial expression, body language",
        ["emotion"],
    ),
    _vt("age_gender", "Age & Gender", "Age and gender", "Age change, gender swap", ["gender", "age", "voice_gender"]),
    _vt(
        "social_relation",
        "Social Relation",
        "Social relationships",
        "Relationship type, intimacy, interaction context",
        ["relation"],
    ),
    _vt("counting", "Counting", "Quantity", "Number of people/objects, object existence", ["count", "times"]),
    _vt(
        "motion",
        "Motion",
        "Movement and actions",
        "Action, phase, trajectory, speed, frequency",
        ["motion", "event", "direction"],
    ),
    _vt("interaction", "Interaction", "Interactions", "Human-object, object-object relationships", ["interaction"]),
    _vt("state", "State", "Object state", "Open/closed, intact/broken, dry/wet", ["state"]),
    _vt(
        "spatial",
        "Spatial",
        "Spatial arrangement",
        "Left/right, front/back, occlusion, relative positions",
        ["spatial", "position"],
    ),
    _vt("saliency", "Saliency", "Visual saliency", "Main subject omission, partial missing", ["position"]),
    _vt(
        "temporal",
        "Temporal",
        "Temporal logic",
        "Order, sequence of steps, occurrence",
        ["object", "event"],
        mode="order",
    ),
    _vt("camera", "Camera", "Camera language", "Viewing angle, camera movement, shot type", ["camera"]),
    _vt("logical", "Logical", "Logical reasoning", "Causality, containment, contrast", ["order", "state"]),
    _vt(
        "world_knowledge",
        "World Knowledge",
        "Commonsense",
        "Object function, character role, physical laws",
        ["place", "role"],
    ),
)

_AT_TABLE = [
    (
        "Speech Attributes",
        [
            (
                "speaker_identity",
                "Change in speaker identity (gender, age, timbre, accent)",
                ["voice_gender", "gender", "age"],
            ),
            ("speaker_count", "Change in number of speakers (monologue / dialogue / group)", ["count"]),
            ("speaking_role", "Change in speaking role (narrator, host, reporter, lecturer)", ["role"]),
        ],
    ),
    (
        "Speech Content",
        [
            ("semantic_polarity", "Semantic polarity reversal (positive / negative)", ["polarity"]),
            (
                "entity_reference",
                "Entity reference error (person/place/object replacement)",
                ["colour", "shape", "place"],
            ),
            ("causality", "Causality mismatch", ["order"]),
        ],
    ),
    (
        "Emotion & Pragmatics",
        [
            ("emotional_polarity", "Emotion direction reversal", ["emotion"]),
            ("emotional_intensity", "Change in emotional intensity", ["intensity"]),
            ("speech_act", "Change in pragmatic function (statement / command)", ["speech_act"]),
        ],
    ),
    (
        "Counting & Degree",
        [
            ("numerical_value", "Numerical change", ["count"]),
            ("frequency", "Frequency change", ["times"]),
            ("degree", "Change in degree/intensity", ["pitch", "intensity"]),
        ],
    ),
    (
        "Sound Effects",
        [
            ("action_sound_mapping", "Action-sound mismatch", ["timbre"]),
            ("sound_source", "Incorrect sound source", ["timbre", "instrument"]),
            ("material_cue", "Material acoustic property mismatch", ["material"]),
            ("trigger_existence", "Presence/absence of key sound effect", ["presence"]),
            ("visual_audio_sync", "Visual-audio sync error", ["order"]),
        ],
    ),
    (
        "Action-Sound Alignment",
        [
            ("temporal_sync", "Action-sound temporal mismatch", ["times"]),
            ("repetition", "Repetition pattern change", ["times"]),
        ],
    ),
    (
        "Acoustic Environment",
        [
            ("background_presence", "Background sound change", ["ambience", "presence"]),
            ("reverberation", "Reverberation environment mismatch", ["reverberation"]),
            ("distance_cue", "Distance cue mismatch", ["reverberation"]),
        ],
    ),
    (
        "Music Attributes",
        [
            ("instrumentation", "Instrument replacement", ["instrument"]),
            ("genre_style", "Genre/style mismatch", ["genre"]),
            ("tempo_rhythm", "Tempo/rhythm change", ["tempo"]),
            ("music_emotion", "Music emotion alignment disruption", ["emotion"]),
        ],
    ),
    ("Music-Content Relation", [("narrative_support", "Music-narrative relation mismatch", ["emotion", "genre"])]),
    (
        "Audio Saliency",
        [
            ("foreground_background", "Foreground/background reversal", ["position"]),
            ("focus_consistency", "Focus stability disruption", ["intensity"]),
        ],
    ),
    (
        "Temporal Structure",
        [("event_order", "Event order shuffled", ["timbre"]), ("continuity", "Continuity disruption", ["tempo"])],
    ),
    (
        "Logical (Audio)",
        [
            ("part_whole", "Part-whole relation disruption", ["count"]),
            ("completeness", "Completeness disruption", ["times"]),
            ("physical_plausibility", "Acoustic physical plausibility disruption", ["material", "pitch"]),
        ],
    ),
    (
        "World Knowledge",
        [
            ("scene_consistency", "Scene-audio conflict", ["ambience", "place"]),
            ("role_knowledge", "Role knowledge conflict", ["role"]),
        ],
    ),
    (
        "Cultural / Social",
        [
            ("cultural_cue", "Cultural audio cue mismatch", ["instrument", "language"]),
            ("social_norms", "Social norm conflict", ["polarity"]),
        ],
    ),
    (
        "Language & Annotation",
        [
            ("language_label", "Language label error", ["language"]),
            ("content_alignment", "Description-content mismatch", ["colour", "shape", "timbre"]),
        ],
    ),
]
AT_DIMENSIONS: tuple[Dimension, ...] = tuple(
    Dimension(key, primary, desc, desc, tuple(cats), "order" if key == "event_order" else "swap")
    for primary, rows in _AT_TABLE
    for key, desc, cats in rows
)

# §7.2: temporal and semantic dimensions get about a quarter of all samples together.
_EMPHASIS = {
    "vt": {"temporal", "logical"},
    "at": {"event_order", "temporal_sync", "semantic_polarity", "entity_reference"},
}
EMPHASIS_SHARE = 0.25


def taxonomy(
    task: str, emphasis_share: float = EMPHASIS_SHARE, weights: dict[str, float] | None = None
) -> tuple[Dimension, ...]:
    """The task's dimensions with weights that sum to 1; ``weights`` keeps only the named
    dimensions, with those relative weights (a recipe's choice)."""
    dims = {"vt": VT_DIMENSIONS, "at": AT_DIMENSIONS}.get(task)
    if dims is None:
        raise ValueError(f"text negatives exist for vt and at, not {task!r}")
    if weights:
        known = {d.key: d for d in dims}
        unknown = sorted(set(weights) - set(known))
        if unknown:
            raise ValueError(f"unknown {task} dimension(s) {unknown}; known: {sorted(known)}")
        total = sum(weights.values())
        return tuple(
            Dimension(d.key, d.primary, d.description, d.error_types, d.categories, d.mode, weights[d.key] / total)
            for d in dims
            if weights.get(d.key, 0) > 0
        )
    emphasis = _EMPHASIS[task]
    rest = [d for d in dims if d.key not in emphasis]
    out = []
    for d in dims:
        w = emphasis_share / len(emphasis) if d.key in emphasis else (1 - emphasis_share) / len(rest)
        out.append(Dimension(d.key, d.primary, d.description, d.error_types, d.categories, d.mode, w))
    return tuple(out)
