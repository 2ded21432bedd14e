"""A sync adapter for Qwen2.5-Omni judges: one token per visual token group that sets the group's picture beside the
sound of the same moment.

Why: a language model handed a clip's picture tokens and sound tokens side by side, and trained on Yes/No alone, did
not learn to compare them at the same moment: on the real Qwen2.5-Omni language-model class at the tiny judge's
sizes, shifts stayed at chance with Yes/No alone and after an offset-classification stage; one product token per
0.25 s group lifted them to about 0.68 (``shared/research/sync_wall``). Every working sync detector compares the two
streams explicitly (SyncNet's lag matrix, Synchformer's aligned segment tokens).

What it computes, per visual token group g (the vision tower merges ``temporal_patch_size`` frames into one group):
the mean of the group's spatial tokens, v_g, and the mean of the audio tokens whose TMRoPE time falls in the
group's span, a_g (as the thinker receives them, after its projectors); each less its mean over the clip's groups
(what stays constant through a clip says which clip, not when), unit-normalised, multiplied element-wise, scaled by
sqrt(hidden) (a product of unit vectors is about 1/hidden an element) and mapped to the hidden size by a linear
layer. Its token sits after the clip's media run, with the group's TMRoPE time on all three axes, so that attention
finds it at its moment.

How it rides along: the checkpoint's ``config.json`` carries ``sync_adapter`` (the placeholder token and its id), and
its weights sit under ``sync_adapter.`` beside the thinker's. The prompt holds one placeholder token a group after
the media run (`Qwen25OmniThinkerAdapter.prepare`); two forward pre-hooks replace the placeholders' embeddings and
positions after the thinker has merged its media, so the thinker's own forward, loss, generation, Trainer,
DeepSpeed and gradient checkpointing run as they are. A judge whose checkpoint has no ``sync_adapter`` loads the
plain thinker and scores exactly as before.
"""

from __future__ import annotations

import math
from functools import cache

import torch
import torch.nn.functional as F

from ..config import ConfigError

CONFIG_KEY = "sync_adapter"
# The placeholder of a sync token: a token every Qwen2.5-Omni tokenizer holds and that an AV judge's prompt never
# uses otherwise (it takes no images; `get_rope_index` counts an image only right after <|vision_bos|>). Its
# embedding is replaced whole, so what it meant never reaches the model.
PLACEHOLDER = "<|IMAGE|>"
PLACEMENT = "after_media"
NAME = "sync adapter"  # how cards and figures name a judge that has one ("Qwen2.5-Omni + sync adapter")


def sync_spec(tokenizer, placeholder: str = PLACEHOLDER) -> dict:
    """The ``sync_adapter`` entry of a thinker's config: which token stands for a sync token, and where they sit."""
    ids = tokenizer(placeholder, add_special_tokens=False)["input_ids"]
    if len(ids) != 1:
        raise ConfigError(f"the sync adapter's placeholder {placeholder!r} is not one token of this tokenizer ({ids})")
    return {"placeholder": placeholder, "token_id": int(ids[0]), "placement": PLACEMENT}


def check_spec(spec) -> dict:
    """A checkpoint's ``sync_adapter`` entry, checked: a hand-edited one is named, not half used."""
    if not isinstance(spec, dict) or not isinstance(spec.get("token_id"), int) or not spec.get("placeholder"):
        raise ConfigError(f"config.json's {CONFIG_KEY} must be an object with placeholder and token_id, not {spec!r}")
    if spec.get("placement", PLACEMENT) != PLACEMENT:
        raise ConfigError(f"{CONFIG_KEY}.placement {spec['placement']!r} is not known; this avjudge places {PLACEMENT}")
    return spec


class SyncAdapter(torch.nn.Module):
    """The linear map of the moment products to the language model's hidden size."""

    def __init__(self, hidden: int):
        super().__init__()
        self.hidden = hidden
        self.proj = torch.nn.Linear(hidden, hidden)

    def reset(self, seed: int = 0) -> None:
        """Fresh weights, the same for a seed: a new adapter on a trained thinker starts from them."""
        generator = torch.Generator().manual_seed(seed)
        bound = 1 / math.sqrt(self.hidden)
        with torch.no_grad():
            for parameter in (self.proj.weight, self.proj.bias):
                values = torch.rand(parameter.shape, generator=generator) * 2 * bound - bound
                parameter.copy_(values.to(parameter.device, parameter.dtype))

    def forward(self, products: torch.Tensor) -> torch.Tensor:
        return self.proj(products)


