import json
import math
import re
import shutil
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from avjudge.config import ConfigError, load_config
from avjudge.data import PairDataset, load_manifest, load_pairs
from avjudge.data.questions import ChoiceQuestion, write_questions
from avjudge.jsonl import read_jsonl
from avjudge.judges import Judge
from avjudge.judges.adapters import adapter_for
from avjudge.judges.judge import TRAINED_SETTINGS
from avjudge.omni.answer import answer_with_judge
from avjudge.omni.benchmarks.questions import world_questions
from avjudge.perturb import SourcePool
from avjudge.resources import resolve
from avjudge.stats import auroc, printed
from avjudge.train import TrainConfig, apply_freeze, build_training, evaluation_table, judge_metrics, run_training
from avjudge.train.evaluation import calibration_error, shown
from avjudge.train.freeze import group_of
from avjudge.train.trainer import flat_metrics, prepared_pairs
from avjudge.world import MANIFEST

CONFIG = resolve("tiny_world_av", "train_config")


def config(tiny_judges, pairs, out, task="av", family=None, **overrides):
    model = tiny_judges[family or ("qwen2_audio" if task == "at" else "qwen2_5_omni")]
    items = [
        f"task={task}",
        f"model={model}",
        f"dataset={pairs}",
        f"output_dir={out}",
        "max_steps=4",
        f"use_audio_in_video={str(task == 'av').lower()}",
        "per_device_train_batch_size=2",
        "eval_steps=2",
        "save_steps=2",
        "logging_steps=1",
        "max_eval_pairs=6",
        "redraw_negatives=false",  # the stored negatives, unless a test redraws them
        # the trainer's mechanics on the demo AV config as it was before its sync adapter (tests/test_sync_adapter.py
        # trains one), whichever task
        "sync_adapter=false",
        "freeze=all",
    ]
    return load_config(TrainConfig, CONFIG, items + [f"{k}={v}" for k, v in overrides.items()])


@pytest.mark.parametrize("side", ["left", "right"])
def test_labels_fall_on_the_answer_token_only(tiny_judges, pairs, tmp_path, side):
    trainer, judge, _, _ = build_training(config(tiny_judges, pairs, tmp_path, padding_side=side))
    records = [trainer.train_dataset.pairs.records[i] for i in range(4)]
    batch = trainer.data_collator([trainer.train_dataset[i] for i in range(4)])
    tok = judge.adapter.tokenizer
    yes, no = tok.convert_tokens_to_ids("Yes"), tok.convert_tokens_to_ids("No")
    assistant = tok("<|im_start|>assistant\n", add_special_tokens=False)["input_ids"]
    for row, record in enumerate(records):
        labels, ids, mask = batch["labels"][row], batch["input_ids"][row], batch["attention_mask"][row]
        supervised = torch.nonzero(labels != -100).flatten().tolist()
        assert len(supervised) == 1
        p = supervised[0]
        assert labels[p] == ids[p] == (yes if record["label"] else no)
        assert ids[p - len(assistant) : p].tolist() == assistant  # the answer follows the assistant prefix
        assert bool(mask[p]) and (labels[mask == 0] == -100).all()
        padded = torch.nonzero(mask == 0).flatten()
        if len(padded):
            assert (padded < p).all() if side == "left" else (padded > p).all()


def test_freeze_policies_select_parameter_groups(tiny_judges):
    adapter_cls = adapter_for(tiny_judges["qwen2_5_omni"])
    model = adapter_cls.load(tiny_judges["qwen2_5_omni"]).model
    counts = apply_freeze(model, adapter_cls, "llm")
    assert counts["llm"]["trainable"] == counts["llm"]["total"] > 0
    for group in ("audio_encoder", "vision_encoder", "connector"):
        assert counts[group]["trainable"] == 0 and counts[group]["total"] > 0
    assert group_of("model.visual.merger.mlp.0.weight", adapter_cls.module_groups) == "connector"
    counts = apply_freeze(model, adapter_cls, "llm+connector")
    assert counts["connector"]["trainable"] == counts["connector"]["total"]
    audio_cls = adapter_for(tiny_judges["qwen2_audio"])
    counts = apply_freeze(audio_cls.load(tiny_judges["qwen2_audio"]).model, audio_cls, "llm+connector")
    assert counts["connector"]["trainable"] > 0 and counts["audio_encoder"]["trainable"] == 0


