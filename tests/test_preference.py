"""Comparing clips: the Rao–Kupper preference model (VideoAlign's ``btt`` form), its fit, a group's win rates,
`Judge.compare` and `avjudge compare` swap-tested, and `avjudge judges calibrate` fitting on one split and reporting
on another."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest

from avjudge.cli import main
from avjudge.judges import Judge
from avjudge.judges.calibration import load_preference, load_temperature
from avjudge.judges.preference import Preference, fit_preference, log_likelihoods
from avjudge.stats import reliability
from avjudge.train.calibrate import preference_pairs, scored_split, tie_threshold


def _sigmoid(x):
    return 1 / (1 + math.exp(-x))


def test_the_three_probabilities_sum_to_one_and_swap_exactly():
    model = Preference(temperature=0.7, tie=2.5)
    rng = np.random.default_rng(0)
    a, b = rng.normal(0, 3, 200), rng.normal(0, 3, 200)
    p_a, p_tie, p_b = model.probabilities(a, b)
    q_a, q_tie, q_b = model.probabilities(b, a)
    np.testing.assert_allclose(p_a + p_tie + p_b, 1.0, atol=1e-12)
    assert (p_a == q_b).all() and (p_b == q_a).all() and np.allclose(p_tie, q_tie, atol=1e-15)
    assert (p_tie > 0).all() and (Preference().probabilities(a, b)[1] < 1e-12).all()  # θ = 1: no ties


def test_a_tie_costs_what_videoaligns_btt_loss_says():
    """VideoAlign's btt loss of a tie, k = θ: -log σ(Δ - log k) - log σ(-Δ - log k) - log(k² - 1) (written out here
    from trainer.py's compute_loss); of a win, -log σ(Δ - log k)."""
    k, tau = 3.0, 1.0
    model = Preference(temperature=tau, tie=k)
    for delta in (-2.0, -0.3, 0.0, 0.4, 1.7):
        tie = -math.log(_sigmoid(delta - math.log(k))) - math.log(_sigmoid(-delta - math.log(k))) - math.log(k * k - 1)
        win = -math.log(_sigmoid(delta - math.log(k)))
        ours = log_likelihoods(model, [delta], [0.0], [1, 0][:1])  # a tie
        assert -ours[0] == pytest.approx(tie, rel=1e-9)
        assert -log_likelihoods(model, [delta], [0.0], [0])[0] == pytest.approx(win, rel=1e-9)


def test_the_fit_recovers_a_known_model():
    truth = Preference(temperature=1.6, tie=2.2)
    rng = np.random.default_rng(1)
    a, b = rng.normal(0, 3, 6000), rng.normal(0, 3, 6000)
    p_a, p_tie, _ = truth.probabilities(a, b)
    u = rng.random(6000)
    outcomes = np.where(u < p_a, 0, np.where(u < p_a + p_tie, 1, 2))
    fitted = fit_preference(a, b, outcomes)
    assert fitted.temperature == pytest.approx(1.6, rel=0.08) and fitted.tie == pytest.approx(2.2, rel=0.08)
    assert fit_preference(a, b, np.where(a > b, 0, 2)).tie == 1.0  # no tie among the outcomes: no tie width
    with pytest.raises(ValueError, match="tie width"):
        Preference(tie=0.5)


def test_a_groups_win_rates_average_a_half_and_need_no_pairwise_calls():
    model = Preference(temperature=1.2, tie=1.8)
    deltas = np.array([2.0, -1.0, 0.5, 0.5, 3.0])
    rates = model.win_rates(deltas)
    brute = []
    for i in range(5):
        wins = []
        for j in range(5):
            if i != j:
                p_win, p_tie, _ = model.probabilities(deltas[i], deltas[j])
                wins.append(p_win + p_tie / 2)
        brute.append(np.mean(wins))
    np.testing.assert_allclose(rates, brute, atol=1e-12)
    assert rates.mean() == pytest.approx(0.5) and rates[2] == rates[3] and np.argmax(rates) == 4
    assert model.win_rates([1.0]).tolist() == [0.5]


