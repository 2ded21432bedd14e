import pickle

import numpy as np
import pytest
import torch
from torch import nn

from avjudge.judges import Judge, JudgeSample
from avjudge.judges.widths import MLP_LAYOUTS, align_mlp_widths

# (task, what its samples hold) per family; the tiny judges' MLPs are 64 and 128 wide, aligned to 8, so the tests
# align them to 48: 64 -> 96, 128 -> 144.
FAMILIES = {"qwen2_5_omni": "av", "qwen3_omni": "av", "qwen2_audio": "at"}


def _samples(task: str, n: int = 3) -> list[JudgeSample]:
    rng = np.random.default_rng(1)
    video = task == "av"
    return [
        JudgeSample(
            frames=rng.integers(0, 256, (3, 112, 140, 3), dtype=np.uint8) if video else None,
            fps=1.0 if video else None,
            audio=(0.1 * rng.standard_normal(32000)).astype(np.float32),
            text=None if video else "a bell rings twice",
        )
        for _ in range(n)
    ]


def _inner_widths(model: nn.Module) -> dict[str, int]:
    widths = {}
    for name, module in model.named_modules():
        layout = MLP_LAYOUTS.get(type(module).__name__)
        if layout is not None:
            narrow = getattr(module, layout.narrow)
            widen = [getattr(module, n) for n in layout.widen]
            assert all(layer.out_features == narrow.in_features for layer in widen), name
            assert all(layer.weight.shape[0] == narrow.weight.shape[1] for layer in widen), name
            widths[name] = narrow.in_features
    return widths


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_aligned_widths_score_as_the_released_shapes_do(tiny_judges, family):
    task = FAMILIES[family]
    released = Judge.load(task, tiny_judges[family], batch_size=2)
    aligned = Judge.load(task, tiny_judges[family], batch_size=2, align_widths=48)
    before, after = _inner_widths(released.adapter.model), _inner_widths(aligned.adapter.model)
    assert before.keys() == after.keys() and len(before) >= 4  # every encoder and language-model MLP found
    assert all(after[name] % 48 == 0 and after[name] > before[name] for name in before)
    samples = _samples(task)
    np.testing.assert_allclose(
        [r.score for r in aligned.score_samples(samples)],
        [r.score for r in released.score_samples(samples)],
        atol=1e-6,
    )


def test_the_setting_travels_with_a_judge_sent_elsewhere(tiny_judges):
    judge = Judge.load("at", tiny_judges["qwen2_audio"], align_widths=48, defer_weights=True)
    assert judge.adapter._model is None
    copy = pickle.loads(pickle.dumps(judge))  # as a Ray actor receives it: what loads it
    assert copy.settings.align_widths == 48
    assert all(width % 48 == 0 for width in _inner_widths(copy.adapter.model).values())


def test_aligning_leaves_wrapped_and_aligned_layers_and_refuses_nonsense():
    class Qwen2MLP(nn.Module):  # the layout's class name, around layers that are not all plain Linear
        def __init__(self, down: nn.Module):
            super().__init__()
            self.gate_proj, self.up_proj, self.down_proj = nn.Linear(4, 6), nn.Linear(4, 6), down

    wrapped = Qwen2MLP(nn.Sequential(nn.Linear(6, 4)))
    aligned = Qwen2MLP(nn.Linear(8, 4))
    aligned.gate_proj, aligned.up_proj = nn.Linear(4, 8), nn.Linear(4, 8)
    model = nn.ModuleList([wrapped, aligned])
    assert align_mlp_widths(model, 8) == 0
    assert wrapped.gate_proj.out_features == 6 and aligned.down_proj.in_features == 8
    with pytest.raises(ValueError, match="positive multiple"):
        align_mlp_widths(model, 0)


def test_padded_units_are_zero_whatever_the_activation():
    torch.manual_seed(0)

    class Qwen3OmniMoeVisionMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear_fc1, self.linear_fc2 = nn.Linear(5, 7), nn.Linear(7, 5)

        def forward(self, x):  # act(0) = 1 here: the narrowing layer's zero columns must still ignore it
            return self.linear_fc2(torch.cos(self.linear_fc1(x)))

    mlp = Qwen3OmniMoeVisionMLP()
    x = torch.randn(3, 5)
    expected = mlp(x)
    assert align_mlp_widths(mlp, 4) == 1
    assert mlp.linear_fc1.weight.shape == (8, 5) and mlp.linear_fc2.weight.shape == (5, 8)
    torch.testing.assert_close(mlp(x), expected)


def test_avjudge_score_aligns_widths_when_asked_with_the_same_scores(tiny_judges, small_world, tmp_path, monkeypatch):
    from avjudge.cli import main
    from avjudge.judges import adapters
    from avjudge.runtime import read_records
    from avjudge.world import MANIFEST

    padded = []
    monkeypatch.setattr(
        adapters, "align_mlp_widths", lambda model, multiple: padded.append(align_mlp_widths(model, multiple))
    )
    scores = {}
    for flags in ([], ["--align-widths", "48"]):
        out = tmp_path / f"at{len(flags)}.jsonl"
        judge = ["--judge", f"at={tiny_judges['qwen2_audio']}"]
        assert main(["score", *judge, "--input", str(small_world / MANIFEST), "--out", str(out), *flags]) == 0
        scores[len(flags)] = {r["id"]: r["score"] for r in read_records(out)}
    assert padded and padded[0] >= 2  # the flag reached the judge's model: its encoder's and language model's MLPs
    assert scores[0].keys() == scores[2].keys() and len(scores[0]) >= 6
    np.testing.assert_allclose([scores[2][k] for k in scores[0]], list(scores[0].values()), atol=1e-6)
