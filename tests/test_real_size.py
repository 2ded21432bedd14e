"""benchmarks/real_size_judges.py: the released sizes are right, and its measurements run end to end (tiny)."""

import importlib.util
from pathlib import Path

import pytest
import torch

from avjudge.train.freeze import group_of

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "real_size_judges.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("real_size_judges", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Published parameter counts: Qwen2.5-7B (the Omni thinker's language model), Qwen2-Audio-7B (whole model),
# Qwen2.5-VL's vision encoder with its merger, Qwen3-30B-A3B (the Qwen3-Omni thinker's language model).
PUBLISHED = {
    ("qwen2_5_omni", "llm"): 7.61e9,
    ("qwen2_5_omni", "vision"): 0.675e9,
    ("qwen2_audio", "all"): 8.4e9,
    ("qwen3_omni", "llm"): 30.5e9,
}


def test_real_size_checkpoints_have_the_published_parameter_counts(bench, tiny_judges, tmp_path):
    counts = {}
    for family in bench.REAL_SIZES:
        checkpoint = bench.real_size_checkpoint(family, tiny_judges[family], tmp_path / family)
        adapter = bench.build_adapter(checkpoint, torch.device("meta"), torch.bfloat16, "auto")
        groups = {}
        for name, param in adapter.model.named_parameters():
            group = group_of(name, type(adapter).module_groups)
            groups[group] = groups.get(group, 0) + param.numel()
        counts[family, "llm"] = groups["llm"]
        counts[family, "vision"] = groups.get("vision_encoder", 0) + sum(
            p.numel() for n, p in adapter.model.named_parameters() if n.startswith("model.visual.merger.")
        )
        counts[family, "all"] = sum(groups.values())
        assert adapter.max_audio_seconds == bench.REAL_SIZES[family]["window_s"]
    for key, published in PUBLISHED.items():
        assert counts[key] == pytest.approx(published, rel=0.01), key


def test_the_benchmark_measures_every_family_on_tiny_judges(bench, tmp_path):
    out = tmp_path / "real_size.json"
    report = bench.main(
        [
            "--size",
            "tiny",
            "--seconds",
            "2",
            "--height",
            "90",
            "--width",
            "160",
            "--clips",
            "2",
            "--batch-sizes",
            "1,2",
            "--train-batch-sizes",
            "1,2",
            "--steps",
            "1",
            "--workers",
            "2",
            "--attention",
            "auto,sdpa",
            "--out",
            str(out),
        ]
    )
    assert set(report["families"]) == set(bench.REAL_SIZES)
    for family, measured in report["families"].items():
        for task in bench.REAL_SIZES[family]["tasks"]:
            scoring = measured["tasks"][task]["scoring"]
            assert [row["batch_size"] for row in scoring["auto"]] == [1, 2] and scoring["sdpa"]
            assert all(row["clips_per_s"] > 0 for row in scoring["auto"])
            # on CPU packed windows fall back to one sdpa call per window: the very same scores
            assert measured["tasks"][task]["max_score_difference"]["sdpa"] < 1e-5
        assert measured["differentiable"]["seconds"] > 0
        trained = "train_bf16_weights" in measured
        assert trained == bench.REAL_SIZES[family]["train"]
        if trained:
            assert [row["batch_size"] for row in measured["train_bf16_weights"]] == [1, 2]
    assert out.exists()


def test_the_end_to_end_run_scores_files_the_same_both_ways(bench, tmp_path):
    report = bench.main(
        ["--size", "tiny", "--families", "qwen2_5_omni", "--end-to-end", "--seconds", "3", "--height", "90"]
        + [
            "--width",
            "160",
            "--files",
            "2",
            "--batch-sizes",
            "2",
            "--workers",
            "2",
            "--decode-processes",
            "1",
            "--align-widths",
            "48",  # the tiny judge's MLPs are aligned to 8 already
            "--no-train",
        ]
        + ["--out", str(tmp_path / "e2e.json")]
    )
    measured = report["families"]["qwen2_5_omni"]["end_to_end"]
    run = measured["runs"]["2"]
    # two scoring windows of four batches of two
    assert run["before"]["clips"] == run["after"]["clips"] == 16 and run["max_score_difference"] < 1e-5
    # and through `avjudge score`'s batch job (scoring core, local engine, decoding processes)
    assert run["job"]["clips"] == 16 and run["max_score_difference_job"] < 1e-5
    assert measured["agreement"]["pixel_values_equal"]
    assert all(rate > 0 for rate in measured["stages"]["2"].values())
    assert (tmp_path / "e2e.profile.txt").read_text().strip()
    # the same judge with its MLP widths padded: the same scores
    aligned = measured["variants"]["aligned"]
    assert aligned["changed"][0] >= 4 and aligned["max_score_difference"] < 1e-5
    assert aligned["forward_clips_per_s"] > 0 and (tmp_path / "e2e.aligned.profile.txt").read_text().strip()


@pytest.mark.slow  # compiling the tiny judge's blocks takes about half a minute on 2 cores
def test_the_end_to_end_run_compares_compiled_blocks(bench, tmp_path):
    args = ["--size", "tiny", "--families", "qwen2_5_omni", "--end-to-end", "--seconds", "2", "--height", "90"]
    args += ["--width", "160", "--files", "2", "--batch-sizes", "2", "--workers", "2", "--no-train"]
    report = bench.main(args + ["--compile", "--out", str(tmp_path / "e2e.json")])
    variants = report["families"]["qwen2_5_omni"]["end_to_end"]["variants"]
    assert set(variants) == {"align_widths", "released", "compiled"}
    compiled = variants["compiled"]
    assert compiled["changed"][0] >= 6 and compiled["max_score_difference"] < 1e-5
    assert compiled["forward_clips_per_s"] > 0 and (tmp_path / "e2e.compiled.profile.txt").read_text().strip()


def test_the_full_sft_step_runs_under_zero_on_the_tiny_judge(tmp_path):
    spec = importlib.util.spec_from_file_location("real_size_training", SCRIPT.with_name("real_size_training.py"))
    training = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(training)
    args = ["--size", "tiny", "--variants", "zero2", "--seconds", "2", "--height", "90", "--width", "160"]
    report = training.main(args + ["--accumulation", "2", "--steps", "1", "--out", str(tmp_path / "sft.json")])
    (row,) = report["rows"]
    assert row["stage"] == "done" and row["samples_per_s"] > 0 and row["loss"] == row["loss"]  # finite, not NaN
    assert row["trainable_parameters"] > 0 and "error" not in row
