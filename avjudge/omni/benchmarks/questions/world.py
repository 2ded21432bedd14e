"""Questions with exact answers about a synthetic world's clips: what the ``questions`` suite reads from a world
(`avjudge omni convert --suite questions --input WORLD`), and what the demo asks a judge's backbone before and after
fine-tuning."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ....data import load_manifest
from ....data.questions import ChoiceQuestion, QuestionError
from ....prompts import OPTION_LETTERS
from ....world import vocab


def _counted(n: int) -> list[str]:
    return [vocab.number_word(k) for k in range(1, n + 1)]


def _beat_count(scene: dict) -> str | None:
    beats = sum(1 for e in scene["events"] if scene["objects"][e["object"]]["sound"] is not None)
    return None if beats > 7 else vocab.number_word(beats) if beats else "none"


# category -> (what the question needs: "video" / "audio", the question, its options, the record's right option;
# None where the options do not hold it, and the clip is not asked that question)
WORLD_QUESTIONS = {
    "object_count": (
        "video",
        "How many shapes are visible in the video?",
        _counted(4),
        lambda r: vocab.number_word(len(r["scene"]["objects"])),
    ),
    "place": (
        "video",
        "Where does the scene take place?",
        ["indoors", "outdoors"],
        lambda r: {"indoor": "indoors", "outdoor": "outdoors"}[r["scene"]["background"]],
    ),
    "beat_count": (
        "audio",
        "How many beats are heard in total?",
        ["none"] + _counted(7),
        lambda r: _beat_count(r["scene"]),
    ),
    "background_sound": (
        "audio",
        "What is heard in the background?",
        [vocab.AMBIENCE_PHRASES[a] for a in ("none", "hum", "babble", "rain", "wind")],
        lambda r: vocab.AMBIENCE_PHRASES[r["scene"]["ambience"]],
    ),
}


def world_questions(manifest: str | Path, audio_only: bool = False, seed: int = 0) -> list[ChoiceQuestion]:
    """Questions with exact answers about a synthetic world's clips (`avjudge world make`), one per clip and
    category (but for a count beyond the options), options in a shuffled order; ``audio_only`` keeps the questions
    its sound alone answers."""
    questions = []
    for i, record in enumerate(load_manifest(manifest)):
        if "scene" not in record:
            raise QuestionError(
                f"{manifest}: record {record['id']!r} has no scene; world questions need a world "
                "made by `avjudge world make`"
            )
        for c, (category, (needs, question, options, right)) in enumerate(WORLD_QUESTIONS.items()):
            answer = right(record)
            if answer is None or (audio_only and needs != "audio"):
                continue
            order = np.random.default_rng([seed, i, c]).permutation(len(options))
            shuffled = [options[k] for k in order]
            letter = OPTION_LETTERS[shuffled.index(answer)]
            questions.append(
                ChoiceQuestion(
                    f"{record['id']}/{category}", record["video"], question, tuple(shuffled), letter, category
                )
            )
    return questions
