"""Training configuration: the judge's own fields, and every `transformers.TrainingArguments` option beside them.

A YAML file (or ``--set KEY=VALUE``) is flat: a key that is one of the judge's fields sets it, any other key must be
a ``TrainingArguments`` option (``learning_rate``, ``max_grad_norm``, ``optim``, ``fsdp``, ``torch_compile``,
``ddp_timeout``, ``save_only_model``...) and is passed to the Trainer as it is, typed as ``TrainingArguments``
types it. The Trainer's arguments are built at training time (`TrainConfig.training_arguments`), since building
them with DeepSpeed changes how later models load in the process. The keys of avjudge 0.1 (``batch_size``,
``grad_accum``, ``epochs``, ``lr_scheduler``, ``eval_batch_size``, ``dataloader_workers``) still load, with a
warning naming the new key.
"""

from __future__ import annotations

import dataclasses
import typing
import warnings
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

from ..config import ConfigError, build_dataclass, coerce
from ..sampling import Sampling, sampling

RENAMED = {  # avjudge 0.1's key -> the TrainingArguments option it was
    "batch_size": "per_device_train_batch_size",
    "grad_accum": "gradient_accumulation_steps",
    "epochs": "num_train_epochs",
    "lr_scheduler": "lr_scheduler_type",
    "eval_batch_size": "per_device_eval_batch_size",
    "dataloader_workers": "dataloader_num_workers",
}
# Where a judge's training wants other defaults than the Trainer's (AVBench's recipe; a run small enough to see).
TRAINER_DEFAULTS = {
    "learning_rate": 1e-5,
    "lr_scheduler_type": "cosine",
    "num_train_epochs": 1.0,
    "per_device_train_batch_size": 1,
    "per_device_eval_batch_size": 8,
    "logging_steps": 10,
    "save_steps": 500,
    "save_total_limit": 2,
    "report_to": ["wandb"],
    "seed": 0,
}
# Trainer options the Trainer takes without a word where they are out of range (a negative learning rate ascends)
POSITIVE_OPTIONS = ("per_device_train_batch_size", "per_device_eval_batch_size", "gradient_accumulation_steps",
                    "save_steps", "logging_steps", "learning_rate")  # fmt: skip
NON_NEGATIVE_OPTIONS = ("weight_decay", "seed", "warmup_steps", "max_grad_norm", "dataloader_num_workers")
# Set by avjudge from the judge's fields, or required by how it trains: not settable.
MANAGED = {
    "output_dir": "the judge field output_dir",
    "remove_unused_columns": "the collator reads every column",
    "eval_strategy": "held-out evaluation runs every eval_steps through the judge's own scorer",
    "do_eval": "held-out evaluation runs every eval_steps through the judge's own scorer",
    "resume_from_checkpoint": "the judge field resume",
}


@cache
def trainer_options() -> dict[str, Any]:
    """Every settable ``TrainingArguments`` option and its type (``eval_steps`` is the judge's own field)."""
    from transformers import TrainingArguments

    hints = typing.get_type_hints(TrainingArguments)
    judge_fields = {f.name for f in dataclasses.fields(TrainConfig)}
    return {
        f.name: hints[f.name]
        for f in dataclasses.fields(TrainingArguments)
        if f.init and f.name not in MANAGED and f.name not in judge_fields
    }


