"""Which parts of a judge train: freeze policies as configuration (AVBench §3.3).

``llm``: the language model trains; audio and vision encoders and projectors are frozen (the
paper's AV and VT judges). ``llm+connector``: the projectors train too (the paper's AT judge).
``lora``: peft LoRA adapters on the language model only. ``all``: everything (tiny models
trained from scratch). A sync adapter (`avjudge.judges.sync_adapter`) is new to every base model:
it trains under every policy (under ``lora`` as a module peft saves whole).
"""

from __future__ import annotations

from collections import Counter

from ..judges.adapters import Adapter

POLICIES: dict[str, frozenset[str]] = {
    "llm": frozenset({"llm", "sync_adapter"}),
    "llm+connector": frozenset({"llm", "connector", "sync_adapter"}),
    "all": frozenset({"llm", "connector", "audio_encoder", "vision_encoder", "sync_adapter"}),
    "lora": frozenset(),  # adapters are added by apply_lora; the base stays frozen
}
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def group_of(name: str, groups: dict[str, tuple[str, ...]]) -> str:
    best, length = "other", -1
    for group, prefixes in groups.items():
        for prefix in prefixes:
            if name.startswith(prefix) and len(prefix) > length:
                best, length = group, len(prefix)
    return best


def apply_freeze(model, adapter_cls: type[Adapter], policy: str) -> dict[str, dict[str, int]]:
    """Set requires_grad by policy; returns parameter counts per group, trainable and total."""
    if policy not in POLICIES:
        raise ValueError(f"unknown freeze policy {policy!r}; choose one of {sorted(POLICIES)}")
    trainable_groups = POLICIES[policy]
    counts: dict[str, Counter] = {}
    for name, param in model.named_parameters():
        group = group_of(name, adapter_cls.module_groups)
        param.requires_grad = group in trainable_groups
        c = counts.setdefault(group, Counter())
        c["total"] += param.numel()
        c["trainable"] += param.numel() if param.requires_grad else 0
    return {g: dict(c) for g, c in counts.items()}


def apply_lora(model, r: int, alpha: int, dropout: float):
    """Wrap the language model's linear layers with LoRA adapters (everything else frozen but a sync adapter,
    which trains and is saved whole)."""
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(
        r=r,
        lora_alpha=alpha,
        lora_dropout=dropout,
        bias="none",
        target_modules=rf"model\.language_model\..*\.({'|'.join(LORA_TARGETS)})",
        modules_to_save=["sync_adapter"] if hasattr(model, "sync_adapter") else None,
    )
    return get_peft_model(model, config)
