"""SFT of Yes/No judges with the HF Trainer (optionally DeepSpeed ZeRO-2/3 and LoRA).

The loss is the model's own causal-LM loss with every label masked but the answer token,
which is exactly AVBench's single-token supervision. Evaluation scores held-out pairs with
the same scorer `avjudge score` uses, logs the metrics (wandb offline unless configured) and
writes them as JSON per evaluation step, with the answers to multiple-choice questions on
clips if given (what fine-tuning does to the backbone's general perception). Every checkpoint
holds what the scorer needs to load it, and records its config, dataset hash and code version.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import sys
from contextlib import nullcontext
from dataclasses import asdict, replace
from pathlib import Path
from typing import NoReturn

import torch

from .. import __version__
from ..config import ConfigError
from ..data import (
    DecodedSources,
    PairDataset,
    built_recipe,
    built_sources,
    load_pairs,
    pairs_now,
    split_sources,
)
from ..data.perceivability import below_grid_warnings, dataset_perceivability
from ..data.questions import ChoiceQuestion, load_questions
from ..jsonl import read_json_object, write_json
from ..judges import ChoiceResult, Judge, JudgeSettings
from ..judges.adapters import adapter_for
from ..judges.choice import answer_row, summarize
from ..judges.judge import TRAIN_RECORD, TRAINED_SETTINGS, temporal_patch
from ..media import MediaError
from ..perturb import SourcePool
from ..resources import resolve
from ..scoring.questions import question_samples
from .collator import AnswerCollator, TrainingExamples
from .evaluation import judge_metrics, pairwise_accuracy
from .freeze import apply_freeze, apply_lora
from .pairwise import PreferenceCollator, PreferenceExamples, preference_trainer
from .train_config import TrainConfig

# Files a checkpoint needs besides the weights so that `Judge.load` reads it directly.
SIDE_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    "preprocessor_config.json",
    "generation_config.json",
)


def code_version() -> str:
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).parent,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"avjudge {__version__}" + (f" ({commit})" if commit else "")


def _ensure_distributed_env() -> None:
    """DeepSpeed in one process (CPU or one GPU) still wants a process group; give it one."""
    if "RANK" in os.environ:
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))


def process_rank() -> tuple[int, int]:
    """(this process's rank, how many processes train): from the process group, or before there is one from what
    the launcher (torchrun, deepspeed) set; (0, 1) for a lone process."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def process_device(use_cpu: bool = False) -> str:
    """Where this process trains: its own GPU (``cuda:LOCAL_RANK``, which torchrun and deepspeed set), else the
    CPU; DeepSpeed then places the model itself."""
    if use_cpu or not torch.cuda.is_available():
        return "cpu"
    return f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"


def is_main_process() -> bool:
    return process_rank()[0] == 0


def end_worker() -> NoReturn:
    """End a worker process other than the first once its run is done and written, skipping the interpreter's
    teardown: a ZeRO-3 worker sometimes aborts there ("terminate called without an active exception": a native
    thread still joinable when static objects are destroyed), which made torchrun report a finished run as failed."""
    import logging

    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(0)


def shard(n: int) -> list[int]:
    """This process's share of ``n`` items (every world-th from its rank), padded with its last index so that every
    process runs as many forward passes as the others: ZeRO-3 gathers each layer's weights from all processes in
    every forward pass, so a process that stopped early would leave the others waiting."""
    rank, world = process_rank()
    mine = list(range(rank, n, world)) or [0]
    return mine + [mine[-1]] * (-(-n // world) - len(mine))


def gathered(values: dict) -> dict:
    """Every process's ``values`` merged, on every process."""
    _, world = process_rank()
    if world == 1:
        return values
    parts: list = [None] * world
    torch.distributed.all_gather_object(parts, values)
    return {k: v for part in parts for k, v in part.items()}


def parameter_digest(model: torch.nn.Module) -> str:
    """A hash of every parameter's name and value; under ZeRO-3 each parameter is gathered whole in turn, so the
    digest is of the model, not of this process's partition."""
    digest = hashlib.sha256()
    for name, parameter in model.named_parameters():
        whole = nullcontext()
        if hasattr(parameter, "ds_id"):  # a ZeRO-3 partitioned parameter
            import deepspeed

            whole = deepspeed.zero.GatheredParameters([parameter])
        with whole:
            digest.update(name.encode())
            digest.update(parameter.detach().float().cpu().numpy().tobytes())
    return digest.hexdigest()


def prepared_pairs(judge: Judge, pairs) -> list:
    """Each (pair record, its clip with the negative applied) of ``pairs`` (a PairDataset, or any such pairs) with
    its text and utterance, as ``judge`` reads it."""
    return [judge.prepare(judge.sample(clip, record.get("text"), record.get("utterance"))) for record, clip in pairs]


class ChoiceEvaluation:
    """Multiple-choice questions on clips asked of the model being trained, through the judge's own adapter and
    media settings (choice_a for a model without vision, else choice_av); each clip is decoded once and each
    question prepared once, and one that cannot be is an error at every evaluation, never a wrong answer."""

    def __init__(self, judge: Judge, questions: list[ChoiceQuestion]):
        task = "choice_a" if judge.adapter.vision is None else "choice_av"
        # the training judge's resolved settings: the adapter the two share keeps its frame size and audio layout
        self.judge, self.questions = Judge(judge.adapter, replace(judge.settings, task=task)), questions
        self.prepared = []
        for sample in question_samples(self.judge, questions):
            try:
                self.prepared.append(sample if isinstance(sample, ChoiceResult) else self.judge.prepare(sample))
            except (MediaError, ValueError) as err:
                self.prepared.append(self.judge.head.failed(str(err)))

    def __call__(self) -> dict:
        asked = [i for i, p in enumerate(self.prepared) if not isinstance(p, ChoiceResult)]
        answers = dict(zip(asked, self.judge.score_prepared([self.prepared[i] for i in asked])))
        rows = [answer_row(q, answers.get(i, self.prepared[i])) for i, q in enumerate(self.questions)]
        return {**summarize(rows, self.questions), "answers": {r["id"]: r.get("probs") for r in rows}}


class HeldOutEvaluation:
    """Scores fixed held-out pairs with the judge being trained, and asks it ``choice`` questions if given; the
    media is prepared once. Each evaluation's record keeps every pair's score by pair id (``scores``), so which
    pairs a judge gets wrong can be read later without scoring them again.

    With several processes each scores its shard of the pairs (`shard`) and the scores are gathered, so every
    process returns the same metrics; only the main process writes them. Choice questions are asked whole on every
    process (the same forward passes on each, as ZeRO-3 needs)."""

    def __init__(self, judge: Judge, dataset: PairDataset, out_dir: Path, choice: ChoiceEvaluation | None = None):
        self.judge, self.out_dir, self.choice = judge, out_dir, choice
        self.shard = shard(len(dataset))
        self.prepared = prepared_pairs(judge, (dataset[i] for i in self.shard))
        self.ids = [record["id"] for record in dataset.records]
        self.labels = [int(record["label"]) for record in dataset.records]
        self.kinds = [record["negative_type"] for record in dataset.records]
        self.sources = [record["source_id"] for record in dataset.records]

    def __call__(self, step: int) -> dict:
        model = self.judge.adapter.model
        was_training = model.training
        model.eval()
        results = self.judge.score_prepared(self.prepared)
        choice = self.choice() if self.choice is not None else None
        model.train(was_training)
        by_index = gathered({i: r.score for i, r in zip(self.shard, results)})
        scores = [by_index[i] for i in range(len(self.ids))]
        metrics = judge_metrics(scores, self.labels, self.kinds)
        metrics["overall"]["pairwise_accuracy"] = pairwise_accuracy(scores, self.labels, self.sources)
        metrics["scores"] = dict(zip(self.ids, scores))
        if choice is not None:
            metrics["choice"] = choice
        metrics["step"] = step
        metrics["processes"] = process_rank()[1]  # how many scored their shard of the pairs
        if is_main_process():
            write_json(self.out_dir / "eval" / f"step_{step:06d}.json", metrics)
        return metrics


def learning_curves(out_dir: Path) -> dict[str, list[list[float]]]:
    """Held-out balanced accuracy per negative type at every evaluation of a run: {type: [[step, value]]}."""
    curves: dict[str, list[list[float]]] = {}
    for path in sorted((Path(out_dir) / "eval").glob("step_*.json")):
        metrics = read_json_object(path, "it is an evaluation of this run: delete it, or train the run again")
        for kind, m in sorted(metrics["per_type"].items()):
            curves.setdefault(kind, []).append([metrics["step"], m["balanced_accuracy"]])
    return curves


def flat_metrics(metrics: dict) -> dict[str, float]:
    flat = {f"eval/{k}": v for k, v in metrics["overall"].items() if isinstance(v, (int, float)) and k != "n"}
    for kind, m in metrics["per_type"].items():
        flat[f"eval/{kind}/balanced_accuracy"] = m["balanced_accuracy"]
    choice = metrics.get("choice") or {}
    for name, block in {"": choice, **{f"/{c}": b for c, b in choice.get("per_category", {}).items()}}.items():
        if block.get("accuracy") is not None:
            flat[f"eval/choice{name}/accuracy"] = block["accuracy"]
    return flat


def _callbacks(evaluation: HeldOutEvaluation, config: TrainConfig, judge: Judge, record: dict):
    from transformers import TrainerCallback

    class EvaluateAndRecord(TrainerCallback):
        trainer = None

        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step % config.eval_steps == 0:
                should_log = control.should_log
                self.trainer.log(flat_metrics(evaluation(state.global_step)))
                control.should_log = should_log  # Trainer.log resets it: keep this step's loss entry

        def on_save(self, args, state, control, **kwargs):
            checkpoint = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if state.is_world_process_zero and checkpoint.is_dir():
                finish_checkpoint(checkpoint, judge, {**record, "step": state.global_step})

    return EvaluateAndRecord()


def _epoch_callback(examples: TrainingExamples):
    """Tells ``examples`` which epoch it builds (`TrainingExamples.set_epoch`)."""
    from transformers import TrainerCallback

    class TellEpoch(TrainerCallback):
        epoch = 0

        def on_train_begin(self, args, state, control, **kwargs):
            self.epoch = int(state.epoch)  # a resumed run continues in the epoch it stopped in

        def on_epoch_begin(self, args, state, control, **kwargs):
            # before the epoch's data loader starts its workers, which take the examples with them
            examples.set_epoch(self.epoch)

        def on_epoch_end(self, args, state, control, **kwargs):
            self.epoch += 1

    return TellEpoch()


def finish_checkpoint(folder: Path, judge: Judge, record: dict) -> None:
    """Copy the tokenizer and processor files and write the training record beside the weights."""
    base = judge.adapter.checkpoint
    for name in SIDE_FILES:
        if (base / name).exists() and not (folder / name).exists():
            shutil.copy(base / name, folder / name)
    write_json(folder / TRAIN_RECORD, record)


def build_training(config: TrainConfig, weights_from: Path | None = None):
    """(trainer, judge, evaluation, record): everything `run_training` needs, also for tests.

    ``weights_from`` loads the model from a checkpoint of this run instead of the base model.
    """
    from transformers import Trainer

    dataset = Path(config.dataset).expanduser()
    pool = SourcePool(built_sources(dataset))
    trained_on, edited = pairs_now(dataset)
    if edited and is_main_process():
        print(f"warning: {dataset / 'pairs'} changed since `avjudge data build` wrote it; this judge records the hash "
              f"of the pairs it trains on ({trained_on[:16]}), not the build's", file=sys.stderr)  # fmt: skip
    # read and checked before the model loads: a hand-edited line is refused now, not mid-run
    train_records = load_pairs(dataset, config.task, config.train_split, sources=pool.records)
    eval_records = load_pairs(dataset, config.task, config.eval_split, config.max_eval_pairs, pool.records)
    model_dir = Path(config.model).expanduser()
    adapter_cls = adapter_for(model_dir)
    device = process_device(config.use_cpu)
    cuda = device != "cpu"
    dtype = config.dtype if config.dtype != "auto" else ("bfloat16" if cuda else "float32")
    if config.fsdp and not cuda:
        # measured with the pinned torch and accelerate: on CPU the Trainer wraps the model in DDP instead, silently
        raise ConfigError("fsdp needs GPUs: on CPU the Trainer would train with plain DDP instead; leave fsdp unset")
    # Trained weights load in fp32 (the master copies the optimiser updates). LoRA leaves its base frozen, so the base
    # loads in the compute dtype: 20 GiB less for the Qwen2.5-Omni thinker at the same speed on an H100
    # (benchmarks/real_size_judges.py); peft keeps the adapters themselves in fp32.
    adapter = adapter_cls.load(
        weights_from or model_dir,
        device=device if not config.deepspeed else "cpu",
        dtype=dtype if config.freeze == "lora" else "float32",
        attention=config.attention,
    )
    if config.sync_adapter:
        adapter.add_sync_adapter(config.seed)  # a base that has one keeps it
    groups = apply_freeze(
        adapter.model,
        adapter_cls,
        "all" if config.freeze == "all" else ("llm" if config.freeze == "lora" else config.freeze),
    )
    if config.freeze == "lora":
        adapter.model = apply_lora(adapter.model, config.lora_r, config.lora_alpha, config.lora_dropout)
    if config.gradient_checkpointing:
        adapter.model.gradient_checkpointing_enable()
    settings = JudgeSettings(
        task=config.task,
        sampling=config.sampling,
        fps=config.fps,
        max_pixels=config.max_pixels,
        batch_size=config.per_device_eval_batch_size,
        workers=1,
        prepare_on="cpu",  # examples are prepared and collated in DataLoader workers, on the CPU
        use_audio_in_video=config.use_audio_in_video,
        system_prompt=config.system_prompt,
    )
    judge = Judge(adapter, settings)
    sample_rate, fps = judge.settings.sample_rate, judge.settings.fps
    seen = (  # what the AV judge's input can represent of its training pairs (avjudge.data.perceivability)
        dataset_perceivability(dataset, judge.settings.time_sampling(temporal_patch(model_dir)), (config.train_split,))
        if config.task == "av"
        else None
    )
    if seen is not None and is_main_process():
        for line in below_grid_warnings(seen, "this judge's sampling"):
            print(line, file=sys.stderr)
    train_pool, strategies = pool, None
    if config.redraw_negatives:  # redrawn partners must come from the training split, as the build's did
        train_pool = SourcePool(split_sources(dataset, list(pool.records.values()), config.train_split))
        strategies = built_recipe(dataset).audio_strategies(config.task)
    sources = DecodedSources(config.source_cache_mb) if config.source_cache_mb else None
    max_pixels = judge.needs.max_pixels  # frames decoded as scoring decodes them for this judge
    train_set = PairDataset(
        train_records,
        train_pool,
        sample_rate,
        fps,
        dataset,
        strategies,
        sources,
        max_pixels,
    )
    eval_set = PairDataset(
        eval_records,
        pool,
        sample_rate,
        fps,
        dataset,
        sources=sources,
        max_pixels=max_pixels,
    )
    out = Path(config.output_dir)
    choice = ChoiceEvaluation(judge, load_questions(config.choice_questions)) if config.choice_questions else None
    evaluation = HeldOutEvaluation(judge, eval_set, out, choice)
    record = {
        "config": asdict(config),
        "dataset_hash": trained_on,
        "pairs_edited_since_build": edited,
        "code_version": code_version(),
        "base_model": str(model_dir),
        "parameters": groups,
        "sync_adapter": adapter.sync_spec,  # None: the judge has none (avjudge.judges.sync_adapter)
        "judge_settings": {k: getattr(judge.settings, k) for k in TRAINED_SETTINGS},
        "perceivability": seen,  # of its training pairs at its sampling (avjudge.data.perceivability)
    }
    if config.deepspeed:
        _ensure_distributed_env()
    if "wandb" in config.report_to:
        os.environ.setdefault("WANDB_MODE", "offline")
        os.environ.setdefault("WANDB_PROJECT", config.wandb_project)
        os.environ.setdefault("WANDB_DIR", str(out))
    args = config.training_arguments(
        str(resolve(config.deepspeed, "deepspeed")) if config.deepspeed else None, cuda, dtype == "bfloat16"
    )
    redraw_seed = config.seed if config.redraw_negatives else None
    if config.objective == "sft":
        collator = AnswerCollator(judge, config.padding_side)
        examples = TrainingExamples(train_set, collator, config.cache_examples, redraw_seed)
        trainer_class = Trainer
    else:  # preference pairs, the log-odds as the reward
        collator = PreferenceCollator(judge)
        examples = PreferenceExamples(train_set, judge, config.cache_examples, redraw_seed, config.objective == "btt")
        trainer_class = preference_trainer(judge, config.tie_width if config.objective == "btt" else 1.0)
    trainer = trainer_class(model=adapter.model, args=args, train_dataset=examples, data_collator=collator)
    callback = _callbacks(evaluation, config, judge, record)
    callback.trainer = trainer
    trainer.add_callback(callback)
    if config.redraw_negatives:
        trainer.add_callback(_epoch_callback(examples))
    return trainer, judge, evaluation, record


def _latest_checkpoint(out: Path) -> str | None:
    checkpoints = sorted(out.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1]))
    return str(checkpoints[-1]) if checkpoints else None


def _check_zero_processes(checkpoint: Path) -> None:
    """A ZeRO checkpoint holds one optimiser partition per process, and DeepSpeed cannot resume it on another
    number of processes: say so before loading anything, with the ways on."""
    saved_by = len(list(checkpoint.glob("global_step*/*optim_states.pt")))
    processes = process_rank()[1]
    if saved_by and saved_by != processes:
        raise ConfigError(
            f"{checkpoint} was saved under ZeRO by {saved_by} processes and this run has {processes}: resume it with "
            f"{saved_by} (torchrun --nproc_per_node {saved_by}), convert it with DeepSpeed's universal checkpoint "
            f"(python -m deepspeed.checkpoint.ds_to_universal), or start anew from its weights "
            f"(--set model={checkpoint} --set resume=false --set output_dir=ANOTHER_DIR)"
        )


def run_training(config: TrainConfig) -> dict:
    """Train a judge, evaluating on held-out pairs along the way, and save ``output_dir/final``.

    Args:
        config: the run; ``output_dir`` holding checkpoints of the same run resumes from the newest.

    Returns:
        The summary: ``steps``, ``loss_history``, and ``eval_before`` / ``eval_after`` (held-out accuracy, AUROC,
        balanced accuracy, Yes-bias and calibration error, overall and per negative type, with every pair's
        score by pair id; ``eval_before`` is None on a resumed run), ``deepspeed_zero_stage``, the ZeRO stage
        the DeepSpeed engine ran at (None without DeepSpeed), ``processes`` that trained, and ``replicas_agree``:
        whether every process ended with the same weights.
    """
    out = Path(config.output_dir)
    resume = _latest_checkpoint(out) if config.resume else None
    if resume and config.deepspeed:
        _check_zero_processes(Path(resume))
    # The Trainer's own resume loads weights with a non-strict load_state_dict that skips keys
    # transformers renames on save (transformers#43701), so the model comes from the checkpoint
    # through from_pretrained; the Trainer restores optimizer, scheduler, RNG and step.
    # LoRA checkpoints hold only adapters, which the Trainer restores itself.
    weights_from = Path(resume) if resume and config.freeze != "lora" and not config.deepspeed else None
    trainer, judge, evaluation, record = build_training(config, weights_from)
    before = evaluation(0) if resume is None else None
    result = trainer.train(resume_from_checkpoint=resume)
    # what really ran, for the record: the engine DeepSpeed wrapped the model in says its ZeRO stage
    zero_stage = getattr(trainer.model_wrapped, "zero_optimization_stage", None)
    after = evaluation(trainer.state.global_step)
    trainer.log(flat_metrics(after))
    # every process must end with the same weights: data-parallel training that diverged is wrong, not noisy
    digests = gathered({process_rank()[0]: parameter_digest(trainer.model)})
    final = out / "final"
    model = trainer.model
    if config.freeze == "lora" and config.merge_lora:
        model = model.merge_and_unload()
    if config.deepspeed:
        trainer.save_model(str(final))  # every process takes part (ZeRO-3 gathers the weights); the main one writes
    elif is_main_process():
        model.save_pretrained(str(final))
    if config.deepspeed:
        from transformers.integrations.deepspeed import unset_hf_deepspeed_config

        unset_hf_deepspeed_config()  # later from_pretrained calls in this process load plain models again
    summary = {
        **record,
        "steps": trainer.state.global_step,
        "train_loss": result.training_loss,
        "loss_history": [h["loss"] for h in trainer.state.log_history if "loss" in h],
        "eval_before": before,
        "eval_after": after,
        "deepspeed_zero_stage": zero_stage() if zero_stage else None,
        "processes": process_rank()[1],
        "replicas_agree": len(set(digests.values())) == 1,
    }
    if is_main_process():
        finish_checkpoint(final, judge, summary)
    if process_rank()[1] > 1:
        torch.distributed.barrier()  # no process returns before the final model is on disk
    return summary