@dataclass(frozen=True)
class TrainConfig:
    """One training run (YAML; shipped ones by name: `avjudge.resources.shipped("train_config")`). Every field and
    every ``TrainingArguments`` option can be set with ``--set KEY=VALUE``; the comments in the source say what each
    judge field does. ``config.NAME`` reads a Trainer option as the run will use it (yours, else avjudge's default,
    else the Trainer's).

    Attributes:
        task: which judge: ``av``, ``vt`` or ``at``.
        model: the base checkpoint folder (a thinker, a full Omni checkpoint or Qwen2-Audio).
        dataset: a folder made by `avjudge data build`.
        output_dir: where checkpoints, ``final`` and ``eval/step_*.json`` go; rerunning resumes.
        freeze: ``llm`` (encoders and projectors frozen), ``llm+connector``, ``lora`` or ``all``.
        objective: ``sft`` (the answer token, Yes or No), or ``bt`` / ``btt``: each source's positive preferred to
            each of its negatives, the log-odds as the reward (`avjudge.train.pairwise`; ``btt`` with ``tie_width``).
        eval_steps: held-out evaluation every this many steps.
        trainer: the ``TrainingArguments`` options set (``deepspeed``: a ZeRO config file, or ``zero2`` /
            ``zero3``).
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
    objective: Literal["sft", "bt", "btt"] = "sft"
    tie_width: float = 5.0  # btt's k (VideoAlign's default): a win must clear log k in log-odds
    eval_steps: int = 100  # held-out pairs scored every this many steps (sharded over the processes)
    max_eval_pairs: int | None = None
    padding_side: Literal["left", "right"] = "right"
    # how the judge is shown clips (avjudge.sampling): a named sampling (None: the task's, AV "sync" 8 fps at
    # 480x640/16 pixels; "avbench": the paper's 1 fps at 480x640), and fps / max_pixels that override it (a sampling
    # named in --set wins over the rate and pixels the config file itself sets: `named_sampling_wins`)
    sampling: str | None = None
    fps: float | None = None
    max_pixels: int | None = None
    use_audio_in_video: bool = False  # Omni: interleave the clip's audio with its frames in one item
    # give the judge a sync adapter where its base has none (avjudge.judges.sync_adapter: a token per visual group
    # comparing its picture with the sound of the same moment; Qwen2.5-Omni AV judges, the audio in the video item);
    # a base that has one keeps and trains it either way
    sync_adapter: bool = False
    # None: the model family's own system turn; "": none; recorded with the checkpoint, so scoring repeats it
    system_prompt: str | None = None
    dtype: Literal["auto", "float32", "bfloat16"] = "auto"  # auto: bf16 on GPU, fp32 on CPU
    attention: str = "auto"  # auto: packed window attention in the Omni encoders; else a transformers name (sdpa...)
    wandb_project: str = "avjudge"
    # keep built training examples in memory after the first epoch (exact; costs memory, see TrainingExamples)
    cache_examples: bool = False
    # keep up to this many MB of decoded source clips in memory (each process its own), so a clip that many pairs
    # share, or whose negatives are redrawn, is decoded once (exact: data.DecodedSources); 0: decode every pair
    source_cache_mb: float = 0.0
    # every epoch after the first draws the training negatives' audio anew (same strategies and ranges, partners
    # from the training split only), seeded by (seed, epoch, pair) whatever the number of processes
    redraw_negatives: bool = False
    # multiple-choice questions on clips (JSONL, `avjudge omni answer --help`) asked at every evaluation: what
    # fine-tuning does to the backbone's general perception, beside the held-out pairs (None: none asked)
    choice_questions: str | None = None
    resume: bool = True  # continue from the newest checkpoint in output_dir
    trainer: dict[str, Any] = field(default_factory=dict)  # TrainingArguments options, by name

    def time_sampling(self) -> Sampling:
        """What the judge this config trains is shown of a clip in time (`avjudge.sampling`)."""
        from ..judges.judge import checkpoint_sampling

        return checkpoint_sampling(
            self.task, Path(self.model).expanduser(), sampling=self.sampling, fps=self.fps, max_pixels=self.max_pixels
        )

    def __post_init__(self):
        if self.eval_steps < 1:
            raise ConfigError("eval_steps must be at least 1")
        if self.sampling is not None:
            sampling(self.sampling)  # an unknown name is an error naming the known ones
        if self.objective == "btt" and not self.tie_width > 1:
            raise ConfigError(f"btt's tie_width is above 1 (VideoAlign's k = 5), not {self.tie_width}")
        if self.source_cache_mb < 0:
            raise ConfigError(f"source_cache_mb must be 0 (off) or positive, not {self.source_cache_mb}")
        for name in POSITIVE_OPTIONS:
            if self.option(name) <= 0:
                raise ConfigError(f"{name} must be positive, not {self.option(name)}")
        for name in NON_NEGATIVE_OPTIONS:
            if self.option(name) is not None and self.option(name) < 0:
                raise ConfigError(f"{name} must be 0 or more, not {self.option(name)}")
        steps, epochs = self.option("max_steps"), self.option("num_train_epochs")
        if not (steps == -1 or steps > 0) or (steps == -1 and epochs <= 0):
            raise ConfigError(
                f"a run trains max_steps steps (above 0), or num_train_epochs epochs (above 0) where max_steps is -1; "
                f"got max_steps {steps}, num_train_epochs {epochs}"
            )
        if self.eval_split == self.train_split:
            raise ConfigError(
                f"eval_split is the training split {self.train_split!r}: its figures would not be held out"
            )
        if self.lora_r < 1 or self.lora_alpha < 1 or not 0 <= self.lora_dropout < 1:
            raise ConfigError(
                f"lora_r and lora_alpha are at least 1 and lora_dropout within [0, 1), got {self.lora_r}, "
                f"{self.lora_alpha}, {self.lora_dropout}"
            )
        unset_or_positive = {"max_eval_pairs": self.max_eval_pairs, "fps": self.fps, "max_pixels": self.max_pixels}
        wrong = {name: value for name, value in unset_or_positive.items() if value is not None and value <= 0}
        if wrong:
            raise ConfigError(f"{', '.join(wrong)} must be positive (or unset), got {wrong}")
        if self.sync_adapter and not (self.task == "av" and self.use_audio_in_video):
            raise ConfigError(
                "sync_adapter compares each picture with the sound of its moment: it needs task av and "
                "use_audio_in_video: true"
            )
        if self.cache_examples and self.option("dataloader_num_workers"):
            raise ConfigError(
                "cache_examples keeps examples in this process, so it needs dataloader_num_workers: 0 "
                "(workers would each build and hold their own copies)"
            )

    @classmethod
    def from_mapping(cls, data: dict[str, Any], where: str = "") -> TrainConfig:
        """A config from flat YAML keys: the judge's fields, ``TrainingArguments`` options (also under a
        ``trainer:`` mapping, as `dump_yaml` writes them), and avjudge 0.1's renamed keys (with a warning); of two
        keys for one option, the later (an override's) counts."""
        where = where or cls.__name__
        flat = dict(data)
        nested = flat.pop("trainer", None) or {}
        if not isinstance(nested, dict):
            raise ConfigError(f"{where}.trainer: expected a mapping of TrainingArguments options, got {nested!r}")
        judge_fields = {f.name for f in dataclasses.fields(cls)} - {"trainer"}
        options, hints = {}, trainer_options()
        for key, value in [*nested.items(), *flat.items()]:
            if key in judge_fields:
                continue
            name = RENAMED.get(key, key)
            if name != key:
                warnings.warn(f"{where}: training key {key!r} is deprecated; use {name!r}", FutureWarning, stacklevel=2)
            if name in MANAGED:
                raise ConfigError(f"{where}: {name} is not set in a judge's config ({MANAGED[name]})")
            if name not in hints:
                raise ConfigError(
                    f"{where}: unknown key {key!r}: neither a judge field ({', '.join(sorted(judge_fields))}) nor a "
                    "transformers TrainingArguments option"
                )
            options[name] = coerce(value, hints[name], f"{where}.{key}")
        judge = {k: v for k, v in flat.items() if k in judge_fields}
        return build_dataclass(cls, {**judge, "trainer": options}, where)

    def option(self, name: str) -> Any:
        """A TrainingArguments option as the run will use it: the config's, else avjudge's default, else the
        Trainer's."""
        if name in self.trainer:
            return self.trainer[name]
        if name in TRAINER_DEFAULTS:
            return TRAINER_DEFAULTS[name]
        from transformers import TrainingArguments

        spec = TrainingArguments.__dataclass_fields__[name]
        return spec.default_factory() if spec.default_factory is not dataclasses.MISSING else spec.default

    def __getattr__(self, name: str) -> Any:
        # only reached for names that are not judge fields: a Trainer option, read as the run uses it
        if name.startswith("_") or name not in trainer_options():
            raise AttributeError(f"TrainConfig has no field or TrainingArguments option {name!r}")
        return self.option(name)

    def training_arguments(self, deepspeed: str | None, cuda: bool, bf16: bool):
        """The Trainer's arguments: every option set, avjudge's defaults, and what avjudge manages (``deepspeed``
        the resolved ZeRO config file)."""
        from transformers import TrainingArguments

        values = {**TRAINER_DEFAULTS, **self.trainer}
        values.setdefault("data_seed", values["seed"])
        values.setdefault("bf16", bf16)
        values.setdefault("use_cpu", not cuda)
        report_to = values["report_to"]
        return TrainingArguments(
            **{**values, "deepspeed": deepspeed, "report_to": list(report_to) if report_to else "none"},
            output_dir=self.output_dir,
            remove_unused_columns=False,
            eval_strategy="no",
        )


def named_sampling_wins(config: TrainConfig, overrides: list[str] | tuple[str, ...]) -> TrainConfig:
    """``config`` as loaded with ``overrides``: where these name a sampling (``sampling=avbench``), the frame rate and
    pixels the config file itself sets are left out, since they would override the sampling asked for; those the
    overrides set stay."""
    given = {o.partition("=")[0].strip() for o in overrides}
    if "sampling" not in given:
        return config
    dropped = {key: None for key in ("fps", "max_pixels") if key not in given and getattr(config, key) is not None}
    return dataclasses.replace(config, **dropped) if dropped else config
