"""Prompt files in AVBench's release format, and finding each model's clip of each prompt.

A prompt file is a JSON list of ``{id, prompt_vision, prompt_audio, utterance, full_prompt}``;
an entry may also carry ``split`` (normal | hard) and any attributes (language, emotion...).
A benchmark's prompts may be one file or a folder of them; a file named ``normal.json`` or ``hard.json``
gives its entries that split unless they say otherwise.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import BenchError

SPLITS = ("normal", "hard")
PROMPT_FIELDS = ("prompt_vision", "prompt_audio", "utterance", "full_prompt")
VIDEO_EXTENSIONS = (".mp4", ".mov", ".mkv", ".webm")


@dataclass(frozen=True)
class PromptEntry:
    id: str
    prompt_vision: str
    prompt_audio: str
    utterance: str = ""
    full_prompt: str = ""
    split: str = "normal"
    attributes: dict = field(default_factory=dict)

    def captions(self) -> dict[str, str]:
        """The captions the judges read (VT: the visual prompt; AT: the audio prompt and utterance)."""
        return {"video": self.prompt_vision, "audio": self.prompt_audio, "utterance": self.utterance}

    def to_dict(self) -> dict:
        return {"id": self.id, **{f: getattr(self, f) for f in PROMPT_FIELDS}, "split": self.split, **self.attributes}


def entry_from_dict(raw: dict, where: str, default_split: str = "normal") -> PromptEntry:
    if not isinstance(raw, dict):
        raise BenchError(f"{where}: each prompt entry must be an object, got {type(raw).__name__}")
    for key in ("id", "prompt_vision", "prompt_audio"):
        if not raw.get(key) and raw.get(key) != 0:
            raise BenchError(
                f"{where}: entry has no {key!r} (AVBench entries have id, prompt_vision, "
                "prompt_audio, utterance, full_prompt)"
            )
    texts = {key: raw.get(key) for key in PROMPT_FIELDS}
    not_text = [key for key, value in texts.items() if not isinstance(value, str) and value is not None]
    if not_text:
        raise BenchError(f"{where}: {', '.join(not_text)} must be text, got {[texts[k] for k in not_text]}")
    split = raw.get("split", default_split)
    if split not in SPLITS:
        raise BenchError(f"{where}: split must be one of {SPLITS}, got {split!r}")
    extra = {k: v for k, v in raw.items() if k not in ("id", "split", *PROMPT_FIELDS)}
    return PromptEntry(
        id=str(raw["id"]),
        prompt_vision=raw["prompt_vision"],
        prompt_audio=raw["prompt_audio"],
        utterance=raw.get("utterance") or "",
        full_prompt=raw.get("full_prompt") or "",
        split=split,
        attributes=extra,
    )


def load_prompts(path: str | Path) -> list[PromptEntry]:
    path = Path(path)
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    if not files or not all(f.is_file() for f in files):
        raise BenchError(
            f"{path}: no prompt file here (a JSON file, or a folder of them such as normal.json, hard.json)"
        )
    entries: list[PromptEntry] = []
    for f in files:
        try:
            data = json.loads(f.read_text())
        except json.JSONDecodeError as err:
            raise BenchError(f"{f}: not valid JSON ({err})") from err
        if not isinstance(data, list):
            raise BenchError(f"{f}: a prompt file is a JSON list of prompt entries")
        default = f.stem if f.stem in SPLITS else "normal"
        entries += [entry_from_dict(raw, f"{f} entry {i}", default) for i, raw in enumerate(data)]
    if not entries:
        raise BenchError(f"{path}: no prompt entries in it")
    ids = [e.id for e in entries]
    if len(set(ids)) != len(ids):
        raise BenchError(f"{path}: prompt ids repeat: {sorted({i for i in ids if ids.count(i) > 1})[:5]}")
    return entries


def write_prompts(entries: list[PromptEntry], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([e.to_dict() for e in entries], indent=1, ensure_ascii=False) + "\n")
    return path


def _matches(stem: str, prompt_id: str) -> bool:
    """``12.mp4`` and ``12_seed0.mp4`` are prompt 12's clip; ``120.mp4`` is not."""
    return stem == prompt_id or bool(re.match(re.escape(prompt_id) + r"[_\-.]", stem))


@dataclass
class Discovery:
    clips: dict[str, dict[str, Path]]  # model -> prompt id -> clip
    missing: dict[str, list[str]]  # model -> prompt ids with no clip
    ambiguous: dict[str, dict[str, list[str]]]  # model -> prompt id -> every file that matched (first one used)


def discover(entries: list[PromptEntry], root: str | Path, models: list[str] | None = None) -> Discovery:
    """Find ``ROOT/<model>/<id>*.mp4`` for every model (every subfolder unless named) and prompt."""
    root = Path(root)
    if not root.is_dir():
        raise BenchError(f"{root}: no such folder (expected ROOT/<model>/<prompt id>.mp4)")
    if models:
        absent = [m for m in models if not (root / m).is_dir()]
        if absent:
            raise BenchError(f"{root}: no folder for model(s) {absent}; found {sorted(p.name for p in root.iterdir())}")
    else:
        models = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
        if not models:
            raise BenchError(f"{root}: no model folders (expected ROOT/<model>/<prompt id>.mp4)")
    found = Discovery({}, {}, {})
    for model in models:
        files = sorted(p for p in (root / model).rglob("*") if p.suffix.lower() in VIDEO_EXTENSIONS)
        by_id, missing, ambiguous = {}, [], {}
        for entry in entries:
            hits = [p for p in files if _matches(p.stem, entry.id)]
            exact = [p for p in hits if p.stem == entry.id]
            hits = exact + [p for p in hits if p not in exact]
            if not hits:
                missing.append(entry.id)
                continue
            by_id[entry.id] = hits[0]
            if len(hits) > 1:
                ambiguous[entry.id] = [str(p.relative_to(root)) for p in hits]
        found.clips[model], found.missing[model] = by_id, missing
        if ambiguous:
            found.ambiguous[model] = ambiguous
    if not any(found.clips.values()):
        example = entries[0].id if entries else "ID"
        raise BenchError(
            f"{root}: no clip of any of the {len(entries)} prompts in {', '.join(models)}: a prompt's clip is "
            f"ROOT/<model>/<prompt id>.mp4 (or <prompt id>_anything.mp4), e.g. {models[0]}/{example}.mp4"
        )
    return found
