"""CLAP text-audio similarity as av-benchmark computes ``LAION_CLAP``: LAION-CLAP (HTSAT-base audio encoder, RoBERTa
text encoder; the ``music_speech_audioset_epoch_15_esc_89.98.pt`` checkpoint GenAU and MMAudio use).

Per clip: its audio at 48 kHz mono, the mean removed, the first 8 s (av-benchmark's ``AudioDataset``), repeated and
zero-padded to 10 s (LAION-CLAP's ``repeatpad``); the log-mel HTSAT computes inside itself (torchlibrosa: n_fft
1024, hop 480, 64 bands from 50 Hz to 14 kHz); the embeddings of the audio and of the prompt's audio caption
(RoBERTa's tokenizer, 77 tokens), each projected and normalised; ``clap_laion`` is their cosine similarity.

The network is ``transformers``' ``ClapModel`` (the same HTSAT and RoBERTa), sized from the checkpoint and loaded
from LAION-CLAP's state dict through `laion_to_transformers`; the log-mel is torchlibrosa's, as in LAION-CLAP.
"""

from __future__ import annotations

import re

import numpy as np

from .base import AudioNeeds, Metric, MetricError, load_torch_file, register
from .checkpoints import resolve
from .reference_audio import reference_waveform

SAMPLE_RATE = 48000
CLIP_SAMPLES = 480000  # LAION-CLAP's 10 s input
MAX_TOKENS = 77
CHECKPOINT = "laion_clap_music_speech"
TOKENIZER = "roberta_base_tokenizer"
# LAION-CLAP's keys the embeddings never use or transformers recomputes: the spectrogram's fixed weights (torchlibrosa
# recomputes them), the shifted windows' attention masks, the AudioSet tagging head, the contrastive loss's transforms
UNUSED = re.compile(
    r"audio_branch\.(spectrogram_extractor|logmel_extractor|tscam_conv|head)\.|(text|audio)_transform\.|.*\.attn_mask$"
)
# transformers' buffers LAION-CLAP's state dict does not carry (position and token type ids)
OWN_BUFFERS = ("text_model.embeddings.position_ids", "text_model.embeddings.token_type_ids")


