"""Model adapters: turn judge samples into one model's inputs and return next-token logits.

One registry keyed by the checkpoint's ``model_type``. Checkpoints load only from a local
directory (``local_files_only``), never with ``trust_remote_code`` unless asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable, ClassVar

import numpy as np
import torch

from ..config import ConfigError
from ..devices import device_name
from ..errors import AvjudgeError
from ..jsonl import read_json_object
from ..prompts import CHAT_FORMATS, ChatFormat, render_prompt
from .attention import pack_encoder_windows
from .compiling import compile_blocks
from .media_inputs import (
    VisionPreprocess,
    audio_feature_tokens,
    chunked_audio_tokens,
    interleaved_video_audio,
    log_mel_torch,
    merged_video_audio,
    video_patches,
    video_patches_on_device,
    video_patches_torch,
    whisper_features,
    whisper_frames,
)
from .sync_adapter import CONFIG_KEY as SYNC_KEY
from .sync_adapter import NAME as SYNC_NAME
from .sync_adapter import add_sync_adapter, check_spec, sync_spec, sync_thinker_class
from .widths import align_mlp_widths


class CheckpointError(AvjudgeError):
    """A judge checkpoint directory that cannot be used, with what to do about it."""


@dataclass
class JudgeSample:
    """One thing to judge: frames sampled at the judge's fps, 16 kHz mono audio, texts."""

    frames: np.ndarray | None = None
    fps: float | None = None
    audio: np.ndarray | None = None
    text: str | None = None
    utterance: str | None = None


@dataclass
class PreparedSample:
    """Model-ready pieces of one sample, built on the CPU (in DataLoader workers when training).

    Where an adapter prepares frames on the model's device (`Adapter.media_on_device`), ``frames`` holds the sampled
    frames instead of ``pixel_values_videos``: `Adapter.collate` makes those on the device, batch by batch, the same
    values bit for bit. The token ids are final either way."""

    input_ids: list[int]
    pixel_values_videos: np.ndarray | None = None
    video_grid_thw: tuple[int, int, int] | None = None
    video_second_per_grid: float | None = None
    input_features: np.ndarray | None = None
    feature_attention_mask: np.ndarray | None = None
    labels: list[int] | None = None  # training: -100 except the supervised answer token
    frames: np.ndarray | None = None  # (T, H, W, 3) uint8 at the judge's fps, for the device to resize and normalise

    @property
    def length(self) -> int:
        return len(self.input_ids)


def _read_json(path: Path) -> dict:
    return read_json_object(path, "copy the checkpoint folder again") if path.exists() else {}


def resolve_device(device: str) -> torch.device:
    return torch.device(device_name(device))


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    if dtype == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    try:
        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    except KeyError as err:
        raise ValueError(f"dtype must be auto, float32, bfloat16 or float16, not {dtype!r}") from err


# the JSON files of a checkpoint that transformers reads as it loads: one cut short is an error naming it here, not
# a traceback from deep inside transformers
CHECKPOINT_JSON = ("config.json", "preprocessor_config.json", "tokenizer_config.json", "generation_config.json")


def check_checkpoint_files(checkpoint: Path) -> None:
    """Each of ``checkpoint``'s `CHECKPOINT_JSON` files that is there, read as a JSON object.

    Raises:
        ConfigError: one that is not (a copy cut short, a hand edit), naming it.
    """
    for name in CHECKPOINT_JSON:
        path = Path(checkpoint) / name
        if path.is_file():
            read_json_object(path, f"copy the judge's folder again (its {name} is broken)")


