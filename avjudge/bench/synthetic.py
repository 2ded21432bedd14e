"""A benchmark with a known answer: a prompt suite from a synthetic world, and "models" whose clips are
the world's clips with known defects (shifted sound, added noise, another clip's sound).

A judge or metric that works must rank the reference model first on the dimension each defect hurts.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from ..data import load_manifest
from ..data.questions import ChoiceQuestion, QuestionError
from ..media import decode, replace_audio
from ..perturb import Context, SourcePool, get_strategy
from ..prompts import OPTION_LETTERS
from ..world import MANIFEST, vocab
from .dimensions import BenchError
from .prompt_suite import PromptEntry

# model name -> (strategy, parameter overrides); None keeps the world's clip as it is.
SYNTHETIC_MODELS: dict[str, tuple[str, dict] | None] = {
    "reference": None,
    "shifted": ("time_shift_medium", {"fill": "wrap"}),
    "noisy": ("noise_addition", {"kind": "white", "snr_db": [0.0, 5.0]}),
    "mismatched": ("random_mismatch", {}),
}


def world_manifest(path: str | Path) -> Path:
    """The manifest of a world: ``path`` itself, or ``path/world.jsonl`` for a folder `avjudge world make` wrote."""
    path = Path(path)
    manifest = path / MANIFEST if path.is_dir() else path
    if not manifest.is_file():
        raise BenchError(f"{path}: no world here; give a folder made by `avjudge world make` or its {MANIFEST}")
    return manifest


def world_suite(manifest: str | Path) -> list[PromptEntry]:
    """One AVBench-style entry per world clip; scenes with three or more events or speech form the hard split."""
    entries = []
    for r in load_manifest(manifest):
        captions, meta = r.get("captions") or {}, r.get("meta") or {}
        utterance = captions.get("utterance") or ""
        full = " ".join(
            filter(
                None,
                [captions.get("video"), captions.get("audio"), f'Someone says: "{utterance}"' if utterance else ""],
            )
        )
        hard = meta.get("n_events", 0) >= 3 or bool(meta.get("has_speech"))
        entries.append(
            PromptEntry(
                id=r["id"],
                prompt_vision=captions.get("video", ""),
                prompt_audio=captions.get("audio", ""),
                utterance=utterance,
                full_prompt=full,
                split="hard" if hard else "normal",
                attributes={
                    "background": meta.get("background"),
                    "objects": meta.get("n_objects"),
                    "speech": "yes" if meta.get("has_speech") else "no",
                    "speaker": meta.get("speaker") or "none",
                },
            )
        )
    return entries


def make_model_folders(
    manifest: str | Path, root: str | Path, models: list[str] | None = None, seed: int = 0
) -> dict[str, int]:
    """Write ROOT/<model>/<id>.mp4 for each synthetic model; returns clips written per model."""
    records = load_manifest(manifest)
    pool = SourcePool(records)
    root = Path(root)
    written = {}
    for m_index, model in enumerate(models or list(SYNTHETIC_MODELS)):
        spec = SYNTHETIC_MODELS[model]
        folder = root / model
        folder.mkdir(parents=True, exist_ok=True)
        strategy = get_strategy(spec[0], spec[1]) if spec else None
        for i, record in enumerate(records):
            out = folder / f"{record['id']}.mp4"
            if out.exists():
                continue
            if strategy is None:
                shutil.copyfile(record["video"], out)
                continue
            clip = decode(record["video"], video=False)
            rng = np.random.default_rng([seed, m_index, i])
            changed, _ = strategy(clip, rng, Context(record=record, pool=pool))
            replace_audio(record["video"], changed.audio, changed.sample_rate, out)
        written[model] = len(records)
    return written


# ---- multiple-choice questions with exact answers ----------------------------------------------


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