def repeat_pad(audio: np.ndarray, length: int = CLIP_SAMPLES) -> np.ndarray:
    """LAION-CLAP's ``repeatpad``: a shorter clip repeated whole as often as it fits, then zeros; a longer one cut
    (LAION-CLAP crops at random there; av-benchmark's 8 s never reaches it)."""
    if len(audio) >= length:
        return audio[:length]
    tiled = np.tile(audio, length // len(audio))
    return np.pad(tiled, (0, length - len(tiled)))


def laion_to_transformers(state: dict) -> dict:
    """LAION-CLAP's state dict (HTSAT audio branch, RoBERTa text branch) under ``transformers.ClapModel``'s names."""
    if "state_dict" in state:
        state = state["state_dict"]
    state = {k.removeprefix("module."): v for k, v in state.items()}
    out = {}
    for key, value in state.items():
        if UNUSED.match(key) or key == "text_branch.embeddings.position_ids":
            continue
        new = re.sub(r"^text_branch\.", "text_model.", key)
        new = re.sub(r"^(text|audio)_projection\.0\.", r"\1_projection.linear1.", new)
        new = re.sub(r"^(text|audio)_projection\.2\.", r"\1_projection.linear2.", new)
        new = re.sub(r"^audio_branch\.bn0\.", "audio_model.audio_encoder.batch_norm.", new)
        new = re.sub(r"^audio_branch\.", "audio_model.audio_encoder.", new)
        for old, hf in (
            ("norm1", "layernorm_before"),
            ("norm2", "layernorm_after"),
            ("attn.proj", "attention.output.dense"),
            ("attn.relative_position", "attention.self.relative_position"),
            ("mlp.fc1", "intermediate.dense"),
            ("mlp.fc2", "output.dense"),
        ):
            new = re.sub(rf"(\.blocks\.\d+\.){re.escape(old)}", rf"\g<1>{hf}", new)
        if re.search(r"\.blocks\.\d+\.attn\.qkv\.", new):
            for name, part in zip(("query", "key", "value"), value.chunk(3, dim=0)):
                out[new.replace("attn.qkv", f"attention.self.{name}")] = part
            continue
        out[new] = value
    return out


def config_for(state: dict):
    """The ``ClapConfig`` of a LAION-CLAP state dict (already under transformers' names): sizes from its tensors,
    RoBERTa's 64-channel heads."""
    from transformers import ClapConfig

    def count(prefix: str) -> int:
        return len({k[len(prefix) :].split(".")[0] for k in state if k.startswith(prefix)})

    words = state["text_model.embeddings.word_embeddings.weight"]
    audio = "audio_model.audio_encoder."
    stages = count(f"{audio}layers.")
    tables = [state[f"{audio}layers.{i}.blocks.0.attention.self.relative_position_bias_table"] for i in range(stages)]
    return ClapConfig(
        text_config={
            "vocab_size": words.shape[0],
            "hidden_size": words.shape[1],
            "num_hidden_layers": count("text_model.encoder.layer."),
            "num_attention_heads": max(1, words.shape[1] // 64),
            "intermediate_size": state["text_model.encoder.layer.0.intermediate.dense.weight"].shape[0],
            "max_position_embeddings": state["text_model.embeddings.position_embeddings.weight"].shape[0],
            "type_vocab_size": state["text_model.embeddings.token_type_embeddings.weight"].shape[0],
            "layer_norm_eps": 1e-5,
            "pad_token_id": 1,
        },
        audio_config={
            "spec_size": 256,
            "patch_size": 4,
            "patch_stride": [4, 4],
            "patch_embeds_hidden_size": state[f"{audio}patch_embed.proj.weight"].shape[0],
            "hidden_size": state[f"{audio}norm.weight"].shape[0],
            "depths": [count(f"{audio}layers.{i}.blocks.") for i in range(stages)],
            "num_attention_heads": [t.shape[1] for t in tables],
            "window_size": (round(tables[0].shape[0] ** 0.5) + 1) // 2,
            "num_mel_bins": state[f"{audio}batch_norm.weight"].shape[0],
            "enable_fusion": False,
        },
        projection_dim=state["text_projection.linear2.weight"].shape[0],
        projection_hidden_act="relu",
    )


def log_mel_extractor():
    """HTSAT's front end: torchlibrosa's power spectrogram and log-mel with LAION-CLAP's settings."""
    from torch import nn
    from torchlibrosa.stft import LogmelFilterBank, Spectrogram

    fft = {"n_fft": 1024, "freeze_parameters": True}
    spectrogram = Spectrogram(hop_length=480, win_length=1024, window="hann", center=True, pad_mode="reflect", **fft)
    mel = LogmelFilterBank(sr=SAMPLE_RATE, n_mels=64, fmin=50, fmax=14000, ref=1.0, amin=1e-10, top_db=None, **fft)
    return nn.Sequential(spectrogram, mel).eval()


class ClapEncoder:
    """LAION-CLAP's normalised audio and text embeddings with ``transformers.ClapModel``."""

    def __init__(self, state: dict, tokenizer, device: str = "cpu"):
        from transformers import ClapModel

        converted = laion_to_transformers(state)
        model = ClapModel(config_for(converted))
        missing, unexpected = model.load_state_dict(converted, strict=False)
        if unexpected or set(missing) - set(OWN_BUFFERS):
            raise MetricError(
                f"not a LAION-CLAP (HTSAT, RoBERTa) state dict: missing {sorted(set(missing) - set(OWN_BUFFERS))[:5]}, "
                f"unexpected {sorted(unexpected)[:5]}"
            )
        self.model, self.tokenizer, self.device = model.eval().to(device), tokenizer, device
        self.front_end = log_mel_extractor().to(device)

    def audio(self, waveforms: list[np.ndarray]):
        """(N, D) embeddings of 48 kHz mono waveforms (each repeat-padded to 10 s)."""
        import torch

        with torch.inference_mode():
            x = torch.from_numpy(np.stack([repeat_pad(w) for w in waveforms]).astype(np.float32)).to(self.device)
            features = self.model.audio_model(input_features=self.front_end(x)).pooler_output
            return torch.nn.functional.normalize(self.model.audio_projection(features), dim=-1)

    def text(self, texts: list[str]):
        """(N, D) embeddings of texts, tokenised as LAION-CLAP does (padded and cut to 77 tokens)."""
        import torch

        tokens = self.tokenizer(
            texts, padding="max_length", truncation=True, max_length=MAX_TOKENS, return_tensors="pt"
        )
        with torch.inference_mode():
            features = self.model.text_model(
                input_ids=tokens["input_ids"].to(self.device), attention_mask=tokens["attention_mask"].to(self.device)
            ).pooler_output
            return torch.nn.functional.normalize(self.model.text_projection(features), dim=-1)


@register
class Clap(Metric):
    name = "clap"
    aspect = "audio-text"
    description = "LAION-CLAP text-audio cosine similarity of the audio and its caption (av-benchmark's LAION_CLAP)"
    audio = AudioNeeds(sample_rate=SAMPLE_RATE)
    checkpoints = (CHECKPOINT, TOKENIZER)
    takes_device = True
    scales = {"clap_laion": (-1.0, 1.0)}

    def __init__(self, root=None, device: str = "cpu"):
        try:
            from transformers import RobertaTokenizer
        except ImportError as err:
            raise MetricError("clap needs torch and transformers: pip install 'avjudge[metrics]'") from err
        (path,) = resolve(CHECKPOINT, root).values()
        tokenizer_files = resolve(TOKENIZER, root)
        tokenizer = RobertaTokenizer(str(tokenizer_files["vocab.json"]), str(tokenizer_files["merges.txt"]))
        try:
            self.encoder = ClapEncoder(load_torch_file(path), tokenizer, device)
        except (KeyError, MetricError) as err:
            raise MetricError(f"{path} is not a LAION-CLAP (HTSAT, RoBERTa) checkpoint: {err}") from err

    def compute(self, clip, captions=None, **ctx):
        text = (captions or {}).get("audio") or (captions or {}).get("video")
        if not text:
            raise MetricError("clap compares the audio with the prompt's text: this clip has no caption")
        audio = self.encoder.audio([reference_waveform(clip, SAMPLE_RATE)])
        return {"clap_laion": float((audio * self.encoder.text([text])).sum())}