class Adapter:
    """Base: tokenisation, audio features, left-padded collation, last-position logits."""

    family: ClassVar[str]
    display_name: ClassVar[str]  # how cards and figures name the architecture
    model_types: ClassVar[tuple[str, ...]]
    # parameter-name prefixes of each part of the model (the longest matching prefix decides)
    module_groups: ClassVar[dict[str, tuple[str, ...]]] = {}
    reads_frames: ClassVar[bool] = False
    windowed_encoders: ClassVar[tuple[str, ...]] = ()  # sub-configs of encoders that attend in windows
    supports_audio_in_video: ClassVar[bool] = False
    supports_sync_adapter: ClassVar[bool] = False  # `avjudge.judges.sync_adapter`
    use_audio_in_video = False  # set by the Judge from its settings
    media_on_device = False  # set by the Judge: frames resized and normalised on the model's device, per batch

    def __init__(
        self,
        model,
        tokenizer,
        feature_extractor,
        vision: VisionPreprocess | None,
        checkpoint: Path,
        build_model: Callable[[], torch.nn.Module] | None = None,
    ):
        self._model, self._build_model = model, build_model
        self.tokenizer = tokenizer
        self.feature_extractor = feature_extractor
        self.vision = vision
        self.checkpoint = checkpoint
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        # the checkpoint's sync adapter (`avjudge.judges.sync_adapter`): its config entry, None where it has none
        spec = _read_json(checkpoint / "config.json").get(SYNC_KEY)
        if spec is not None and not self.supports_sync_adapter:
            raise CheckpointError(f"{checkpoint}: a {self.family} judge cannot carry a sync adapter (Qwen2.5-Omni can)")
        self.sync_spec: dict | None = check_spec(spec) if spec is not None else None

    # -- loading ---------------------------------------------------------------------------
    @classmethod
    def model_class(cls):
        raise NotImplementedError

    @classmethod
    def model_class_of(cls, checkpoint: Path, config=None):
        """The class ``checkpoint`` (or ``config``, where given) loads as."""
        return cls.model_class()

    @classmethod
    def load(
        cls,
        checkpoint: Path,
        device: str = "auto",
        dtype: str = "auto",
        trust_remote_code: bool = False,
        config=None,
        attention: str = "auto",
        defer_weights: bool = False,
        align_widths: int = 0,
        compiled: bool = False,
    ) -> "Adapter":
        """The adapter of ``checkpoint``'s model on ``device``; with ``defer_weights``, the weights load when the model
        is first used (a process that only hands the judge on, as Ray's driver does, never loads them). For scoring:
        ``align_widths`` pads MLP widths to a multiple of it (`avjudge.judges.widths`); ``compiled`` compiles the
        model's repeated blocks (`avjudge.judges.compiling`)."""
        check_checkpoint_files(checkpoint)
        build = partial(
            cls.load_model, checkpoint, device, dtype, trust_remote_code, config, attention, align_widths, compiled
        )
        return cls.around(None if defer_weights else build(), checkpoint, build)

    @classmethod
    def load_model(
        cls,
        checkpoint: Path,
        device: str,
        dtype: str,
        trust_remote_code: bool,
        config,
        attention: str,
        align_widths: int = 0,
        compiled: bool = False,
    ):
        dev = resolve_device(device)
        kwargs = dict(local_files_only=True, trust_remote_code=trust_remote_code, dtype=resolve_dtype(dtype, dev))
        if config is not None:
            kwargs["config"] = config
        model = cls.model_class_of(checkpoint, config).from_pretrained(str(checkpoint), **kwargs).to(dev).eval()
        cls.set_attention(model, attention)
        if align_widths:
            align_mlp_widths(model, align_widths)
        if compiled:
            compile_blocks(model)
        return model

    @property
    def model(self) -> torch.nn.Module:
        if self._model is None:
            if self._build_model is None:
                raise ValueError(f"the adapter of {self.checkpoint} holds no model (a served judge's)")
            self._model = self._build_model()
        return self._model

    @model.setter
    def model(self, model: torch.nn.Module) -> None:
        self._model = model

    @classmethod
    def set_attention(cls, model, attention: str = "auto") -> None:
        """``auto``: transformers' default for the language model and packed windows for the encoders that attend in
        windows (`avjudge.judges.attention`); any other name (``sdpa``, ``eager``, ``flash_attention_2``...):
        transformers' implementation of that name for the whole model."""
        if attention == "auto":
            pack_encoder_windows(model, cls.windowed_encoders)
            return
        try:
            model.set_attn_implementation(attention)
        except (ValueError, ImportError) as err:
            raise ConfigError(f"attention {attention!r} cannot be used: {err}") from err

    @classmethod
    def around(cls, model, checkpoint: Path, build_model: Callable[[], torch.nn.Module] | None = None) -> "Adapter":
        """An adapter of a model already built (or of none, or of what ``build_model`` builds when first used), with
        the tokenizer and processor settings stored in ``checkpoint`` (`benchmarks/real_size_judges.py` builds
        real-size models with random weights this way)."""
        from transformers import AutoTokenizer, WhisperFeatureExtractor

        tokenizer = AutoTokenizer.from_pretrained(str(checkpoint), local_files_only=True)
        feature_extractor = WhisperFeatureExtractor.from_pretrained(str(checkpoint), local_files_only=True)
        pre = _read_json(checkpoint / "preprocessor_config.json")
        vision = VisionPreprocess.from_config(pre) if cls.reads_frames else None
        return cls(model, tokenizer, feature_extractor, vision, checkpoint, build_model)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def max_audio_seconds(self) -> float:
        return self.feature_extractor.n_samples / self.feature_extractor.sampling_rate

    # -- inputs ----------------------------------------------------------------------------
    # Mel frames fed to the model: the whole window (an encoder of fixed length) or only the valid ones.
    pad_audio_to_window: ClassVar[bool] = True

    @property
    def chat_format(self) -> ChatFormat:
        return CHAT_FORMATS[self.family]

    def audio_tokens(self, valid_frames: int) -> int:
        """Tokens the audio encoder emits for a number of valid mel frames."""
        return audio_feature_tokens(valid_frames)

    def audio_features(self, audio: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """(features, mask, tokens) of mono audio, on the CPU."""
        features, mask = self.audio_feature_tensors(torch.from_numpy(np.ascontiguousarray(audio, np.float32)))
        return features.numpy(), mask.numpy(), self.audio_tokens(int(mask.sum()))

    def audio_feature_tensors(self, audio: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(features (n_mels, frames), mask) of a (N,) waveform, computed where the waveform is."""
        fe = self.feature_extractor
        return whisper_features(audio, fe, fe.nb_max_frames if self.pad_audio_to_window else None)

    def video_inputs(self, prepared: PreparedSample, frames: np.ndarray, fps: float) -> int:
        """Put ``frames``' pixel values in ``prepared`` (or, for the device, the frames themselves); its token
        count."""
        if self.media_on_device:
            prepared.frames = frames
            prepared.video_grid_thw = self.vision.grid(frames.shape)
        else:
            prepared.pixel_values_videos, prepared.video_grid_thw = video_patches(frames, self.vision)
        prepared.video_second_per_grid = self.vision.temporal_patch_size / fps
        return self.vision.tokens(prepared.video_grid_thw)

    @torch.no_grad()
    def audio_encoder_states(self, audio: np.ndarray) -> np.ndarray:
        """The audio encoder's last hidden states of mono audio at the feature extractor's rate, (tokens, dim), the
        positions of the valid audio only: what a linear probe of the frozen encoder reads."""
        features, mask, tokens = self.audio_features(audio)
        states = self._encode_audio(torch.from_numpy(features)[None], torch.from_numpy(mask)[None].long())
        return states[:tokens].float().cpu().numpy()

    @property
    def audio_tower(self) -> torch.nn.Module:
        return self.model.get_submodule(self.module_groups["audio_encoder"][0].rstrip("."))

    def _encode_audio(self, features: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The whole-window encoder with the padding masked out of attention, as the model's own forward does."""
        from transformers.masking_utils import create_bidirectional_mask

        tower = self.audio_tower
        valid, _ = tower._get_feat_extract_output_lengths(mask.sum(-1))
        positions = (features.shape[-1] - 2) // 2 + 1
        attention = create_bidirectional_mask(
            config=tower.config,
            inputs_embeds=torch.zeros((1, positions, 1), dtype=tower.dtype, device=self.device),
            attention_mask=(torch.arange(positions) < valid[:, None]).long().to(self.device),
        )
        return tower(features.to(self.device, tower.dtype), attention_mask=attention).last_hidden_state[0]

    def differentiable_audio(self, waveform: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Features of a (N,) waveform that keep its autograd history, laid out as ``audio_features``."""
        fe = self.feature_extractor
        n = waveform.shape[-1]
        padded = torch.nn.functional.pad(waveform, (0, fe.n_samples - n))
        features = log_mel_torch(padded, fe)[None]
        valid = whisper_frames(n, fe)
        if not self.pad_audio_to_window:
            features = features[..., :valid]
        mask = torch.zeros(1, features.shape[-1], dtype=torch.long)
        mask[0, :valid] = 1
        return features, mask, self.audio_tokens(valid)

    def token_ids(self, text: str, video_tokens: int = 0, audio_tokens: int = 0) -> list[int]:
        """Tokenise a rendered prompt, expanding each media placeholder to its token count."""
        fmt = self.chat_format
        text = text.replace(fmt.video_pad, fmt.video_pad * video_tokens).replace(
            fmt.audio_pad, fmt.audio_pad * audio_tokens
        )
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def prepare(
        self, task: str, sample: JudgeSample, answer: str | None = None, system: str | None = None
    ) -> PreparedSample:
        raise NotImplementedError

    def collate(
        self, samples: list[PreparedSample], padding_side: str = "left", device: torch.device | None = None
    ) -> dict[str, torch.Tensor]:
        """Pad to one batch; scoring pads on the left so every prompt ends at the last position. Frames left for the
        device (`PreparedSample.frames`) become pixel values on ``device`` (the CPU if None)."""
        width = max(s.length for s in samples)
        ids = torch.full((len(samples), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(samples), width), dtype=torch.long)
        labels = torch.full((len(samples), width), -100, dtype=torch.long)
        for i, s in enumerate(samples):
            span = slice(width - s.length, width) if padding_side == "left" else slice(0, s.length)
            ids[i, span] = torch.tensor(s.input_ids)
            mask[i, span] = 1
            if s.labels is not None:
                labels[i, span] = torch.tensor(s.labels)
        batch: dict[str, torch.Tensor] = {"input_ids": ids, "attention_mask": mask}
        if samples[0].labels is not None:
            batch["labels"] = labels
        if samples[0].input_features is not None:
            frames = max(s.input_features.shape[1] for s in samples)
            features = torch.zeros((len(samples), samples[0].input_features.shape[0], frames))
            masks = torch.zeros((len(samples), frames), dtype=torch.long)
            for i, s in enumerate(samples):
                features[i, :, : s.input_features.shape[1]] = torch.from_numpy(s.input_features)
                masks[i, : len(s.feature_attention_mask)] = torch.from_numpy(s.feature_attention_mask)
            batch["input_features"], batch["feature_attention_mask"] = features, masks
        if samples[0].pixel_values_videos is not None or samples[0].frames is not None:
            # torch.cat: several times faster than np.concatenate on these large arrays
            batch["pixel_values_videos"] = torch.cat([self._sample_pixels(s, device) for s in samples])
            batch["video_grid_thw"] = torch.tensor([s.video_grid_thw for s in samples], dtype=torch.long)
            batch["video_second_per_grid"] = torch.tensor([s.video_second_per_grid for s in samples])
        return batch

    def _sample_pixels(self, s: PreparedSample, device: torch.device | None) -> torch.Tensor:
        if s.frames is None:
            return torch.from_numpy(s.pixel_values_videos)
        return video_patches_on_device(torch.from_numpy(s.frames).to(device), self.vision)[0]

    # -- forward ---------------------------------------------------------------------------
    def to_device(self, batch: dict) -> dict:
        """A batch on the model's device, its float inputs in the model's dtype; values not tensors pass as they are."""
        dtype = next(self.model.parameters()).dtype
        out = {}
        for key, value in batch.items():
            if isinstance(value, torch.Tensor):
                value = value.to(self.device)
                if value.is_floating_point() and key != "video_second_per_grid":
                    value = value.to(dtype)
            out[key] = value
        return out

    def forward_kwargs(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return batch

    @torch.inference_mode()
    def generate_ids(self, prepared: PreparedSample, max_new_tokens: int) -> list[int]:
        """The token ids of the model's own greedy answer to one prepared prompt."""
        batch = self.to_device(self.collate([prepared], device=self.device))
        kwargs = {k: v for k, v in self.forward_kwargs(batch).items() if k != "position_ids"}  # generate counts them
        core = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model
        output = core.generate(**kwargs, max_new_tokens=max_new_tokens, do_sample=False)
        return output[0, batch["input_ids"].shape[1] :].tolist()

    def generate_text(self, prepared: PreparedSample, max_new_tokens: int) -> str:
        return self.tokenizer.decode(self.generate_ids(prepared, max_new_tokens), skip_special_tokens=True)

    def next_token_logits(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """(B, V) float32 logits of the token after each (left-padded) prompt; raw, no processors."""
        # a peft-wrapped model (LoRA training) scores through its base model, adapters included
        core = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model
        outputs = core.model(**self.forward_kwargs(self.to_device(batch)), use_cache=False)
        return core.lm_head(outputs.last_hidden_state[:, -1]).float()


class Qwen25OmniThinkerAdapter(Adapter):
    """Qwen2.5-Omni thinker: frames as a video item plus the audio as a separate audio item."""

    family = "qwen2_5_omni"
    display_name = "Qwen2.5-Omni"
    model_types = ("qwen2_5_omni_thinker", "qwen2_5_omni")
    full_model_type = "qwen2_5_omni"  # thinker + talker under one config: only the thinker is loaded
    pad_audio_to_window = False  # the thinker keeps only frames its feature mask marks valid
    reads_frames = True
    supports_audio_in_video = True
    supports_sync_adapter = True
    windowed_encoders = ("audio_config", "vision_config")
    module_groups = {
        "llm": ("model.language_model.", "lm_head."),
        "connector": ("model.audio_tower.proj.", "model.visual.merger."),
        "audio_encoder": ("model.audio_tower.",),
        "vision_encoder": ("model.visual.",),
        "sync_adapter": ("sync_adapter.",),
    }

    @classmethod
    def model_class(cls):
        from transformers import Qwen2_5OmniThinkerForConditionalGeneration

        return Qwen2_5OmniThinkerForConditionalGeneration

    @classmethod
    def model_class_of(cls, checkpoint, config=None):
        spec = (
            getattr(config, SYNC_KEY, None)
            if config is not None
            else _read_json(checkpoint / "config.json").get(SYNC_KEY)
        )
        return sync_thinker_class() if spec is not None and cls.supports_sync_adapter else cls.model_class()

    def add_sync_adapter(self, seed: int = 0) -> None:
        """Give this judge's model a fresh sync adapter (training one on a thinker that has none)."""
        if not self.supports_sync_adapter:
            raise ConfigError(f"a {self.display_name} judge cannot carry a sync adapter (Qwen2.5-Omni can)")
        if self.sync_spec is not None:
            return
        self.sync_spec = sync_spec(self.tokenizer)
        add_sync_adapter(self.model, self.sync_spec, seed)

    def sync_tokens(self, grid_thw) -> str:
        """The sync adapter's placeholders of a video of ``grid_thw``: one per token group ("" without an adapter)."""
        return self.sync_spec["placeholder"] * int(grid_thw[0]) if self.sync_spec else ""

    @classmethod
    def full_config_class(cls):
        from transformers import Qwen2_5OmniConfig

        return Qwen2_5OmniConfig

    @classmethod
    def load(cls, checkpoint: Path, **kwargs) -> "Adapter":
        if _read_json(checkpoint / "config.json").get("model_type") == cls.full_model_type:  # never load the talker
            kwargs["config"] = (
                cls.full_config_class().from_pretrained(str(checkpoint), local_files_only=True).thinker_config
            )
        return super().load(checkpoint, **kwargs)

    def video_with_audio(self, grid_thw, second_per_grid: float, audio_tokens: int) -> str:
        """The placeholder run of a video carrying its own audio: 2 s chunks of video then audio tokens."""
        return interleaved_video_audio(
            grid_thw, self.vision.merge_size, second_per_grid, audio_tokens, self.chat_format
        )

    def prepare(self, task, sample, answer=None, system=None):
        video_tokens = audio_tokens = 0
        prepared = PreparedSample(input_ids=[])
        if sample.frames is not None:
            video_tokens = self.video_inputs(prepared, sample.frames, sample.fps)
        if sample.audio is not None:
            prepared.input_features, prepared.feature_attention_mask, audio_tokens = self.audio_features(sample.audio)
        if self.sync_spec and not (self.use_audio_in_video and sample.frames is not None and sample.audio is not None):
            raise ValueError(
                "a judge with a sync adapter compares each picture with the sound of its moment: it needs frames and "
                "sound, the sound inside the video item (use_audio_in_video)"
            )
        if self.use_audio_in_video and sample.frames is not None and sample.audio is not None:
            # the audio rides inside the video item, its tokens interleaved with the frames' in time
            text = render_prompt(task, self.family, sample.text, sample.utterance, answer, system, media=["video"])
            run = self.video_with_audio(prepared.video_grid_thw, prepared.video_second_per_grid, audio_tokens)
            fmt = self.chat_format
            # a sync adapter's tokens follow the video item whole (`avjudge.judges.sync_adapter`)
            item = fmt.video.replace(fmt.video_pad, run) + self.sync_tokens(prepared.video_grid_thw)
            prepared.input_ids = self.tokenizer(text.replace(fmt.video, item), add_special_tokens=False)["input_ids"]
            return prepared
        text = render_prompt(task, self.family, sample.text, sample.utterance, answer, system)
        prepared.input_ids = self.token_ids(text, video_tokens, audio_tokens)
        return prepared

    def forward_kwargs(self, batch):
        return {**batch, "use_audio_in_video": self.use_audio_in_video}

    def _encode_audio(self, features: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        features = features.to(self.device, self.audio_tower.dtype)
        return self.model.get_audio_features(features, mask.to(self.device)).last_hidden_state

    def differentiable_inputs(
        self,
        task: str,
        frames: torch.Tensor | None,
        fps: float | None,
        waveform: torch.Tensor | None,
        text: str | None,
        utterance: str | None,
    ):
        """Inputs whose pixel values and audio features keep their autograd history."""
        if self.sync_spec:
            raise ValueError(
                "a judge with a sync adapter has no differentiable inputs yet (its audio rides in the video)"
            )
        batch: dict[str, torch.Tensor] = {}
        video_tokens = audio_tokens = 0
        if frames is not None:
            patches, grid = video_patches_torch(frames, self.vision)
            batch.update(
                pixel_values_videos=patches,
                video_grid_thw=torch.tensor([grid]),
                video_second_per_grid=torch.tensor([self.vision.temporal_patch_size / fps]),
            )
            video_tokens = self.vision.tokens(grid)
        if waveform is not None:
            features, mask, audio_tokens = self.differentiable_audio(waveform)
            batch.update(input_features=features, feature_attention_mask=mask)
        ids = self.token_ids(render_prompt(task, self.family, text, utterance), video_tokens, audio_tokens)
        batch.update(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long))
        return batch


class Qwen3OmniThinkerAdapter(Qwen25OmniThinkerAdapter):
    """Qwen3-Omni (MoE) thinker: the same inputs as Qwen2.5-Omni's with Qwen3's tokens, 16-px patches, an
    audio encoder that reads the clip alone (no zero-padded window) and audio merged token by token in time."""

    family = "qwen3_omni"
    display_name = "Qwen3-Omni"
    supports_sync_adapter = False
    model_types = ("qwen3_omni_moe_thinker", "qwen3_omni_moe")
    full_model_type = "qwen3_omni_moe"
    module_groups = {
        "llm": ("model.language_model.", "lm_head."),
        "connector": (
            "model.audio_tower.proj1.",
            "model.audio_tower.proj2.",
            "model.visual.merger.",
            "model.visual.merger_list.",
        ),
        "audio_encoder": ("model.audio_tower.",),
        "vision_encoder": ("model.visual.",),
    }

    @classmethod
    def model_class(cls):
        from transformers import Qwen3OmniMoeThinkerForConditionalGeneration

        return Qwen3OmniMoeThinkerForConditionalGeneration

    @classmethod
    def full_config_class(cls):
        from transformers import Qwen3OmniMoeConfig

        return Qwen3OmniMoeConfig

    def audio_tokens(self, valid_frames: int) -> int:
        return chunked_audio_tokens(valid_frames, self.model.config.audio_config.n_window)

    def audio_feature_tensors(self, audio: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # Qwen3-Omni's processor pads to the longest clip of a batch; alone, a clip is not padded at all
        # (the STFT reflects its own ends), which is what every clip gets here, whatever its batch.
        fe = self.feature_extractor
        if len(audio) < fe.n_fft:
            raise ValueError(f"audio of {len(audio)} samples is shorter than one {fe.n_fft}-sample analysis window")
        with torch.no_grad():
            features = log_mel_torch(audio, fe)
        return features, torch.ones(features.shape[1], dtype=torch.long, device=features.device)

    def differentiable_audio(self, waveform):
        features = log_mel_torch(waveform, self.feature_extractor)[None]
        return features, torch.ones(1, features.shape[-1], dtype=torch.long), self.audio_tokens(features.shape[-1])

    def video_with_audio(self, grid_thw, second_per_grid, audio_tokens):
        return merged_video_audio(
            grid_thw,
            self.vision.merge_size,
            second_per_grid,
            audio_tokens,
            self.chat_format,
            self.model.config.position_id_per_seconds,
        )


class Qwen2AudioAdapter(Adapter):
    """Qwen2-Audio: one audio item, always padded to the encoder's 30 s window."""

    family = "qwen2_audio"
    display_name = "Qwen2-Audio"
    model_types = ("qwen2_audio",)
    module_groups = {
        "llm": ("model.language_model.", "lm_head."),
        "connector": ("model.multi_modal_projector.",),
        "audio_encoder": ("model.audio_tower.",),
    }

    @classmethod
    def model_class(cls):
        from transformers import Qwen2AudioForConditionalGeneration

        return Qwen2AudioForConditionalGeneration

    def prepare(self, task, sample, answer=None, system=None):
        if sample.audio is None:
            raise ValueError("the Qwen2-Audio judge needs audio")
        features, mask, audio_tokens = self.audio_features(sample.audio)
        text = render_prompt(task, self.family, sample.text, sample.utterance, answer, system)
        return PreparedSample(
            input_ids=self.token_ids(text, 0, audio_tokens), input_features=features, feature_attention_mask=mask
        )

    def forward_kwargs(self, batch):
        # Positions count real tokens only, so a left-padded row matches the same row alone.
        position_ids = (batch["attention_mask"].cumsum(-1) - 1).clamp(min=0)
        return {**batch, "position_ids": position_ids}

    def differentiable_inputs(self, task, frames, fps, waveform, text, utterance):
        features, mask, audio_tokens = self.differentiable_audio(waveform)
        ids = self.token_ids(render_prompt(task, self.family, text, utterance), 0, audio_tokens)
        return {
            "input_ids": torch.tensor([ids]),
            "attention_mask": torch.ones(1, len(ids), dtype=torch.long),
            "input_features": features,
            "feature_attention_mask": mask,
        }


ADAPTERS: dict[str, type[Adapter]] = {
    model_type: cls
    for cls in (Qwen25OmniThinkerAdapter, Qwen3OmniThinkerAdapter, Qwen2AudioAdapter)
    for model_type in cls.model_types
}


def adapter_for(checkpoint: str | Path) -> type[Adapter]:
    path = Path(checkpoint)
    if not path.is_dir():
        raise CheckpointError(f"{path}: no such folder; a judge loads from a local checkpoint folder")
    if not (path / "config.json").is_file():
        below = sorted(p.parent for p in path.glob("*/config.json"))
        hint = (
            f"did you mean {next((p for p in below if p.name == 'final'), below[-1])}? (it holds "
            + ", ".join(p.name for p in below)
            + ")"
            if below
            else (
                "pass a local checkpoint folder (downloaded beforehand, e.g. with `huggingface-cli download "
                "Qwen/Qwen2.5-Omni-7B --local-dir DIR`), or build tiny judges with `avjudge judges make-tiny --out DIR`"
            )
        )
        raise CheckpointError(f"{path}: no config.json; {hint}")
    model_type = _read_json(path / "config.json").get("model_type")
    if model_type not in ADAPTERS:
        raise CheckpointError(f"{path}: model_type {model_type!r} has no adapter; supported: {sorted(ADAPTERS)}")
    missing = [f for f in ("tokenizer_config.json", "preprocessor_config.json") if not (path / f).exists()]
    if missing:
        raise CheckpointError(f"{path}: missing {missing}; copy them from the base model's repository")
    return ADAPTERS[model_type]


def model_name(checkpoint: str | Path) -> str:
    """How a card or a figure names the judge in ``checkpoint``: its architecture, and a sync adapter where it has
    one ("Qwen2.5-Omni + sync adapter")."""
    cls = adapter_for(checkpoint)
    has_sync = _read_json(Path(checkpoint) / "config.json").get(SYNC_KEY) is not None
    return cls.display_name + (f" + {SYNC_NAME}" if has_sync else "")
