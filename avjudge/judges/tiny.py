"""Tiny random-initialised judges of the real architectures, built offline in seconds.

Real 7B weights cannot be downloaded everywhere; these checkpoints exercise every code path
(processing, scoring, training, saving) with the same model classes. The tokenizer is a
small byte-level BPE trained here, carrying Qwen's special tokens, with "Yes" and "No" as
single tokens.

The real judges start from a pretrained Omni model whose encoders already link what is seen
with what is heard. The tiny Qwen2.5-Omni thinker gets the same kind of start from a committed
file that ships with avjudge, ``checkpoints/tiny/qwen2_5_omni_encoders.safetensors``: its audio and
vision encoders after contrastive alignment on a synthetic world of their own
(`research/align_tiny_encoders.py` rebuilds it). Its language model stays random, so untrained it still
answers at chance.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch

from ..config import ConfigError
from ..prompts import TASKS
from ..resources import asset, default_cache

TINY_VERSION = 5
ALIGNED_ENCODERS = asset("checkpoints", "tiny", "qwen2_5_omni_encoders.safetensors")
# Encoders that keep time: the aligned ones after `--objective sync` on a world of 2,000 clips (each moment's picture
# against the sound of the same moment and of the clip's other moments; the JSON beside it says how): the demo AV
# judge's start, as a released Omni model's encoders would be a sync judge's
SYNC_ENCODERS = asset("checkpoints", "tiny", "qwen2_5_omni_sync_encoders.safetensors")
SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|AUDIO|>",
    "<|audio_bos|>",
    "<|audio_eos|>",
    "<|IMAGE|>",
    "<|VIDEO|>",
    "<|vision_bos|>",
    "<|vision_eos|>",
]
# Qwen3-Omni's media tokens, added after the BPE is trained so the other judges' ids stay as they were
QWEN3_TOKENS = [
    "<|audio_start|>",
    "<|audio_end|>",
    "<|audio_pad|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|video_pad|>",
    "<|image_pad|>",
]
ANSWER_WORDS = ["Yes", "No", " Yes", " No", "yes", "no", " yes", " no", "YES", "NO"]
HIDDEN = 64
# Attention heads 64 wide, their rotary pairs split as the released Qwen2.5-Omni's [16, 24, 24] of 64, halved: with
# 16-wide heads the time axis had 2 frequency pairs, and by position a head could not tell its own moment from some
# other moment within 5 s (one scored 0.98 of its own at best); with 8 pairs the best is 0.26 (the released model's
# 0.08: `python -m research.temporal_positions`). A judge that compares a sound with the picture of its moment needs
# that.
HEAD_DIM = 64
MROPE_SECTION = (8, 12, 12)
OMNI_DIR, OMNI3_DIR, AUDIO_DIR = "qwen2_5_omni_thinker", "qwen3_omni_moe_thinker", "qwen2_audio"


# The words and phrases of the synthetic world's captions (tests check they still are), so that the tiny
# tokenizer reads them as few tokens. Listed here, not read from avjudge.world, which no judge layer imports;
# their order is part of the tokenizer: changing it changes every tiny judge (bump TINY_VERSION).
CORPUS_WORDS = (
    "red", "green", "blue", "yellow", "purple", "orange", "cyan", "pink",
    "circle", "square", "triangle", "diamond", "ring", "small", "medium", "large",
    "stays still", "moves to the left", "moves to the right", "moves upward", "moves downward",
    "drifts diagonally up and to the right", "slowly grows", "slowly shrinks",
    "pure sine tone", "buzzy square-wave tone", "bright sawtooth tone", "plucked-string note", "short noise burst",
    "no background noise", "the steady electrical hum of a room", "the murmur of a crowd", "rain falling",
    "wind blowing", "flashes white", "pulses larger", "hops upward",
    "an indoor room with a plain beige wall and a brown floor",
    "an outdoor field under a light blue sky above dark grass",
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty",
)  # fmt: skip


def _corpus() -> list[str]:
    """Text the BPE is trained on: the judges' queries, the world captions' words, the answers."""
    lines = [t.query for t in TASKS.values()]
    lines += [" ".join(CORPUS_WORDS)] * 3
    lines += ["user", "assistant", "system", "Audio 1:", "Description:", "Speech:", "The video shows"] * 5
    lines += [w for w in ANSWER_WORDS for _ in range(200)]
    return lines


def build_tokenizer(out: Path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1024,
        special_tokens=SPECIAL_TOKENS,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(_corpus(), trainer)
    hf = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=SPECIAL_TOKENS[3:],
    )
    for word in ANSWER_WORDS:
        ids = hf(word, add_special_tokens=False)["input_ids"]
        if len(ids) != 1:
            raise RuntimeError(f"tiny tokenizer splits {word!r} into {ids}; raise the corpus weight of answers")
    hf.save_pretrained(str(out))
    return hf


def _feature_extractor(out: Path, extra: dict | None = None, window_s: int = 30) -> None:
    """``window_s``: the longest audio the judge takes (the real Omni processors take 300 s, Qwen2-Audio 30 s)."""
    from transformers import WhisperFeatureExtractor

    WhisperFeatureExtractor(
        feature_size=128, sampling_rate=16000, hop_length=160, chunk_length=window_s, n_fft=400
    ).save_pretrained(str(out))
    if extra:
        path = out / "preprocessor_config.json"
        cfg = json.loads(path.read_text())
        cfg.update(extra)
        path.write_text(json.dumps(cfg, indent=2))


def _text_config(tokenizer, language_model: dict | None = None) -> dict:
    """The tiny language model's configuration; ``language_model``: overrides of it (`make_tiny_judges`). Heads
    are `HEAD_DIM` wide whatever their number (the multimodal rotary sections are sized for it)."""
    return dict(
        vocab_size=len(tokenizer),
        hidden_size=HIDDEN,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        head_dim=HEAD_DIM,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    ) | (language_model or {})


def check_language_model(overrides: dict) -> None:
    """Overrides of the tiny language model must name Qwen2 text-config fields (a typo would be silently kept as
    an unused attribute) and keep its width, which the encoders' output and the committed encoders fix; the
    number of heads may change, their width stays."""
    from transformers import Qwen2Config

    fixed = sorted(set(overrides) & {"hidden_size", "head_dim", "vocab_size"})
    if fixed:
        raise ConfigError(f"{fixed} cannot be changed: the encoders' output width and the tokenizer fix them")
    unknown = sorted(set(overrides) - set(Qwen2Config().to_dict()))
    if unknown:
        raise ConfigError(
            f"unknown language-model settings {unknown}: use Qwen2 text-config fields "
            "(num_hidden_layers, num_key_value_heads, intermediate_size, attention_dropout, ...)"
        )


def load_encoders(model, path: Path) -> None:
    """Replace ``model``'s audio and vision encoders by the weights in ``path`` (a safetensors file holding
    exactly those); an incomplete or foreign file is an error, not a silent partial load."""
    from safetensors.torch import load_file

    weights = load_file(str(path))
    encoders = {k for k in model.state_dict() if k.startswith(("model.visual.", "model.audio_tower."))}
    if set(weights) != encoders:
        raise RuntimeError(
            f"{path} does not hold exactly this thinker's encoder weights "
            f"({len(set(weights) - encoders)} unknown, {len(encoders - set(weights))} missing); "
            "rebuild it with `python -m research.align_tiny_encoders`"
        )
    model.load_state_dict(weights, strict=False)


def build_tiny_omni_thinker(
    out: Path, tokenizer, seed: int = 0, encoders: Path | None = None, language_model: dict | None = None
) -> Path:
    """``encoders``: a file of pretrained encoder weights (see `load_encoders`); None leaves them random.
    ``language_model``: overrides of the tiny language model's configuration."""
    from transformers import Qwen2_5OmniThinkerConfig, Qwen2_5OmniThinkerForConditionalGeneration

    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    text = _text_config(tokenizer, language_model)
    # mrope_section sums to head_dim / 2
    text["rope_parameters"] = {"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": list(MROPE_SECTION)}
    config = Qwen2_5OmniThinkerConfig(
        audio_config=dict(
            num_mel_bins=128,
            encoder_layers=2,
            encoder_attention_heads=2,
            encoder_ffn_dim=64,
            d_model=32,
            output_dim=HIDDEN,
            n_window=100,
            max_source_positions=1500,
        ),
        vision_config=dict(
            depth=2,
            hidden_size=32,
            num_heads=2,
            intermediate_size=64,
            out_hidden_size=HIDDEN,
            patch_size=14,
            spatial_merge_size=2,
            temporal_patch_size=2,
            window_size=112,
            fullatt_block_indexes=[1],
        ),
        text_config=text,
        audio_token_index=ids["<|AUDIO|>"],
        image_token_index=ids["<|IMAGE|>"],
        video_token_index=ids["<|VIDEO|>"],
        audio_start_token_id=ids["<|audio_bos|>"],
        audio_end_token_id=ids["<|audio_eos|>"],
        user_token_id=tokenizer.convert_tokens_to_ids("user"),
    )
    config.vision_start_token_id = ids["<|vision_bos|>"]  # read by get_rope_index though not a declared field
    torch.manual_seed(seed)
    model = Qwen2_5OmniThinkerForConditionalGeneration(config)
    if encoders is not None:
        load_encoders(model, encoders)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    _feature_extractor(
        out,
        {
            "patch_size": 14,
            "temporal_patch_size": 2,
            "merge_size": 2,
            "min_pixels": 3136,
            "max_pixels": 112 * 112,
            "image_mean": [0.48145466, 0.4578275, 0.40821073],
            "image_std": [0.26862954, 0.26130258, 0.27577711],
        },
    )
    return out


