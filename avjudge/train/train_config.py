"""Training configuration: one dataclass, loaded from YAML with key=value overrides."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..config import ConfigError


@dataclass(frozen=True)
class TrainConfig:
    """One training run (YAML; shipped ones by name: `avjudge.resources.shipped("train_config")`). Every field
    can be overridden with ``--set KEY=VALUE``; the comments in the source say what each one does.

    Attributes:
        task: which judge: ``av``, ``vt`` or ``at``.
        model: the base checkpoint folder (a thinker, a full Omni checkpoint or Qwen2-Audio).
        dataset: a folder made by `avjudge data build`.
        output_dir: where checkpoints, ``final`` and ``eval/step_*.json`` go; rerunning resumes.
        freeze: ``llm`` (encoders and projectors frozen), ``llm+connector``, ``lora`` or ``all``.
        epochs: passes over the training pairs (``max_steps``, when positive, wins).
        eval_steps: held-out evaluation every this many steps.
        deepspeed: a ZeRO config: a JSON file, or ``zero2`` / ``zero3``.
    """

    task: Literal["av", "vt", "at"]
    model: str  # base checkpoint directory (a thinker, a full Omni checkpoint or Qwen2-Audio)
    dataset: str  # a folder made by `avjudge data build`
    output_dir: str
    train_split: str = "train"
    eval_split: str = "test"
    freeze: Literal["llm", "llm+connector", "lora", "all"] = "llm"
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    merge_lora: bool = True  # save the merged model (loadable by the scorer) rather than the adapter
    learning_rate: float = 1e-5
    weight_decay: float = 0.0
    warmup_steps: int = 0
    lr_scheduler: str = "cosine"
    epochs: float = 1.0
    max_steps: int = -1  # overrides epochs when positive
    batch_size: int = 1
    grad_accum: int = 1
    eval_steps: int = 100
    eval_batch_size: int = 8
    max_eval_pairs: int | None = None
    save_steps: int = 500
    save_total_limit: int | None = 2
    logging_steps: int = 10
    padding_side: Literal["left", "right"] = "right"
    fps: float | None = None  # frames shown to the judge (None: AVBench's 1.0)
    max_pixels: int | None = None  # None: AVBench's per-task default
    use_audio_in_video: bool = False  # Omni: interleave the clip's audio with its frames in one item
    # None: the model family's own system turn; "": none; recorded with the checkpoint, so scoring repeats it
    system_prompt: str | None = None
    dtype: Literal["auto", "float32", "bfloat16"] = "auto"  # auto: bf16 on GPU, fp32 on CPU
    attention: str = "auto"  # auto: packed window attention in the Omni encoders; else a transformers name (sdpa...)
    gradient_checkpointing: bool = False
    deepspeed: str | None = None  # a ZeRO config: a JSON file, or a shipped one by name (zero2, zero3)
    report_to: list[str] = field(default_factory=lambda: ["wandb"])
    wandb_project: str = "avjudge"
    dataloader_workers: int = 0
    # keep built training examples in memory after the first epoch (exact; costs memory, see TrainingExamples)
    cache_examples: bool = False
    # keep up to this many MB of decoded source clips in memory (each process its own), so a clip that many pairs
    # share, or whose negatives are redrawn, is decoded once (exact: data.DecodedSources); 0: decode every pair
    source_cache_mb: float = 0.0
    # every epoch after the first draws the training negatives' audio anew (same strategies and ranges, partners
    # from the training split only): more distinct negatives from the same pairs (TrainingExamples)
    redraw_negatives: bool = False
    # multiple-choice questions on clips (JSONL, `avjudge bench choice --help`) asked at every evaluation: what
    # fine-tuning does to the backbone's general perception, beside the held-out pairs (None: none asked)
    choice_questions: str | None = None
    seed: int = 0
    resume: bool = True  # continue from the newest checkpoint in output_dir

    def __post_init__(self):
        if self.batch_size < 1 or self.grad_accum < 1:
            raise ConfigError("batch_size and grad_accum must be at least 1")
        if self.eval_steps < 1 or self.save_steps < 1:
            raise ConfigError("eval_steps and save_steps must be at least 1")
        if self.source_cache_mb < 0:
            raise ConfigError(f"source_cache_mb must be 0 (off) or positive, not {self.source_cache_mb}")
        if self.cache_examples and self.dataloader_workers:
            raise ConfigError(
                "cache_examples keeps examples in this process, so it needs dataloader_workers: 0 "
                "(workers would each build and hold their own copies)"
            )
