"""A benchmark with a known answer: prompts from a synthetic world, and "models" whose clips are
the world's clips with known defects (shifted sound, added noise, another clip's sound).

A judge or metric that works must rank the reference model first on the dimension each defect hurts.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from ..data import load_manifest
from ..media import decode, replace_audio
from ..perturb import Context, SourcePool, get_strategy
from ..world import world_manifest
from .prompt_files import PromptEntry

# model name -> (strategy, parameter overrides); None keeps the world's clip as it is.
SYNTHETIC_MODELS: dict[str, tuple[str, dict] | None] = {
    "reference": None,
    "shifted": ("time_shift_medium", {"fill": "wrap"}),
    "noisy": ("noise_addition", {"kind": "white", "snr_db": [0.0, 5.0]}),
    "mismatched": ("random_mismatch", {}),
}


def world_prompts(world: str | Path) -> list[PromptEntry]:
    """One AVBench-style entry per clip of a world (its folder or manifest); scenes with three or more events or
    speech form the hard split."""
    entries = []
    for r in load_manifest(world_manifest(world)):
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
    world: str | Path, root: str | Path, models: list[str] | None = None, seed: int = 0
) -> dict[str, int]:
    """Write ROOT/<model>/<id>.mp4 for each synthetic model of a world (its folder or manifest); returns clips
    written per model."""
    records = load_manifest(world_manifest(world))
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