def build_tiny_qwen3_omni_thinker(
    out: Path, tokenizer_dir: Path, seed: int = 0, language_model: dict | None = None
) -> Path:
    """A tiny Qwen3-Omni MoE thinker: 4 experts (2 per token), deepstack features from the first vision block."""
    from transformers import (
        PreTrainedTokenizerFast,
        Qwen3OmniMoeThinkerConfig,
        Qwen3OmniMoeThinkerForConditionalGeneration,
    )

    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(tokenizer_dir))
    tokenizer.add_tokens(QWEN3_TOKENS, special_tokens=True)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in QWEN3_TOKENS}
    text = _text_config(tokenizer, language_model)
    text.update(
        moe_intermediate_size=32,
        num_experts=4,
        num_experts_per_tok=2,
        rope_parameters={
            "rope_type": "default",
            "rope_theta": 1000000.0,
            "mrope_section": [12, 10, 10],  # the released Qwen3-Omni's [24, 20, 20], halved as MROPE_SECTION is
            "interleaved": True,
        },
    )
    config = Qwen3OmniMoeThinkerConfig(
        audio_config=dict(
            num_mel_bins=128,
            encoder_layers=2,
            encoder_attention_heads=2,
            encoder_ffn_dim=64,
            d_model=32,
            output_dim=HIDDEN,
            n_window=50,
            n_window_infer=800,
            downsample_hidden_size=16,
            max_source_positions=1500,
        ),
        vision_config=dict(
            depth=2,
            hidden_size=32,
            num_heads=2,
            intermediate_size=64,
            out_hidden_size=HIDDEN,
            patch_size=16,
            spatial_merge_size=2,
            temporal_patch_size=2,
            num_position_embeddings=64,
            deepstack_visual_indexes=[0],
        ),
        text_config=text,
        position_id_per_seconds=13,
        audio_token_id=ids["<|audio_pad|>"],
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        audio_start_token_id=ids["<|audio_start|>"],
        user_token_id=tokenizer.convert_tokens_to_ids("user"),
    )
    config.vision_start_token_id = ids["<|vision_start|>"]  # read by get_rope_index though not a declared field
    torch.manual_seed(seed)
    Qwen3OmniMoeThinkerForConditionalGeneration(config).save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    # Qwen3-Omni's processor gives pixel bounds as a size dict and normalises to [-1, 1]
    _feature_extractor(
        out,
        {
            "patch_size": 16,
            "temporal_patch_size": 2,
            "merge_size": 2,
            "size": {"shortest_edge": 64 * 64, "longest_edge": 112 * 112},
            "image_mean": [0.5, 0.5, 0.5],
            "image_std": [0.5, 0.5, 0.5],
        },
    )
    return out