def test_judge_compare_is_antisymmetric_and_swap_tested(av_vt_judges, world_records, corrupt):
    judge = av_vt_judges["av"]
    a, b = world_records[0]["video"], world_records[1]["video"]
    forward, swapped = judge.compare(a, b), judge.compare(b, a)  # the second call really gets (B, A)
    assert forward.p_a + forward.p_tie + forward.p_b == pytest.approx(1.0, abs=1e-9)
    assert abs(forward.p_a - swapped.p_b) < 1e-6 and abs(forward.p_b - swapped.p_a) < 1e-6
    delta_a, delta_b = (r.delta for r in judge.score([a, b]))
    assert forward.p_a == pytest.approx(judge.preference.probabilities(delta_a, delta_b)[0], abs=1e-6)
    assert (forward.p_a > forward.p_b) == (delta_a > delta_b)
    failed = judge.compare(corrupt, b)
    assert failed.p_a is None and failed.error.startswith("A: ") and "corrupt.mp4" in failed.error
    vt = av_vt_judges["vt"]
    text = world_records[0]["captions"]["video"]
    assert vt.compare(a, b, text=text).p_a == pytest.approx(vt.compare(b, a, text=text).p_b, abs=1e-6)


def test_avjudge_compare_writes_each_pair_and_resumes(tiny_judges, world_records, tmp_path, capsys):
    a, b = world_records[0]["video"], world_records[2]["video"]
    pairs = [{"id": "ab", "a": a, "b": b}, {"id": "ba", "a": b, "b": a}, {"id": "gone", "a": "gone.mp4", "b": a}]
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
    argv = ["compare", "--judge", f"av={tiny_judges['qwen2_5_omni']}", "--input", str(tmp_path / "pairs.jsonl")]
    assert main([*argv, "--out", str(tmp_path / "prefs.jsonl"), "--no-progress"]) == 0
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "prefs.jsonl").read_text().splitlines())}
    assert rows["ab"]["p_a"] == pytest.approx(rows["ba"]["p_b"], abs=1e-6)
    assert sum(rows["ab"][k] for k in ("p_a", "p_tie", "p_b")) == pytest.approx(1.0, abs=1e-9)
    assert rows["gone"]["p_a"] is None and "gone.mp4: no such file" in rows["gone"]["error"]
    summary = json.loads(capsys.readouterr().out)
    assert summary["errors"] == 1 and summary["preference"] == {"temperature": 1.0, "tie": 1.0}
    assert main([*argv, "--out", str(tmp_path / "prefs.jsonl"), "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out)["resumed_from"] == 3  # nothing changed: nothing is scored again
    (tmp_path / "bad.jsonl").write_text('{"id": "x", "a": "a.mp4"}\n')
    assert main([*argv[:3], "--input", str(tmp_path / "bad.jsonl"), "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "bad.jsonl:1: a pair needs b" in capsys.readouterr().err


def test_reliability_bins_and_ece():
    scores = [0.05, 0.1, 0.92, 0.95, 0.5]
    labels = [0, 1, 1, 1, 0]
    figures = reliability(scores, labels, bins=10)
    # bins of 0.1: [0.05] (no match), [0.1] (a match), [0.5] (no match), [0.92, 0.95] (both match)
    expected = (abs(0.05 - 0) + abs(0.1 - 1) + abs(0.5 - 0) + 2 * abs(0.935 - 1)) / 5
    assert figures["ece"] == pytest.approx(expected) and [b["count"] for b in figures["bins"]] == [1, 1, 1, 2]


def informative_judge(tiny_dir, pairs, folder):
    """The tiny AV judge whose Yes and No rows of the output layer are set by least squares on the training split's
    last hidden states, so that its log-odds follow that split's labels: a judge with something to calibrate, made
    in one forward pass instead of a training run."""
    import torch

    from avjudge.data import PairDataset, built_sources, load_pairs
    from avjudge.perturb import SourcePool

    shutil.copytree(tiny_dir, folder)
    judge = Judge.load("av", folder, temperature=1.0, workers=1)
    records = load_pairs(pairs, "av", "train")
    clips = PairDataset(records, SourcePool(built_sources(pairs)), fps=judge.settings.fps, root=pairs)
    adapter, core = judge.adapter, judge.adapter.model
    batch = adapter.to_device(adapter.collate([judge.prepare(judge.sample(clips[k][1])) for k in range(len(records))]))
    with torch.no_grad():
        hidden = core.model(**adapter.forward_kwargs(batch), use_cache=False).last_hidden_state[:, -1].double()
        labels = torch.tensor([2.0 * r["label"] - 1 for r in records], dtype=torch.float64)
        direction = torch.linalg.lstsq(hidden, labels[:, None], driver="gelsd").solution[:, 0].float()
        for ids, sign in ((judge.head.yes_ids, 1.0), (judge.head.no_ids, -1.0)):
            core.lm_head.weight[list(ids)] = sign * direction
    core.save_pretrained(str(folder))
    return folder


def test_calibrate_refuses_to_write_a_fit_that_flattens_a_judge_at_chance(tiny_judges, pairs, tmp_path, capsys):
    folder = tmp_path / "judge"
    shutil.copytree(tiny_judges["qwen2_5_omni"], folder)  # random: its log-odds do not follow the labels
    argv = ["judges", "calibrate", "--judge", f"av={folder}", "--pairs", str(pairs), "--workers", "1"]
    assert main([*argv, "--out", str(tmp_path / "o")]) == 2
    assert "flatten every score to 0.5" in capsys.readouterr().err
    assert load_temperature(folder, "av") is None  # nothing written
    assert main([*argv, "--out", str(tmp_path / "o"), "--dry-run"]) == 0  # its figures are still reported
    assert json.loads((tmp_path / "o" / "calibration.json").read_text())["fit_split"] == "train"  # no val split


def test_calibrate_fits_on_one_split_writes_beside_the_judge_and_reports_on_another(tiny_judges, pairs, tmp_path):
    folder = informative_judge(tiny_judges["qwen2_5_omni"], pairs, tmp_path / "judge")
    out = tmp_path / "report"
    argv = ["judges", "calibrate", "--judge", f"av={folder}", "--pairs", str(pairs), "--split", "train"]
    assert main([*argv, "--report-split", "test", "--out", str(out), "--workers", "1"]) == 0
    result = json.loads((out / "calibration.json").read_text())
    assert (out / "reliability.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    fitted = result["fitted"]
    assert result["pairs"]["left_out"] == 0  # every pair of the small world is made and scored
    assert load_temperature(folder, "av") == fitted["temperature"]
    assert load_preference(folder, "av") == Preference(**fitted["preference"])
    assert Judge.load("av", folder).preference == Preference(**fitted["preference"])
    for side in ("before", "after"):
        figures = result["pointwise"][side]
        assert 0 <= figures["ece"] <= 1 and 0 <= figures["brier"] <= 1 and sum(b["count"] for b in figures["bins"])
    # the fitted temperature is the one that minimises the log loss on the fit split: no worse there than T = 1
    judge = Judge.load("av", folder, temperature=1.0, workers=1)
    fit, _ = scored_split(judge, pairs, "train")
    # the tie threshold comes from the fit split: reporting on another split leaves it as it was
    expected = tie_threshold(*preference_pairs(fit))
    assert result["pairwise"]["after"]["tie_threshold"] == expected
    again = tmp_path / "again"
    assert main([*argv, "--report-split", "train", "--out", str(again), "--dry-run"]) == 2  # fit == report: refused
    argv[-1] = "test"
    assert main([*argv, "--report-split", "train", "--out", str(again), "--dry-run", "--workers", "1"]) == 0
    swapped = json.loads((again / "calibration.json").read_text())
    assert swapped["pairwise"]["after"]["tie_threshold"] == tie_threshold(
        *preference_pairs(scored_split(judge, pairs, "test")[0])
    )
    assert load_preference(folder, "av") == Preference(**fitted["preference"])  # --dry-run wrote nothing
    # a bench report of a run with this judge shows its calibration (where the figures sit beside it, the default)
    from avjudge.bench.report import _calibration_sections

    assert _calibration_sections({"judges": {"av": str(folder)}}) == []
    for name in ("calibration.json", "reliability.png"):
        shutil.copy(out / name, folder / name)
    (section,) = _calibration_sections({"judges": {"av": str(folder)}})
    after = result["pointwise"]["after"]
    assert "reliability diagram of the av judge" in section and f"&rarr; {after['ece']:.3f}" in section


def test_preference_pairs_take_a_marked_tie_as_a_tie():
    records = [
        {"source_id": "s", "label": 1, "delta": 2.0},
        {"source_id": "s", "label": 0, "delta": -1.0, "tie": False},
        {"source_id": "s", "label": 0, "delta": 1.9, "tie": True},
        {"source_id": "t", "label": 0, "delta": 0.0},  # no positive of its source: no pair
    ]
    a, b, outcome = preference_pairs(records)
    assert a.tolist() == [2.0, 1.9] and b.tolist() == [-1.0, 2.0] and outcome.tolist() == [0, 1]


def test_calibrate_keeps_no_temperature_that_makes_the_held_out_pairs_worse(
    tiny_judges, pairs, tmp_path, monkeypatch, capsys
):
    """A fit split unlike the report split can give a temperature that calibrates the held-out pairs worse than none
    (the issue: ECE 0.001 -> 0.199, written without a word): then T = 1 is kept, and said."""
    import avjudge.train.calibrate as calibration

    folder = informative_judge(tiny_judges["qwen2_5_omni"], pairs, tmp_path / "judge")
    monkeypatch.setattr(calibration, "fit_temperature", lambda *a, **k: 1e-3)  # a fit that overshoots: S near 0 or 1
    argv = ["judges", "calibrate", "--judge", f"av={folder}", "--pairs", str(pairs), "--split", "train"]
    assert main([*argv, "--report-split", "test", "--out", str(tmp_path / "o"), "--workers", "1"]) == 0
    result = json.loads((tmp_path / "o" / "calibration.json").read_text())
    kept, pointwise = result["temperature_kept"], result["pointwise"]
    assert kept["kept"] == "identity" and kept["fitted"] == 1e-3
    assert kept["fitted_log_loss"] > pointwise["before"]["log_loss"] and pointwise["after"] == pointwise["before"]
    assert load_temperature(folder, "av") == 1.0 and result["fitted"]["temperature"] == 1.0
    assert "T = 1 kept" in capsys.readouterr().out


def test_the_reliability_diagram_shows_each_bins_count(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from avjudge.train.calibrate import pointwise_figures, reliability_diagram

    deltas, labels = [-3.0, -1.0, 0.1, 0.2, 2.5, 3.0, 3.5], [0, 0, 1, 0, 1, 1, 1]
    result = {"judge": "av", "report_split": "test", "pointwise": {
        "before": pointwise_figures(deltas, labels, 1.0), "after": pointwise_figures(deltas, labels, 2.0)}}  # fmt: skip
    axes = []
    subplots = plt.subplots
    monkeypatch.setattr(
        plt, "subplots", lambda *a, **k: (lambda f, ax: (axes.append(ax), (f, ax))[1])(*subplots(*a, **k))
    )
    assert reliability_diagram(result, tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"
    shown = sorted(int(t.get_text()) for t in axes[0].texts)
    expected = sorted(b["count"] for side in ("before", "after") for b in result["pointwise"][side]["bins"])
    assert shown == expected and sum(shown) == 2 * len(deltas)