@pytest.mark.parametrize("family", ["qwen2_5_omni", "qwen3_omni"])
def test_training_keeps_frozen_weights_and_saves_a_loadable_judge(tiny_judges, pairs, tmp_path, family):
    trainer, judge, evaluation, _ = build_training(
        config(tiny_judges, pairs, tmp_path, family=family, freeze="llm", learning_rate=1e-2)
    )
    assert type(judge.adapter).family == family
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    changed = {n for n, p in trainer.model.named_parameters() if not torch.equal(p, before[n])}
    for name, param in trainer.model.named_parameters():
        assert (name in changed) == param.requires_grad, name
        if not param.requires_grad:
            assert param.grad is None
    assert any(n.startswith("model.language_model.") for n in changed)
    in_memory = [r.score for r in judge.score_prepared(evaluation.prepared)]
    trainer.save_model(str(tmp_path / "saved"))
    from avjudge.train.trainer import finish_checkpoint

    settings = {k: getattr(judge.settings, k) for k in TRAINED_SETTINGS}
    finish_checkpoint(tmp_path / "saved", judge, {"judge_settings": settings})
    loaded = Judge.load("av", tmp_path / "saved")  # the recorded settings are the defaults
    assert {k: getattr(loaded.settings, k) for k in settings} == settings and settings["use_audio_in_video"]
    np.testing.assert_allclose([r.score for r in loaded.score_prepared(evaluation.prepared)], in_memory, atol=1e-6)


def test_run_training_writes_checkpoints_records_and_eval(tiny_judges, pairs, tmp_path):
    summary = run_training(config(tiny_judges, pairs, tmp_path / "run", task="vt"))
    out = tmp_path / "run"
    assert summary["steps"] == 4 and len(summary["loss_history"]) == 4
    for folder in (out / "final", out / "checkpoint-4"):
        record = json.loads((folder / "avjudge_train.json").read_text())
        assert record["dataset_hash"] == json.loads((pairs / "stats.json").read_text())["dataset_hash"]
        assert record["code_version"].startswith("avjudge") and record["config"]["task"] == "vt"
        Judge.load("vt", folder)  # every checkpoint loads in the scorer
    steps = sorted(p.name for p in (out / "eval").glob("step_*.json"))
    assert steps == ["step_000000.json", "step_000002.json", "step_000004.json"]
    metrics = json.loads((out / "eval" / "step_000004.json").read_text())
    assert set(metrics["overall"]) >= {"accuracy", "auroc", "balanced_accuracy", "yes_bias", "calibration_error"}
    assert metrics["per_type"]
    # every held-out pair's score, by id, as the saved judge scores it
    held_out = load_pairs(pairs, "vt", "test", 6)
    saved = Judge.load("vt", out / "final")
    pool = SourcePool(load_manifest(json.loads((pairs / "stats.json").read_text())["manifest"]))
    # frames decoded as the judge's scoring decodes them (at most its processor's pixels), as training's were
    dataset = PairDataset(held_out, pool, saved.settings.sample_rate, saved.settings.fps, pairs,
                          max_pixels=saved.needs.max_pixels)  # fmt: skip
    rescored = [r.score for r in saved.score_prepared(prepared_pairs(saved, dataset))]
    assert list(metrics["scores"]) == [r["id"] for r in held_out]
    np.testing.assert_allclose(list(metrics["scores"].values()), rescored, atol=1e-6)
    assert len(set(rescored)) > 1  # the pairs are told apart, so a misordered id would show


@pytest.mark.parametrize("task", ["vt", "at"])
def test_choice_questions_are_asked_at_every_evaluation_as_the_saved_judge_answers_them(
    tiny_judges, pairs, small_world, tmp_path, task
):
    questions = world_questions(small_world / MANIFEST, audio_only=task == "at")[:8]
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"not a video")
    questions.append(ChoiceQuestion("broken", str(broken), "Where?", ("indoors", "outdoors"), "A", "place"))
    write_questions(questions, tmp_path / "questions.jsonl")
    out = tmp_path / "run"
    run_training(config(tiny_judges, pairs, out, task=task, choice_questions=str(tmp_path / "questions.jsonl")))
    evaluations = [json.loads((out / "eval" / f"step_{s:06d}.json").read_text())["choice"] for s in (0, 2, 4)]
    for choice in evaluations:
        assert choice["questions"] == 9 and choice["answered"] == 8 and choice["errors"] == 1
        assert choice["answers"]["broken"] is None and len(choice["answers"]) == 9
    # each evaluation asks the model as it is then, and the last one the model that was saved
    assert evaluations[0]["answers"]["broken"] is None
    assert evaluations[0]["answers"][questions[0].id] != pytest.approx(evaluations[-1]["answers"][questions[0].id])
    saved = Judge.load("choice_a" if task == "at" else "choice_av", out / "final")
    for row in answer_with_judge(saved, questions, tmp_path / "answers.jsonl", "saved", progress=False):
        if row["id"] == "broken":
            assert row["error"]
        else:
            assert row["probs"] == pytest.approx(evaluations[-1]["answers"][row["id"]], rel=1e-4)
    flat = flat_metrics(json.loads((out / "eval" / "step_000004.json").read_text()))
    assert flat["eval/choice/accuracy"] == evaluations[-1]["accuracy"]
    answered = {c for c, block in evaluations[-1]["per_category"].items() if block["answered"]}
    assert {k for k in flat if k.startswith("eval/choice")} == {f"eval/choice/{c}/accuracy" for c in answered} | {
        "eval/choice/accuracy"
    }


