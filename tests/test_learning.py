"""Training learns: the demo's tiny AV judge, trained on the CPU for a few hundred steps, tells untouched clips it
never saw from the same clips with their audio shifted by 1-3 s or filtered, which it answered at chance untrained
(issue #5 at test size; `avjudge demo` is the full run)."""

import dataclasses

from avjudge.config import load_config
from avjudge.data import build_dataset, load_recipe
from avjudge.demo import RECIPE, TRAIN_CONFIGS, DemoSize
from avjudge.train import TrainConfig, run_training
from avjudge.world import MANIFEST, make_world


def test_the_tiny_av_judge_learns_held_out_shifts_and_filters(tmp_path, tiny_judges):
    make_world(DemoSize().world(seed=5, clips=48), tmp_path / "world", progress=False)
    recipe, source = load_recipe(RECIPE, [f"source={tmp_path / 'world' / MANIFEST}"])
    av = dataclasses.replace(recipe.judges["av"], pairs=384, strategies={"time_shift_medium": 1.0, "filter": 1.0})
    recipe = dataclasses.replace(recipe, judges={"av": av})
    build_dataset(recipe, source, tmp_path / "pairs", progress=False)
    config = load_config(
        TrainConfig,
        TRAIN_CONFIGS["av"],
        [
            f"model={tiny_judges['qwen2_5_omni']}",
            f"dataset={tmp_path / 'pairs'}",
            f"output_dir={tmp_path / 'av'}",
            "max_steps=240",
            "eval_steps=1000",
            "save_steps=1000",
        ],
    )
    summary = run_training(config)
    before, after = summary["eval_before"]["per_type"], summary["eval_after"]["per_type"]
    for kind in ("time_shift_medium", "filter"):
        assert after[kind]["n"] >= 40, kind  # held-out positives and negatives of this type
        # tells them apart at any threshold; where S = 0.5 falls after 240 steps depends on the CPU's arithmetic
        # (on an AMD EPYC: AUROC 0.99 with balanced accuracy 0.83, the judge still leaning to Yes)
        assert after[kind]["auroc"] >= 0.95, (kind, after[kind])
        assert after[kind]["balanced_accuracy"] >= 0.8, (kind, after[kind])
        assert after[kind]["balanced_accuracy"] >= before[kind]["balanced_accuracy"] + 0.2, (kind, before[kind])