def moment_products(
    embeds: torch.Tensor, video: torch.Tensor, audio: torch.Tensor, times: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(products (G, hidden), the groups' TMRoPE times (G,)) of one sequence: ``embeds`` (L, hidden) with its media
    merged, ``video`` and ``audio`` (L,) masks of its tokens, ``times`` (L,) their temporal position ids.

    A group's audio tokens are those whose time lies from its own time up to the next group's (the last group's
    span is the one before it): the same 0.25 s of sound as the group's picture at 8 fps."""
    hidden = embeds.shape[-1]
    values = embeds.float()
    group_times, group = torch.unique(times[video], sorted=True, return_inverse=True)
    n = len(group_times)
    picture = torch.zeros(n, hidden, device=embeds.device).index_add(0, group, values[video])
    picture = picture / torch.bincount(group, minlength=n)[:, None]
    span = group_times[-1] - group_times[-2] if n > 1 else torch.tensor(1 << 20, device=times.device)
    edges = torch.cat([group_times, (group_times[-1] + span)[None]])
    of_audio = torch.bucketize(times[audio], edges, right=True) - 1
    inside = (of_audio >= 0) & (of_audio < n)
    counts = torch.bincount(of_audio[inside], minlength=n)
    sound = torch.zeros(n, hidden, device=embeds.device).index_add(0, of_audio[inside], values[audio][inside])
    heard = counts > 0
    sound = sound / counts.clamp(min=1)[:, None]
    if not heard.any():  # no sound at any moment of the picture: nothing to compare
        return torch.zeros(n, hidden, device=embeds.device), group_times
    picture = F.normalize(picture - picture.mean(0), dim=-1)
    sound = F.normalize(sound - sound[heard].mean(0), dim=-1) * heard[:, None]
    return picture * sound * math.sqrt(hidden), group_times


def add_sync_adapter(model, spec: dict, seed: int = 0):
    """Give a loaded Qwen2.5-Omni thinker a sync adapter: its config records ``spec``, its weights start fresh
    (`SyncAdapter.reset`). Returns the model."""
    model.config.sync_adapter = check_spec(spec)
    parameter = next(model.parameters())
    adapter = SyncAdapter(model.config.get_text_config().hidden_size).to(parameter.device, parameter.dtype)
    adapter.reset(seed)
    model.sync_adapter = adapter
    install_hooks(model)
    return model


def install_hooks(model) -> None:
    """Two forward pre-hooks: the thinker's model keeps the step's token ids; its language model, which receives the
    merged embeddings and the TMRoPE positions, gets each sync placeholder's token and its group's time."""
    spec = check_spec(model.config.sync_adapter)
    inner = model.model
    config = model.config

    def keep_ids(module, args, kwargs):
        module._sync_ids = kwargs.get("input_ids", args[0] if args else None)

    def insert(module, args, kwargs):
        ids = getattr(inner, "_sync_ids", None)
        if ids is None:
            return None
        placeholders = ids == spec["token_id"]
        if not placeholders.any():
            return None
        embeds, positions = kwargs["inputs_embeds"], kwargs["position_ids"].clone()
        times = positions[-3]  # the temporal axis (a generation step's ids lead with a text axis: 4 rows)
        tokens = torch.zeros_like(embeds)
        for row in range(ids.shape[0]):
            slots = placeholders[row].nonzero()[:, 0]
            if len(slots) == 0:
                continue
            video, audio = ids[row] == config.video_token_id, ids[row] == config.audio_token_id
            if not video.any():
                raise ValueError("a sync token needs a video in its prompt; this one has none")
            products, group_times = moment_products(embeds[row], video, audio, times[row])
            if len(slots) != len(group_times):
                raise ValueError(
                    f"the prompt holds {len(slots)} sync tokens for a video of {len(group_times)} token groups"
                )
            tokens[row, slots] = model.sync_adapter(products.to(embeds.dtype))
            positions[:, row, slots] = group_times.to(positions.dtype)
        kwargs["inputs_embeds"] = torch.where(placeholders[..., None], tokens, embeds)
        kwargs["position_ids"] = positions
        return args, kwargs

    for module in (inner, inner.language_model):
        for handle in getattr(module, "_sync_hooks", ()):
            handle.remove()
    inner._sync_hooks = [inner.register_forward_pre_hook(keep_ids, with_kwargs=True)]
    inner.language_model._sync_hooks = [inner.language_model.register_forward_pre_hook(insert, with_kwargs=True)]


@cache
def sync_thinker_class():
    """The Qwen2.5-Omni thinker with a sync adapter: a checkpoint whose config carries ``sync_adapter`` loads as this,
    its adapter's weights with the rest."""
    from transformers import Qwen2_5OmniThinkerForConditionalGeneration
    from transformers.conversion_mapping import (
        get_checkpoint_conversion_mapping,
        register_checkpoint_conversion_mapping,
    )

    class Qwen2_5OmniThinkerWithSyncAdapter(Qwen2_5OmniThinkerForConditionalGeneration):
        def __init__(self, config):
            super().__init__(config)
            check_spec(getattr(config, CONFIG_KEY, None))
            self.sync_adapter = SyncAdapter(config.get_text_config().hidden_size)
            install_hooks(self)

    # transformers renames the thinker's weights between its files and its modules, but only for its own classes (a
    # class defined elsewhere counts as custom code): without this, the language model would load as random weights
    base = Qwen2_5OmniThinkerForConditionalGeneration.__name__
    register_checkpoint_conversion_mapping(
        Qwen2_5OmniThinkerWithSyncAdapter.__name__, get_checkpoint_conversion_mapping(base) or [], overwrite=True
    )
    return Qwen2_5OmniThinkerWithSyncAdapter
