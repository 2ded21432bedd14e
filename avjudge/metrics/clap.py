"""CLAP text-audio similarity as av-benchmark computes ``LAION-CLAP-Score`` and ``MS-CLAP-Score``.

- ``clap``: LAION-CLAP (HTSAT-base audio encoder, RoBERTa text encoder; the checkpoint GenAU and MMAudio use,
  ``music_speech_audioset_epoch_15_esc_89.98.pt``). The audio at 48 kHz mono, the mean removed, the first 8 s
  (av-benchmark's ``AudioDataset``), repeated and zero-padded to 10 s (LAION-CLAP's ``repeatpad``); the text
  tokenised by RoBERTa's tokenizer (77 tokens).
- ``clap_ms``: MS-CLAP 2023 (HTSAT-tiny audio encoder, GPT-2 text encoder). The audio at 44.1 kHz mono, 7 s (a shorter
  clip repeated; av-benchmark's file reader crops 7 s at random, avjudge takes the first 7), the log-mel of HTSAT's
  own configuration (built for 32 kHz, as MS-CLAP's code builds it whatever rate it is given); the text with GPT-2's
  ``<|endoftext|>`` appended, its last token's state.

Each: the embeddings of the audio and of the prompt's audio caption, projected and normalised; the output is their
cosine similarity. The audio network is ``transformers``' HTSAT (``ClapAudioModel``), loaded from each release's own
state dict through `htsat_to_transformers`; the log-mel is torchlibrosa's, as both compute it inside their models.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np

from .base import AudioNeeds, Metric, MetricError, load_torch_file, register
from .checkpoints import resolve
from .reference_audio import reference_waveform

SAMPLE_RATE = 48000
CLIP_SAMPLES = 480000  # LAION-CLAP's 10 s input
MAX_TOKENS = 77
CHECKPOINT = "laion_clap_music_speech"
TOKENIZER = "roberta_base_tokenizer"
MS_SAMPLE_RATE = 44100
MS_CLIP_SAMPLES = 7 * MS_SAMPLE_RATE
MS_CHECKPOINT = "msclap_2023"
MS_TOKENIZER = "gpt2_tokenizer"
# what each release's state dict carries that the embeddings never use or transformers recomputes: the
# spectrogram's fixed weights (torchlibrosa recomputes them), the shifted windows' attention masks, the AudioSet
# tagging head, LAION-CLAP's contrastive-loss transforms, GPT-2's old causal-mask buffers
UNUSED = re.compile(
    r".*(spectrogram_extractor|logmel_extractor|tscam_conv|\.head)\.|(text|audio)_transform\.|.*\.attn_mask$"
    r"|.*\.attn\.(masked_)?bias$"
)
# transformers' buffers LAION-CLAP's state dict does not carry (position and token type ids)
OWN_BUFFERS = ("text_model.embeddings.position_ids", "text_model.embeddings.token_type_ids")


@dataclass(frozen=True)
class FrontEnd:
    """HTSAT's log-mel settings (torchlibrosa: Hann window, centred with reflection, power, log10, no top_db)."""

    sample_rate: int  # the rate the mel bank is built for
    hop: int
    fmax: int
    n_fft: int = 1024
    mels: int = 64
    fmin: int = 50

    def build(self):
        from torch import nn
        from torchlibrosa.stft import LogmelFilterBank, Spectrogram

        fft = {"n_fft": self.n_fft, "freeze_parameters": True}
        spectrogram = Spectrogram(
            hop_length=self.hop, win_length=self.n_fft, window="hann", center=True, pad_mode="reflect", **fft
        )
        mel = LogmelFilterBank(
            sr=self.sample_rate,
            n_mels=self.mels,
            fmin=self.fmin,
            fmax=self.fmax,
            ref=1.0,
            amin=1e-10,
            top_db=None,
            **fft,
        )
        return nn.Sequential(spectrogram, mel).eval()


LAION_FRONT_END = FrontEnd(sample_rate=SAMPLE_RATE, hop=480, fmax=14000)
MS_FRONT_END = FrontEnd(sample_rate=32000, hop=320, fmax=14000)  # MS-CLAP's HTSAT config, fed 44.1 kHz audio