def test_scoring_repeats_the_system_prompt_a_judge_was_trained_with(tiny_judges, pairs, small_world, tmp_path):
    cfg = config(tiny_judges, pairs, tmp_path / "run", task="vt", max_steps=1, system_prompt='""')
    assert cfg.system_prompt == ""
    run_training(cfg)
    record = next(iter(read_jsonl(small_world / MANIFEST)))

    def prompt(judge):
        sample = judge.sample(judge.decode(small_world / record["video"]), record["captions"]["video"])
        return judge.adapter.tokenizer.decode(judge.prepare(sample).input_ids)

    trained = Judge.load("vt", tmp_path / "run" / "final")
    base = Judge.load(
        "vt", tiny_judges["qwen2_5_omni"], fps=trained.settings.fps, max_pixels=trained.settings.max_pixels
    )
    assert trained.settings.system_prompt == "" and base.settings.system_prompt is None
    assert "<|im_start|>system" in prompt(base) and prompt(trained) == prompt(base).split("<|im_end|>\n", 1)[1]


def test_resumed_training_matches_an_uninterrupted_run(tiny_judges, pairs, tmp_path):
    from transformers import TrainerCallback

    whole = run_training(
        config(tiny_judges, pairs, tmp_path / "whole", task="at", max_steps=6, save_steps=3, lr_scheduler_type="linear")
    )

    class StopAt3(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 3:
                control.should_training_stop = True

    cfg = config(
        tiny_judges, pairs, tmp_path / "split", task="at", max_steps=6, save_steps=3, lr_scheduler_type="linear"
    )
    trainer, *_ = build_training(cfg)
    trainer.add_callback(StopAt3())
    trainer.train()
    resumed = run_training(cfg)  # finds checkpoint-3 and continues
    assert resumed["steps"] == whole["steps"] == 6
    first = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert len(first) == 3
    # the resumed history holds the first three steps (from the checkpoint) and the last three
    np.testing.assert_allclose(resumed["loss_history"], whole["loss_history"], rtol=1e-4)
    np.testing.assert_allclose(resumed["loss_history"][:3], first, rtol=1e-6)


def test_cached_examples_are_built_once_and_train_exactly_like_rebuilt_ones(tiny_judges, pairs, tmp_path):
    histories, builds = {}, {}
    for cache in (False, True):
        trainer, *_ = build_training(
            config(
                tiny_judges,
                pairs,
                tmp_path / str(cache),
                per_device_train_batch_size=4,
                max_steps=10,
                save_steps=100,
                cache_examples=cache,
            )
        )
        examples = trainer.train_dataset
        build = examples.collator.example
        calls = []
        examples.collator.example = lambda record, clip: calls.append(record["id"]) or build(record, clip)
        trainer.train()
        histories[cache] = [h["loss"] for h in trainer.state.log_history if "loss" in h]
        builds[cache] = calls
    n = len(examples)
    assert 10 * 4 > 2 * n  # more than two epochs
    assert len(builds[False]) >= 10 * 4 and sorted(builds[True]) == sorted(r["id"] for r in examples.pairs.records)
    assert histories[True] == histories[False]
    with pytest.raises(ConfigError, match="dataloader_num_workers"):
        config(tiny_judges, pairs, tmp_path, cache_examples=True, dataloader_num_workers=2)


def test_decoded_source_cache_trains_and_evaluates_exactly_like_decoding_every_pair(
    tiny_judges, pairs, tmp_path, monkeypatch
):
    import avjudge.data.pairs as pairs_module

    decoded, decode_source = [], pairs_module._decode_source
    monkeypatch.setattr(pairs_module, "_decode_source", lambda *a: decoded.append(a[0]) or decode_source(*a))
    histories, evaluations, decodes = {}, {}, {}
    for budget in (0, 256):
        decoded.clear()
        trainer, _, evaluation, _ = build_training(
            config(
                tiny_judges,
                pairs,
                tmp_path / str(budget),
                per_device_train_batch_size=4,
                max_steps=10,
                save_steps=100,
                redraw_negatives=True,
                source_cache_mb=budget,
            )
        )
        trainer.train()
        histories[budget] = [h["loss"] for h in trainer.state.log_history if "loss" in h]
        evaluations[budget] = evaluation(10)["overall"]
        decodes[budget] = list(decoded)
    assert 10 * 4 > 2 * len(trainer.train_dataset)  # into a third epoch, whose negatives are redrawn
    assert histories[256] == histories[0] and evaluations[256] == evaluations[0]
    # held-out and training pairs alike: each source decoded once instead of once a pair and epoch
    assert len(decodes[256]) == len(set(decodes[256])) == len(set(decodes[0])) < len(decodes[0]) / 4
    with pytest.raises(ConfigError, match="source_cache_mb"):
        config(tiny_judges, pairs, tmp_path, source_cache_mb=-1)


def test_redrawn_negatives_change_every_epoch_and_borrow_from_the_training_split_only(tiny_judges, pairs, tmp_path):
    trainer, *_ = build_training(
        config(
            tiny_judges,
            pairs,
            tmp_path,
            per_device_train_batch_size=4,
            max_steps=10,
            save_steps=100,
            redraw_negatives=True,
        )
    )
    examples = trainer.train_dataset
    stored = {r["id"]: r for r in examples.pairs.records}
    build, built = examples.collator.example, []
    examples.collator.example = lambda record, clip: built.append((examples.epoch, record)) or build(record, clip)
    trainer.train()
    assert 10 * 4 > 2 * len(examples)  # into a third epoch
    assert {epoch for epoch, _ in built} == {0, 1, 2}
    assert all(record == stored[record["id"]] for epoch, record in built if epoch == 0)
    later = [(epoch, record) for epoch, record in built if epoch > 0]
    assert all(record == stored[record["id"]] for _, record in later if record["label"])  # positives stay
    changed = {epoch for epoch, record in later if record["params"] != stored[record["id"]]["params"]}
    assert changed == {1, 2}
    assert all(record["params"].keys() == stored[record["id"]]["params"].keys() for _, record in later)

    # a random mismatch's new partner: another clip of the training split, drawn the same for the same seed
    splits = json.loads((pairs / "splits.json").read_text())
    index = next(i for i, r in enumerate(examples.pairs.records) if not r["label"])
    examples.pairs.records[index] = {**examples.pairs.records[index], "strategy": "random_mismatch"}
    partners = [examples.pairs.redrawn(index, [0, epoch, index])[0]["params"]["source"] for epoch in range(1, 21)]
    own = examples.pairs.records[index]["source_id"]
    assert all(splits[p] == "train" and p != own for p in partners) and len(set(partners)) > 1
    assert examples.pairs.redrawn(index, [0, 1, index])[0]["params"]["source"] == partners[0]
    assert (
        examples.pairs.redrawn(next(i for i, r in enumerate(examples.pairs.records) if r["label"]), [0, 1, 0]) is None
    )


def test_redrawing_needs_what_the_build_kept(tiny_judges, pairs, tmp_path):
    copy = tmp_path / "pairs"
    shutil.copytree(pairs, copy)
    (copy / "splits.json").unlink()
    build_training(config(tiny_judges, copy, tmp_path / "plain"))  # only redrawing reads the splits
    with pytest.raises(ConfigError, match="splits.json is missing: .* not made by `avjudge data build`"):
        build_training(config(tiny_judges, copy, tmp_path / "redraw", redraw_negatives=True))


@pytest.mark.parametrize("stage", [2, 3])
def test_deepspeed_zero_on_cpu_trains_at_its_stage_and_saves_what_it_trained(tiny_judges, pairs, tmp_path, stage):
    from safetensors.torch import load_file

    from avjudge.train.trainer import HeldOutEvaluation

    summary = run_training(
        config(tiny_judges, pairs, tmp_path, deepspeed=f"zero{stage}", max_steps=3, save_steps=10, learning_rate=1e-2)
    )
    assert summary["steps"] == 3
    assert summary["deepspeed_zero_stage"] == stage  # the DeepSpeed engine ran, at the configured stage
    # the saved weights are trained ones: the language model's layers moved from the base model's
    base, final = (
        load_file(str(next(Path(d).glob("*.safetensors")))) for d in (tiny_judges["qwen2_5_omni"], tmp_path / "final")
    )
    trained = [k for k in final if k in base and "layers" in k and "visual" not in k and "audio_tower" not in k]
    assert trained and any(not torch.equal(final[k], base[k]) for k in trained)
    # the saved model gives every held-out pair the score the trained model in memory gave it
    loaded = Judge.load("av", tmp_path / "final")
    evaluation = HeldOutEvaluation(loaded, _eval_set(tiny_judges, pairs, loaded), tmp_path)
    scores = dict(zip(evaluation.ids, (r.score for r in loaded.score_prepared(evaluation.prepared))))
    in_memory = summary["eval_after"]["scores"]
    assert scores.keys() == in_memory.keys() and len(scores) == 6
    assert all(abs(scores[i] - in_memory[i]) < 1e-6 for i in scores), (scores, in_memory)


def _eval_records(pairs):
    from avjudge.data import load_pairs

    return load_pairs(pairs, "av", "test", 6)


def _eval_set(tiny_judges, pairs, judge):
    from avjudge.data import PairDataset, load_manifest
    from avjudge.perturb import SourcePool

    stats = json.loads((pairs / "stats.json").read_text())
    pool = SourcePool(load_manifest(stats["manifest"]))
    return PairDataset(_eval_records(pairs), pool, 16000, judge.settings.fps, pairs, max_pixels=judge.needs.max_pixels)


def _labels(pairs):
    return [r["label"] for r in _eval_records(pairs)]


def _kinds(pairs):
    return [r["negative_type"] for r in _eval_records(pairs)]


def test_the_attention_a_config_names_is_the_one_the_model_trains_with(tiny_judges, pairs, tmp_path):
    from avjudge.judges.attention import PACKED

    default, *_ = build_training(config(tiny_judges, pairs, tmp_path / "auto"))
    assert default.model.config.vision_config._attn_implementation == PACKED
    eager, *_ = build_training(config(tiny_judges, pairs, tmp_path / "eager", attention="eager"))
    assert {
        eager.model.config.vision_config._attn_implementation,
        eager.model.config.text_config._attn_implementation,
    } == {"eager"}


def test_lora_trains_adapters_only_and_merges(tiny_judges, pairs, tmp_path):
    trainer, *_ = build_training(config(tiny_judges, pairs, tmp_path, freeze="lora", lora_r=4))
    trainable = [n for n, p in trainer.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    summary = run_training(config(tiny_judges, pairs, tmp_path / "lora", freeze="lora", lora_r=4))
    assert summary["steps"] == 4
    Judge.load("av", tmp_path / "lora" / "final")


def test_lora_keeps_its_frozen_base_in_the_compute_dtype_and_its_adapters_in_fp32(tiny_judges, pairs, tmp_path):
    lora, *_ = build_training(config(tiny_judges, pairs, tmp_path / "lora", freeze="lora", lora_r=4, dtype="bfloat16"))
    dtypes = {n: p.dtype for n, p in lora.model.named_parameters()}
    assert {d for n, d in dtypes.items() if "lora_" in n} == {torch.float32}
    assert {d for n, d in dtypes.items() if "lora_" not in n} == {torch.bfloat16}
    summary = run_training(config(tiny_judges, pairs, tmp_path / "run", freeze="lora", lora_r=4, dtype="bfloat16"))
    assert summary["steps"] == 4 and all(np.isfinite(summary["loss_history"]))
    # the policies that train base weights keep fp32 master copies whatever the compute dtype
    full, *_ = build_training(config(tiny_judges, pairs, tmp_path / "llm", freeze="llm", dtype="bfloat16"))
    assert {p.dtype for p in full.model.parameters()} == {torch.float32}


def test_metrics_equal_hand_computed_values():
    scores = np.array([0.9, 0.8, 0.4, 0.7, 0.2, 0.4])
    labels = np.array([1, 1, 1, 0, 0, 0])
    # positives outscore negatives in 7 of 9 pairs, one tie (0.4 vs 0.4) counts half
    assert auroc(scores, labels) == pytest.approx(7.5 / 9)
    m = judge_metrics(scores, labels, ["positive"] * 3 + ["shift", "shift", "pitch"])
    assert m["overall"]["accuracy"] == pytest.approx(4 / 6)
    assert m["overall"]["balanced_accuracy"] == pytest.approx((2 / 3 + 2 / 3) / 2)
    assert m["overall"]["yes_bias"] == pytest.approx(3 / 6)
    assert m["per_type"]["pitch"]["n"] == 4 and m["per_type"]["shift"]["n"] == 5
    # ECE by hand: bins [0.2)=0.2:label0; [0.4)=0.4,0.4: labels 1,0; [0.7)=0.7:0; [0.8)=0.8:1; [0.9)=0.9:1
    expected = (1 * 0.2 + 2 * abs(0.4 - 0.5) + 1 * 0.7 + 1 * 0.2 + 1 * 0.1) / 6
    assert calibration_error(scores, labels) == pytest.approx(expected)


def test_the_evaluation_table_prints_undefined_figures_and_a_resumed_runs_untrained_ones_as_n_a():
    def evaluation(overall_auroc, **balanced):
        return {
            "overall": {"auroc": overall_auroc},
            "per_type": {kind: {"balanced_accuracy": value, "auroc": value + 0.01} for kind, value in balanced.items()},
        }

    lines = evaluation_table(
        {
            "av": {"eval_before": evaluation(None, shift=0.5), "eval_after": evaluation(0.91, shift=0.97, pitch=0.75)},
            "vt": {"eval_before": None, "eval_after": evaluation(0.6, counting=0.55)},
        }
    )
    rows = [line.split() for line in lines[3:]]
    assert rows == [  # balanced accuracy before, after; AUROC before, after
        ["av", "(all", "pairs)", "n/a", "n/a", "n/a", "0.910"],
        ["pitch", "n/a", "0.750", "n/a", "0.760"],
        ["shift", "0.500", "0.970", "0.510", "0.980"],
        ["vt", "(all", "pairs)", "n/a", "n/a", "n/a", "0.600"],
        ["counting", "n/a", "0.550", "n/a", "0.560"],
    ]


def test_the_train_command_prints_each_negative_types_figures_before_and_after(tiny_judges, pairs, tmp_path, capsys):
    from avjudge.cli import main

    overrides = [
        f"model={tiny_judges['qwen2_5_omni']}",
        f"dataset={pairs}",
        f"output_dir={tmp_path / 'run'}",
        "max_steps=2",
        "per_device_train_batch_size=2",
        "eval_steps=2",
        "save_steps=2",
        "max_eval_pairs=6",
        "redraw_negatives=false",
    ]
    assert main(["train", "--config", "tiny_world_av", *(arg for o in overrides for arg in ("--set", o))]) == 0
    out = capsys.readouterr().out
    after = json.loads((tmp_path / "run" / "eval" / "step_000002.json").read_text())["per_type"]
    for kind, figures in after.items():  # the table's after column is the last evaluation's (n/a: too few pairs)
        balanced, area = (printed(shown(figures)[k], 3, "n/a") for k in ("balanced_accuracy", "auroc"))
        assert re.search(rf"^\s+{kind}\s+\S+\s+{balanced}\s+\S+\s+{area}$", out, re.M), kind
    assert "trained 2 steps" in out
    overall = json.loads((tmp_path / "run" / "eval" / "step_000002.json").read_text())["overall"]
    assert f"pairwise accuracy {printed(overall['pairwise_accuracy'], 3, 'n/a')}," in out  # as the docs say
    # the judge card, in the run's folder and beside its weights: what it learnt from, its figures, its audits
    card = json.loads((tmp_path / "run" / "judge_card.json").read_text())
    assert card == json.loads((tmp_path / "run" / "final" / "judge_card.json").read_text())
    stats = json.loads((pairs / "stats.json").read_text())
    assert card["dataset"]["dataset_hash"] == stats["dataset_hash"] and card["dataset"]["recipe"] == "world_demo"
    assert card["held_out"]["per_type"].keys() == after.keys() and card["steps"] == 2
    assert {"audio", "video", "leaks", "tells"} <= set(card["shortcut_audit"])
    # what its input can represent, at the sampling it trained with (the config's 8 fps: no shift below its grid)
    seen = card["perceivability"]
    assert seen["sampling"].startswith("8 fps") and seen["grid_s"] == 0.25 and seen["below_grid"] == []
    assert {"time_shift_medium", "time_shift_micro"} <= set(seen["per_type"])
    trained = json.loads((tmp_path / "run" / "final" / "avjudge_train.json").read_text())["perceivability"]
    assert trained["sampling"] == seen["sampling"]  # its training split's, recorded as it trained
    variants = card["reward_audit"]["after"]
    assert {"window_shifted_sound", "shifted_sound", "in_sync_mute", "black_frames"} <= set(variants)
    assert "other_prompt" not in variants  # the AV judge reads no prompt: not asked about one
    assert all(f"flag: {flag}" in out for flag in card["flags"]) and "judge card:" in out
    assert main(["judges", "card", str(tmp_path / "run")]) == 0
    page = capsys.readouterr().out
    assert page.startswith("# Judge card: av judge") and "| window_shifted_sound" in page and "## Flags" in page
    assert "## What its input can represent" in page and "time_shift_micro" in page


def test_a_judge_whose_card_flags_something_says_so_when_loaded(tiny_judges, tmp_path):
    import shutil
    import warnings

    from avjudge.judges import CARD_FILE, Judge, JudgeCardFlags

    folder = tmp_path / "judge"
    shutil.copytree(tiny_judges["qwen2_5_omni"], folder)
    (folder / CARD_FILE).write_text(json.dumps({"flags": []}))
    with warnings.catch_warnings():
        warnings.simplefilter("error", JudgeCardFlags)
        Judge.load("av", folder)  # a card without flags: silent
    (folder / CARD_FILE).write_text(json.dumps({"flags": ["leak: the audio alone tells time_shift_medium apart"]}))
    with pytest.warns(JudgeCardFlags, match="time_shift_medium apart"):
        judge = Judge.load("av", folder)
    assert judge.task.name == "av"  # a warning, not a refusal


@pytest.mark.parametrize("name", ["av_qwen25omni_7b", "vt_qwen25omni_7b", "at_qwen2audio_7b", "tiny_world_av"])
def test_shipped_train_configs_load(name):
    cfg = load_config(TrainConfig, resolve(name, "train_config"))
    assert cfg.task in ("av", "vt", "at")
    if name != "tiny_world_av":
        assert cfg.freeze == ("llm+connector" if cfg.task == "at" else "llm") and cfg.deepspeed
        assert resolve(cfg.deepspeed, "deepspeed").is_file()


@pytest.mark.parametrize("task", ["av", "vt"])
def test_demo_configs_show_the_judge_the_frame_size_they_name(task):
    """What the judge sees of the demo's 192-px frames: scaled as they are decoded (`fit_pixels`), then resized by its
    processor. Qwen's smart resize floors 192 / sqrt(192² / 12544) = 3.99999... patches, so the processor alone at a
    budget of exactly 112 x 112 would give 84 x 84: the VT config asks for a little more; the AV config's 56 x 56
    frames reach the processor at that size."""
    from avjudge.demo import TRAIN_CONFIGS, DemoSize
    from avjudge.judges.media_inputs import VisionPreprocess
    from avjudge.media.budget import fitted_size

    cfg = load_config(TrainConfig, TRAIN_CONFIGS[task])
    side, wanted = DemoSize().frame_size, {"av": 56, "vt": 112}[task]
    decoded = fitted_size(side, side, cfg.max_pixels)
    assert VisionPreprocess().with_pixels(None, cfg.max_pixels).target_size(*decoded) == (wanted, wanted)
    assert VisionPreprocess().with_pixels(None, 112 * 112).target_size(side, side) == (84, 84)


REQUIRED = {"task": "at", "model": "m", "dataset": "d", "output_dir": "o"}


def test_every_trainer_option_can_be_set_and_reaches_the_trainer(tmp_path):
    import dataclasses

    from transformers import TrainingArguments

    from avjudge.train.train_config import trainer_options

    options = trainer_options()
    assert {"max_grad_norm", "optim", "fsdp", "torch_compile", "ddp_timeout", "save_only_model"} <= set(options)
    for name in options:  # each, at the Trainer's own default, is a key a judge's config takes
        spec = TrainingArguments.__dataclass_fields__[name]
        default = spec.default_factory() if spec.default_factory is not dataclasses.MISSING else spec.default
        assert TrainConfig.from_mapping({**REQUIRED, name: default}).option(name) == default, name
    yaml = tmp_path / "run.yaml"
    yaml.write_text("task: at\nmodel: m\ndataset: d\noutput_dir: o\nmax_grad_norm: 0.25\noptim: adafactor\n")
    cfg = load_config(TrainConfig, yaml, ["save_only_model=true", "ddp_timeout=99", "learning_rate=3e-4"])
    args = cfg.training_arguments(None, cuda=False, bf16=False)
    assert (args.max_grad_norm, args.optim.value, args.save_only_model, args.ddp_timeout) == (
        0.25,
        "adafactor",
        True,
        99,
    )
    assert args.learning_rate == cfg.learning_rate == 3e-4 and args.output_dir == "o" and not args.remove_unused_columns
    assert cfg.lr_scheduler_type == "cosine" and args.num_train_epochs == 1.0  # avjudge's defaults, not the Trainer's
    assert load_config(TrainConfig, _dumped(cfg, tmp_path)) == cfg  # what the train command prints loads again


def _dumped(cfg, tmp_path):
    from avjudge.config import dump_yaml

    path = tmp_path / "dumped.yaml"
    path.write_text(dump_yaml(cfg))
    return path


def test_old_training_keys_load_with_a_warning_and_wrong_keys_fail(tmp_path):
    with pytest.warns(FutureWarning, match="'batch_size' is deprecated; use 'per_device_train_batch_size'"):
        cfg = TrainConfig.from_mapping(
            {**REQUIRED, "batch_size": 4, "grad_accum": 2, "epochs": 3, "lr_scheduler": "linear"}
        )
    assert (cfg.per_device_train_batch_size, cfg.gradient_accumulation_steps, cfg.num_train_epochs) == (4, 2, 3.0)
    assert cfg.lr_scheduler_type == "linear"
    with pytest.raises(ConfigError, match="unknown key 'learning_rat'"):
        TrainConfig.from_mapping({**REQUIRED, "learning_rat": 1e-4})
    with pytest.raises(ConfigError, match="eval_strategy is not set in a judge's config"):
        TrainConfig.from_mapping({**REQUIRED, "eval_strategy": "steps"})
    with pytest.raises(ConfigError, match="max_grad_norm: expected float"):
        TrainConfig.from_mapping({**REQUIRED, "max_grad_norm": [1]})
    with pytest.raises(AttributeError, match="no field or TrainingArguments option 'learning_rat'"):
        cfg.learning_rat  # noqa: B018


@pytest.mark.parametrize(
    "values, words",
    [  # each passed to the Trainer, which trained on it without a word (or failed after the model loaded)
        ({"learning_rate": -1e-5}, "learning_rate must be positive"),
        ({"num_train_epochs": 0}, "num_train_epochs epochs (above 0) where max_steps is -1"),
        ({"max_steps": -5}, "got max_steps -5"),
        ({"weight_decay": -0.1}, "weight_decay must be 0 or more"),
        ({"seed": -1}, "seed must be 0 or more"),
        ({"logging_steps": 0}, "logging_steps must be positive"),
        ({"eval_split": "train"}, "its figures would not be held out"),
        ({"lora_r": 0}, "lora_r and lora_alpha are at least 1"),
        ({"lora_dropout": 1.5}, "lora_dropout within [0, 1)"),
        ({"max_eval_pairs": 0}, "max_eval_pairs must be positive (or unset)"),
        ({"fps": 0.0}, "fps must be positive (or unset)"),
    ],
)
def test_a_training_value_out_of_its_range_is_refused_naming_it(values, words):
    with pytest.raises(ConfigError) as refused:
        TrainConfig.from_mapping({**REQUIRED, **values}, "run.yaml")
    assert str(refused.value).startswith("run.yaml: ") and words in str(refused.value)
    assert TrainConfig.from_mapping({**REQUIRED, "max_steps": 10, "num_train_epochs": 0}).max_steps == 10


def test_the_pairwise_objective_trains_with_lora_and_refuses_a_tie_width_without_width(tiny_judges, pairs, tmp_path):
    """``objective: btt`` under LoRA: preference pairs of the training split, the merged judge saved and loaded."""
    from avjudge.train.pairwise import PreferenceExamples, preference_indices, preference_loss

    run = config(tiny_judges, pairs, tmp_path / "run", task="av")
    run = replace(run, objective="btt", freeze="lora", trainer={**run.trainer, "max_steps": 2})
    summary = run_training(run)
    assert summary["steps"] == 2 and summary["eval_after"]["overall"]["pairwise_accuracy"] is not None
    Judge.load("av", tmp_path / "run" / "final")
    records = load_pairs(pairs, "av", "train")
    for chosen, rejected in preference_indices(records):  # each negative against a positive of its own source
        assert records[chosen]["label"] == 1 and records[rejected]["label"] == 0
        assert records[chosen]["source_id"] == records[rejected]["source_id"]
    assert len(preference_indices(records)) == sum(r["label"] == 0 for r in records)
    # Bradley-Terry's loss: log 2 at a tie, smaller as the chosen leads; btt asks a lead of log k
    delta = torch.tensor([1.0, 0.0, 0.0, 0.0])
    assert preference_loss(delta[[1, 3]], 1) == pytest.approx(math.log(2))
    assert preference_loss(delta[[0, 1]], 1) < math.log(2) < preference_loss(delta[[0, 1]], 1, tie_width=5.0)
    with pytest.raises(ConfigError, match="tie_width is above 1"):
        replace(run, tie_width=1.0)
    with pytest.raises(ValueError, match="nothing to prefer"):
        PreferenceExamples(SimpleNamespace(records=[r for r in records if r["label"]]), None)


def test_a_recipes_ties_mark_unnoticed_negatives_and_btt_learns_them_as_ties(small_world, tiny_judges, tmp_path):
    """A shift under 45 ms (ITU-R BT.1359's threshold) is marked a tie with its source; btt's loss of a tie is
    Rao-Kupper's, the same as the preference model's (`avjudge.judges.preference`), and a run trains on it."""
    from avjudge.data import build_dataset, load_recipe
    from avjudge.judges.preference import Preference, log_likelihoods
    from avjudge.perturb import get_strategy
    from avjudge.train.pairwise import preference_loss

    shift, pitch = get_strategy("time_shift_micro"), get_strategy("pitch_shift")
    assert shift.unnoticed({"shift_s": -0.03}) and not shift.unnoticed({"shift_s": 0.2})
    assert pitch.unnoticed({"semitones": 0.1}) and not get_strategy("filter").unnoticed({"cutoff_hz": 1.0})
    overrides = [
        f"source={small_world / MANIFEST}",
        "judges={av: {pairs: 32, strategies: {time_shift_micro: 4.0}, ties: true,"
        " strategy_params: {time_shift_micro: {shift_s: [0.0, 0.09]}}}}",
    ]
    recipe, source = load_recipe("world_demo", overrides)
    build_dataset(recipe, source, tmp_path / "pairs", progress=False)
    negatives = [
        r for split in ("train", "test") for r in load_pairs(tmp_path / "pairs", "av", split) if not r["label"]
    ]
    shifts = [r for r in negatives if r["strategy"] == "time_shift_micro"]  # the recipe's other strategies: no size
    assert all(r["tie"] == (abs(r["params"]["shift_s"]) < 0.045) for r in shifts)
    assert {r["tie"] for r in shifts} == {True, False} and not any(r["tie"] for r in negatives if r not in shifts)
    delta = torch.tensor([0.7, -0.2, 0.1, 0.4])  # two pairs: (0.7 vs 0.1) a win, (-0.2 vs 0.4) a tie
    expected = -log_likelihoods(Preference(tie=5.0), [0.7, -0.2], [0.1, 0.4], [0, 1]).mean()
    assert float(preference_loss(delta, 2, 5.0, torch.tensor([False, True]))) == pytest.approx(expected, rel=1e-6)
    with pytest.raises(ValueError, match="tie width above 1"):
        preference_loss(delta, 2, 1.0, torch.tensor([False, True]))
    run = replace(config(tiny_judges, tmp_path / "pairs", tmp_path / "run"), objective="btt")
    assert run_training(replace(run, trainer={**run.trainer, "max_steps": 2}))["steps"] == 2


def test_a_type_with_too_few_held_out_negatives_is_na_in_the_tables():
    """The issue's case: the demo report gave a balanced accuracy for a type with one held-out pair, where its own
    audit said n/a. Both tables now follow the audit's rule (`MIN_REPORTED` negatives)."""
    from avjudge.data.shortcuts import MIN_REPORTED
    from avjudge.demo.page import _per_type_table
    from avjudge.train.evaluation import evaluation_table, judge_metrics

    rng = np.random.default_rng(0)
    labels = [1] * 30 + [0] * (MIN_REPORTED + 1)
    types = ["positive"] * 30 + ["filter"] * MIN_REPORTED + ["pitch_shift"]
    scores = np.clip(np.array(labels) * 0.4 + rng.uniform(0.2, 0.5, len(labels)), 0, 1)
    figures = judge_metrics(scores, labels, types)
    assert figures["per_type"]["pitch_shift"]["negatives"] == 1 and figures["per_type"]["pitch_shift"]["auroc"] == 1.0
    result = {"eval_before": figures, "eval_after": figures}
    rows = {line.split()[0]: line.split()[1:] for line in evaluation_table({"av": result})[4:]}
    assert rows["pitch_shift"] == ["n/a"] * 4 and "n/a" not in rows["filter"]
    page = _per_type_table("av", result)
    assert page.count(">n/a</td>") == 4
