"""`avjudge data annotate`: dense captions for real clips from an OpenAI-compatible omni model
(AVBench used Qwen3-Omni), written as a source manifest; cached and resumable."""

from __future__ import annotations

import json
from pathlib import Path

from ..config import ConfigError
from ..llm.base import BackendError, ChatRequest
from ..llm.content import video_file_part
from ..perturb.text import parse_json_object
from ..runtime.jobs import run_job

VIDEO_EXTENSIONS = (".mp4", ".mkv", ".mov", ".webm")
CAPTION_PROMPT = """Watch and listen to this clip, then describe it densely for training audio-video judges.
Return JSON with exactly these keys:
{
"video": "what is seen: people (age, gender, clothing, expression), objects, colours, counts, positions, motion, interactions, camera, in temporal order",
"audio": "what is heard: speakers (gender, age, tone, emotion), sound effects and their timing, music, background ambience, acoustic space",
"utterance": "the exact words spoken, in their original language, or an empty string if nobody speaks"
}"""


def clip_items(folder: str | Path) -> list[dict]:
    """The video files under ``folder``, each an item named by its path there; a folder without any is an error."""
    root = Path(folder)
    if not root.is_dir():
        raise ConfigError(f"{root}: not a folder of clips (annotate reads the video files under a folder)")
    files = sorted(p for p in root.rglob("*") if p.suffix.lower() in VIDEO_EXTENSIONS)
    if not files:
        raise ConfigError(f"{root}: no video files under it ({', '.join(sorted(VIDEO_EXTENSIONS))})")
    return [{"id": str(p.relative_to(root).with_suffix("")), "video": str(p)} for p in files]


def _request(path: Path, model_prompt: str) -> ChatRequest:
    return ChatRequest(prompt=model_prompt, json_mode=True, temperature=0.0, media=(video_file_part(path),))


def annotate(folder: str | Path, out: str | Path, backend, prompt: str = CAPTION_PROMPT, progress: bool = True) -> dict:
    """One manifest record per clip; a clip whose reply is unusable gets an ``error`` and no captions."""
    items = clip_items(folder)
    root = Path(out).parent

    def process(chunk: list[dict]) -> list[dict]:
        records = []
        for item in chunk:
            video = Path(item["video"])
            rel = (
                Path(video).resolve().relative_to(root.resolve())
                if video.resolve().is_relative_to(root.resolve())
                else video.resolve()
            )
            record = {"id": item["id"], "video": str(rel), "meta": {"annotator": getattr(backend, "model", "")}}
            try:
                reply = parse_json_object(backend.complete(_request(video, prompt)))
                missing = [k for k in ("video", "audio", "utterance") if not isinstance(reply.get(k), str)]
                if missing:
                    raise ValueError(f"reply lacks {missing}")
                record["captions"] = {k: reply[k].strip() for k in ("video", "audio", "utterance")}
            except BackendError as err:
                record["error"] = f"annotator failed: {err}"
            except (ValueError, json.JSONDecodeError) as err:
                record["error"] = f"unusable reply: {err}"
            records.append(record)
        return records

    return run_job(items, out, process, chunk_size=8, progress=progress, desc="annotate")