def repeat_pad(audio: np.ndarray, length: int = CLIP_SAMPLES) -> np.ndarray:
    """LAION-CLAP's ``repeatpad``: a shorter clip repeated whole as often as it fits, then zeros; a longer one cut
    (LAION-CLAP crops at random there; av-benchmark's 8 s never reaches it)."""
    if len(audio) >= length:
        return audio[:length]
    tiled = np.tile(audio, length // len(audio))
    return np.pad(tiled, (0, length - len(tiled)))


def repeat_cut(audio: np.ndarray, length: int = MS_CLIP_SAMPLES) -> np.ndarray:
    """MS-CLAP's: a shorter clip repeated (the last copy cut) to ``length``; a longer one's first ``length``."""
    return np.tile(audio, -(-length // len(audio)))[:length]


def count(state: dict, prefix: str) -> int:
    """How many numbered modules ``prefix0.``, ``prefix1.``... a state dict has."""
    return len({k[len(prefix) :].split(".")[0] for k in state if k.startswith(prefix)})


def htsat_to_transformers(state: dict, prefix: str) -> dict:
    """The HTSAT under ``prefix`` of a release's state dict, under ``transformers.ClapAudioModel``'s names."""
    out = {}
    for key, value in state.items():
        if not key.startswith(prefix) or UNUSED.match(key):
            continue
        new = "audio_encoder." + key[len(prefix) :]
        new = new.replace("audio_encoder.bn0.", "audio_encoder.batch_norm.")
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


def htsat_config(state: dict) -> dict:
    """``ClapAudioConfig`` arguments of a converted HTSAT: sizes from its tensors."""
    audio = "audio_encoder."
    stages = count(state, f"{audio}layers.")
    tables = [state[f"{audio}layers.{i}.blocks.0.attention.self.relative_position_bias_table"] for i in range(stages)]
    return {
        "spec_size": 256,
        "patch_size": 4,
        "patch_stride": [4, 4],
        "patch_embeds_hidden_size": state[f"{audio}patch_embed.proj.weight"].shape[0],
        "hidden_size": state[f"{audio}norm.weight"].shape[0],
        "depths": [count(state, f"{audio}layers.{i}.blocks.") for i in range(stages)],
        "num_attention_heads": [t.shape[1] for t in tables],
        "window_size": (round(tables[0].shape[0] ** 0.5) + 1) // 2,
        "num_mel_bins": state[f"{audio}batch_norm.weight"].shape[0],
        "enable_fusion": False,
    }


def laion_to_transformers(state: dict) -> dict:
    """LAION-CLAP's state dict (HTSAT audio branch, RoBERTa text branch) under ``transformers.ClapModel``'s names."""
    state = {k.removeprefix("module."): v for k, v in state.get("state_dict", state).items()}
    out = {f"audio_model.{k}": v for k, v in htsat_to_transformers(state, "audio_branch.").items()}
    for key, value in state.items():
        if key.startswith("audio_branch.") or UNUSED.match(key) or key == "text_branch.embeddings.position_ids":
            continue
        new = re.sub(r"^text_branch\.", "text_model.", key)
        new = re.sub(r"^(text|audio)_projection\.0\.", r"\1_projection.linear1.", new)
        out[re.sub(r"^(text|audio)_projection\.2\.", r"\1_projection.linear2.", new)] = value
    return out


def config_for(state: dict):
    """The ``ClapConfig`` of a LAION-CLAP state dict (already under transformers' names): sizes from its tensors,
    RoBERTa's 64-channel heads."""
    from transformers import ClapConfig

    words = state["text_model.embeddings.word_embeddings.weight"]
    audio = {k.removeprefix("audio_model."): v for k, v in state.items() if k.startswith("audio_model.")}
    return ClapConfig(
        text_config={
            "vocab_size": words.shape[0],
            "hidden_size": words.shape[1],
            "num_hidden_layers": count(state, "text_model.encoder.layer."),
            "num_attention_heads": max(1, words.shape[1] // 64),
            "intermediate_size": state["text_model.encoder.layer.0.intermediate.dense.weight"].shape[0],
            "max_position_embeddings": state["text_model.embeddings.position_embeddings.weight"].shape[0],
            "type_vocab_size": state["text_model.embeddings.token_type_embeddings.weight"].shape[0],
            "layer_norm_eps": 1e-5,
            "pad_token_id": 1,
        },
        audio_config=htsat_config(audio),
        projection_dim=state["text_projection.linear2.weight"].shape[0],
        projection_hidden_act="relu",
    )


class HtsatAudio:
    """The audio side both CLAPs share: the clip fitted to the model's length (``fit``), the HTSAT log-mel
    (``front_end``), ``transformers``' HTSAT (``audio_model``) and the release's ``audio_projection``."""

    fit: Callable[[np.ndarray], np.ndarray]

    def audio(self, waveforms: list[np.ndarray]):
        """(N, D) normalised embeddings of mono waveforms at the model's rate."""
        import torch

        with torch.inference_mode():
            x = torch.from_numpy(np.stack([self.fit(w) for w in waveforms]).astype(np.float32)).to(self.device)
            features = self.audio_model(input_features=self.front_end(x)).pooler_output
            return torch.nn.functional.normalize(self.audio_projection(features), dim=-1)


class ClapEncoder(HtsatAudio):
    """LAION-CLAP's normalised audio and text embeddings with ``transformers.ClapModel``; its audio repeat-padded
    to 10 s at 48 kHz."""

    fit = staticmethod(repeat_pad)

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
        self.audio_model, self.audio_projection = self.model.audio_model, self.model.audio_projection
        self.front_end = LAION_FRONT_END.build().to(device)

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


class MsProjection:
    """MS-CLAP's projection: ``layer_norm(l1(x) + l2(gelu(l1(x))))``, both linears without bias."""

    @staticmethod
    def build(d_in: int, d_out: int):
        from torch import nn

        class Projection(nn.Module):
            def __init__(self):
                super().__init__()
                self.linear1 = nn.Linear(d_in, d_out, bias=False)
                self.linear2 = nn.Linear(d_out, d_out, bias=False)
                self.layer_norm = nn.LayerNorm(d_out)

            def forward(self, x):
                first = self.linear1(x)
                return self.layer_norm(first + self.linear2(nn.functional.gelu(first)))

        return Projection()


class MsClapEncoder(HtsatAudio):
    """MS-CLAP 2023's normalised audio and text embeddings: ``transformers``' HTSAT and GPT-2 with MS-CLAP's
    projections; its audio repeated or cut to 7 s at 44.1 kHz."""

    fit = staticmethod(repeat_cut)

    def __init__(self, state: dict, tokenizer, device: str = "cpu"):
        from transformers import ClapAudioConfig, ClapAudioModel, GPT2Config, GPT2Model

        state = state.get("model", state)
        audio_state = htsat_to_transformers(state, "audio_encoder.base.htsat.")
        text_state = {k.removeprefix("caption_encoder.base."): v for k, v in state.items()
                      if k.startswith("caption_encoder.base.") and not UNUSED.match(k)}  # fmt: skip
        words = text_state["wte.weight"]
        parts = {
            "audio_model": (ClapAudioModel(ClapAudioConfig(**htsat_config(audio_state))), audio_state),
            "text_model": (
                GPT2Model(
                    GPT2Config(
                        vocab_size=words.shape[0],
                        n_positions=text_state["wpe.weight"].shape[0],
                        n_embd=words.shape[1],
                        n_layer=count(text_state, "h."),
                        n_head=max(1, words.shape[1] // 64),
                    )
                ),
                text_state,
            ),
        }
        for side, prefix in (
            ("audio_projection", "audio_encoder.projection."),
            ("text_projection", "caption_encoder.projection."),
        ):
            weights = {k.removeprefix(prefix): v for k, v in state.items() if k.startswith(prefix)}
            if "linear1.weight" not in weights:
                raise MetricError(f"not an MS-CLAP state dict: no {prefix}linear1.weight")
            parts[side] = (MsProjection.build(*weights["linear1.weight"].shape[::-1]), weights)
        for name, (module, weights) in parts.items():
            try:
                module.load_state_dict(weights, strict=True)
            except RuntimeError as err:
                raise MetricError(f"not an MS-CLAP (HTSAT, GPT-2) state dict ({name}): {err}") from err
            setattr(self, name, module.eval().to(device))
        self.tokenizer, self.device = tokenizer, device
        self.front_end = MS_FRONT_END.build().to(device)

    def text(self, texts: list[str]):
        """(N, D) embeddings of texts with ``<|endoftext|>`` appended, padded with ``!`` (id 0) to 77 tokens; each
        text's state is that of its last token before the padding."""
        import torch

        tokens = self.tokenizer([t + " <|endoftext|>" for t in texts], padding="max_length", truncation=True,
                                max_length=MAX_TOKENS, return_tensors="pt")  # fmt: skip
        ids = tokens["input_ids"].to(self.device)
        with torch.inference_mode():
            hidden = self.text_model(input_ids=ids, attention_mask=tokens["attention_mask"].to(self.device))[0]
            last = hidden[torch.arange(len(ids), device=ids.device), torch.ne(ids, 0).sum(-1) - 1]
            return torch.nn.functional.normalize(self.text_projection(last), dim=-1)


def caption_of(captions: dict | None) -> str:
    text = (captions or {}).get("audio") or (captions or {}).get("video")
    if not text:
        raise MetricError("clap compares the audio with the prompt's text: this clip has no caption")
    return text


class ClapMetric(Metric):
    """A CLAP's cosine similarity of a clip's audio and its caption; subclasses name the release's checkpoint and
    tokenizer entries, the encoder and the tokenizer that read them, and the clip's waveform as the release takes it."""

    aspect = "audio-text"
    takes_device = True
    output: ClassVar[str]
    release: ClassVar[str]  # what the checkpoint is, for errors
    encoder_class: ClassVar[type]
    tokenizer_class: ClassVar[str]  # a transformers tokenizer class built from vocab.json and merges.txt
    tokenizer_options: ClassVar[dict] = {}

    def __init__(self, root=None, device: str = "cpu"):
        try:
            import transformers
        except ImportError as err:
            raise MetricError(f"{self.name} needs torch and transformers: pip install 'avjudge[metrics]'") from err
        weights, tokenizer = self.checkpoints
        (path,) = resolve(weights, root).values()
        files = resolve(tokenizer, root)
        tokenizer = getattr(transformers, self.tokenizer_class)(
            str(files["vocab.json"]), str(files["merges.txt"]), **self.tokenizer_options
        )
        try:
            self.encoder = self.encoder_class(load_torch_file(path), tokenizer, device)
        except (KeyError, MetricError) as err:
            raise MetricError(f"{path} is not a {self.release} checkpoint: {err}") from err

    def waveform(self, clip) -> np.ndarray:
        raise NotImplementedError

    def compute(self, clip, captions=None, **ctx):
        text = caption_of(captions)
        audio = self.encoder.audio([self.waveform(clip)])
        return {self.output: float((audio * self.encoder.text([text])).sum())}


@register
class Clap(ClapMetric):
    name = "clap"
    description = "LAION-CLAP cosine similarity of the audio and its caption (av-benchmark's LAION-CLAP-Score)"
    audio = AudioNeeds(sample_rate=SAMPLE_RATE)
    checkpoints = (CHECKPOINT, TOKENIZER)
    scales = {"clap_laion": (-1.0, 1.0)}
    output = "clap_laion"
    release = "LAION-CLAP (HTSAT, RoBERTa)"
    encoder_class = ClapEncoder
    tokenizer_class = "RobertaTokenizer"

    def waveform(self, clip) -> np.ndarray:
        return reference_waveform(clip, SAMPLE_RATE)  # av-benchmark's: the mean removed, 8 s at most


@register
class MsClap(ClapMetric):
    name = "clap_ms"
    description = "MS-CLAP 2023 cosine similarity of the audio and its caption (av-benchmark's MS-CLAP-Score)"
    audio = AudioNeeds(sample_rate=MS_SAMPLE_RATE)
    checkpoints = (MS_CHECKPOINT, MS_TOKENIZER)
    scales = {"clap_ms": (-1.0, 1.0)}
    output = "clap_ms"
    release = "MS-CLAP 2023 (HTSAT, GPT-2)"
    encoder_class = MsClapEncoder
    tokenizer_class = "GPT2Tokenizer"
    tokenizer_options = {"pad_token": "!"}

    def waveform(self, clip) -> np.ndarray:
        return self.audio_of(clip)  # msclap reads files whole: no mean removed, no 8 s cut before its 7 s