def build_tiny_qwen2_audio(
    out: Path, tokenizer, seed: int = 0, window_s: int = 10, language_model: dict | None = None
) -> Path:
    """Qwen2-Audio's encoder always runs over its whole window, padded; the real one's is 30 s, the tiny
    one's 10 s (longer than any clip the tiny judges see), which makes a training step about 3x cheaper
    (`benchmarks/tiny_train_step.py`)."""
    from transformers import Qwen2AudioConfig, Qwen2AudioForConditionalGeneration

    config = Qwen2AudioConfig(
        audio_config=dict(
            num_mel_bins=128,
            encoder_layers=2,
            encoder_attention_heads=2,
            encoder_ffn_dim=64,
            d_model=32,
            max_source_positions=window_s * 50,
        ),  # 100 mel frames/s, stride 2
        text_config=dict(model_type="qwen2", **_text_config(tokenizer, language_model)),
        audio_token_index=tokenizer.convert_tokens_to_ids("<|AUDIO|>"),
    )
    torch.manual_seed(seed)
    Qwen2AudioForConditionalGeneration(config).save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    _feature_extractor(out, window_s=window_s)
    return out


def make_tiny_judges(
    root: str | Path | None = None,
    seed: int = 0,
    force: bool = False,
    encoders: str | Path | None = ALIGNED_ENCODERS,
    language_model: dict | None = None,
) -> dict[str, Path]:
    """Build (or reuse) tiny checkpoints under ``root``; returns family -> directory.

    ``encoders``: the weights the Qwen2.5-Omni thinker's encoders start from (see `load_encoders`): the committed
    aligned ones (under ``root``/tiny), None for random ones (under ``root``/tiny_random_encoders), or another
    file (under ``root``/tiny_encoders_<its hash>). ``language_model``: overrides of the tiny language model's
    configuration (e.g. {"num_hidden_layers": 4}; see `check_language_model`), for probes that vary it; such
    judges get a folder of their own (that name with _lm_<a hash of the overrides>)."""
    language_model = dict(language_model or {})
    check_language_model(language_model)
    root = Path(root) if root is not None else default_cache()
    encoders = None if encoders is None else Path(encoders)
    if encoders is not None and not encoders.exists():
        fix = (
            "it ships with avjudge: reinstall avjudge"
            if encoders in (ALIGNED_ENCODERS, SYNC_ENCODERS)
            else "give an encoder weights file that exists (`python -m research.align_tiny_encoders` in avjudge's "
            "repository writes one)"
        )
        raise FileNotFoundError(f"{encoders} is missing; {fix}")
    digest = hashlib.sha256(encoders.read_bytes()).hexdigest() if encoders is not None else None
    base = root / (
        "tiny"
        if encoders == ALIGNED_ENCODERS
        else "tiny_random_encoders"
        if encoders is None
        else f"tiny_encoders_{digest[:12]}"
    )
    if language_model:
        base = base.with_name(
            base.name + "_lm_" + hashlib.sha256(json.dumps(language_model, sort_keys=True).encode()).hexdigest()[:12]
        )
    dirs = {"qwen2_5_omni": base / OMNI_DIR, "qwen3_omni": base / OMNI3_DIR, "qwen2_audio": base / AUDIO_DIR}
    stamp = base / "tiny_judges.json"
    want = {
        "version": TINY_VERSION,
        "seed": seed,
        "encoders": digest,
        **({"language_model": language_model} if language_model else {}),
    }
    if (
        not force
        and stamp.exists()
        and json.loads(stamp.read_text()) == want
        and all(d.exists() for d in dirs.values())
    ):
        return dirs
    base.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(base / "tokenizer")
    build_tiny_omni_thinker(dirs["qwen2_5_omni"], tokenizer, seed, encoders, language_model)
    build_tiny_qwen3_omni_thinker(dirs["qwen3_omni"], base / "tokenizer", seed, language_model)
    build_tiny_qwen2_audio(dirs["qwen2_audio"], tokenizer, seed, language_model=language_model)
    stamp.write_text(json.dumps(want))
    return dirs
