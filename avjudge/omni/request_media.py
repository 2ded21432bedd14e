"""What an endpoint request carries of a clip, as a benchmark configuration asks (the papers' modality and frame
ablations): the picture as the video file or as sampled frames, the audio as its own part, subtitles or the
caption as text.

Modalities: ``av`` (picture and audio), ``v`` (picture only), ``a`` (audio only), ``v+subtitles``, ``v+caption``,
``a+caption``. Frames: none (the whole video file, as ``video_url``), ``N`` (N frames spread evenly, the first and
last instants left out, as VLMEvalKit samples them) or ``fps=F``, each a JPEG ``image_url``. The audio is 16 kHz mono
WAV (``input_audio``); an audio file is sent as it is, an image (JPEG, PNG) as an ``image_url``. A question's other
inputs (``extra["inputs"]``: AVI-Bench's candidate images or sounds) follow its clip in order. Subtitles are
``<video>.srt`` beside the video or in a ``subtitles/`` folder beside the video's folder (WorldSense's layout); the
caption is the question's ``video_caption``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..data.questions import ChoiceQuestion
from ..llm.content import (
    VIDEO_MIME,
    file_base64,
    image_part,
    input_audio_part,
    jpeg_base64,
    text_part,
    video_file_part,
    wav_base64,
)
from ..media import MediaError, decode, probe
from .base import SuiteError

MODALITIES = ("av", "v", "a", "v+subtitles", "v+caption", "a+caption")
AUDIO_FORMATS = {".wav": "wav", ".mp3": "mp3", ".flac": "flac", ".ogg": "ogg", ".m4a": "m4a"}
IMAGE_TYPES = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png"}
AUDIO_RATE = 16000
JPEG_QUALITY = 90


class MediaUnavailable(Exception):
    """What a configuration asks of a clip that the clip does not have (final: asking again cannot help)."""


@dataclass(frozen=True)
class MediaPlan:
    modalities: str = "av"
    frames: str | None = None  # None, "N" or "fps=F"

    def __post_init__(self):
        if self.modalities not in MODALITIES:
            raise SuiteError(f"modalities {self.modalities!r} is not one of {', '.join(MODALITIES)}")
        if self.frames is not None and not re.fullmatch(r"\d+|fps=\d+(\.\d+)?", self.frames):
            raise SuiteError(f"frames {self.frames!r} is not a count (8, 16, ...) or fps=F")

    @property
    def picture(self) -> bool:
        return self.modalities.startswith("v") or self.modalities == "av"

    @property
    def audio(self) -> bool:
        return self.modalities in ("av", "a", "a+caption")

    def parts(self, question: ChoiceQuestion) -> list[dict]:
        """The request's content parts: media first (the question's clip, then any other inputs it lists, as
        AVI-Bench's retrieval and grounding items have), then the text."""
        parts = []
        for media in [Path(question.media), *map(Path, question.extra.get("inputs", []))]:
            if not media.is_file():
                raise MediaUnavailable(f"{media}: no such clip (question {question.id})")
            parts += self._file_parts(media)
        if not parts:
            raise MediaUnavailable(f"{question.media}: nothing of it is sent for modalities {self.modalities!r}")
        return [*parts, text_part(self._text(question, Path(question.media)))]

    def _file_parts(self, media: Path) -> list[dict]:
        suffix = media.suffix.lower()
        if suffix in AUDIO_FORMATS:
            if not self.audio:  # av on an audio file sends what there is: the audio
                raise MediaUnavailable(f"{media}: an audio file has no picture for modalities {self.modalities!r}")
            return [input_audio_part(file_base64(media), AUDIO_FORMATS[suffix])]
        if suffix in VIDEO_MIME:
            return (self._picture(media) if self.picture else []) + (
                [input_audio_part(_wav_base64(media), "wav")] if self.audio else []
            )
        if suffix in IMAGE_TYPES:
            if not self.picture:
                raise MediaUnavailable(f"{media}: an image has no audio for modalities {self.modalities!r}")
            return [image_part(file_base64(media), IMAGE_TYPES[suffix])]
        raise MediaUnavailable(f"{media}: not an audio, video or image file this client sends")

    def _picture(self, media: Path) -> list[dict]:
        if self.frames is None:
            return [video_file_part(media)]
        return [image_part(jpeg_base64(frame, JPEG_QUALITY)) for frame in _frames(media, self.frames)]

    def _text(self, question: ChoiceQuestion, media: Path) -> str:
        if self.modalities.endswith("+subtitles"):
            return f"This video's subtitles are listed below:\n{subtitles(media)}\n{question.text}"
        if self.modalities.endswith("+caption"):
            caption = question.extra.get("video_caption")
            if not caption:
                raise MediaUnavailable(
                    f"question {question.id} has no video_caption for modalities {self.modalities!r}"
                )
            return f"The video's caption: {caption}\n{question.text}"
        return question.text


def _wav_base64(media: Path) -> str:
    try:
        clip = decode(media, video=False, audio=True, sample_rate=AUDIO_RATE, channels=1)
    except MediaError as err:
        raise MediaUnavailable(str(err)) from err
    return wav_base64(clip.audio[0], AUDIO_RATE)


def _frames(media: Path, frames: str) -> list[np.ndarray]:
    """The sampled frames: at ``fps=F``, or N spread evenly with the first and last instants left out."""
    try:
        if frames.startswith("fps="):
            return list(decode(media, video=True, audio=False, fps=float(frames[4:])).frames)
        count = int(frames)
        duration = probe(media).duration
        if not duration:
            raise MediaUnavailable(f"{media}: no duration to spread {count} frames over")
        return list(decode(media, video=True, audio=False, fps=(count + 1) / duration).frames[1 : count + 1])
    except MediaError as err:
        raise MediaUnavailable(str(err)) from err


def subtitles(media: Path) -> str:
    """The text of the video's SubRip file, cue numbers and times left out."""
    for candidate in (media.with_suffix(".srt"), media.parent.parent / "subtitles" / f"{media.stem}.srt"):
        if candidate.is_file():
            lines = candidate.read_text(encoding="utf-8", errors="replace").splitlines()
            return "\n".join(t for t in lines if t.strip() and not t.strip().isdigit() and "-->" not in t)
    raise MediaUnavailable(f"{media}: no subtitles ({media.stem}.srt beside it or in ../subtitles/)")
