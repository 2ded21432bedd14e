"""Audiobox aesthetics with random weights in Meta's model classes: window weighting, un-normalisation
and AVBench's aggregate, checked against a computation written out here."""

import json

import numpy as np
import pytest

from avjudge.media import MediaClip
from avjudge.metrics import MetricError, get_metric
from avjudge.metrics.audiobox import WINDOW, aggregate
from avjudge.metrics.checkpoints import pin

torch = pytest.importorskip("torch")
aes = pytest.importorskip("audiobox_aesthetics.model.aes", reason="pip install --no-deps audiobox-aesthetics==0.0.4")

STATS = {"CE": (5.5, 1.5), "CU": (6.0, 1.2), "PC": (4.0, 2.0), "PQ": (7.0, 1.0)}


def test_aggregate_counts_complexity_against():
    assert aggregate({"CE": 6.0, "CU": 7.0, "PC": 3.0, "PQ": 8.0}) == (6 + 7 + 8 - 3) / 4


@pytest.fixture(scope="module")
def audiobox_root(tmp_path_factory):
    from safetensors.torch import save_file

    torch.manual_seed(0)
    config = {
        "proj_num_layer": 1,
        "proj_ln": False,
        "proj_act_fn": "gelu",
        "proj_dropout": 0.0,
        "nth_layer": 13,
        "use_weighted_layer_sum": True,
        "precision": "32",
        "normalize_embed": True,
        "output_dim": 1,
        "target_transform": {a: {"mean": m, "std": s} for a, (m, s) in STATS.items()},
    }
    model = aes.AesMultiOutput(**config)
    root = tmp_path_factory.mktemp("ckpt")
    folder = root / "audiobox-aesthetics"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, folder / "model.safetensors")
    pin("audiobox_aesthetics", root)
    return root


def test_audiobox_weights_windows_by_their_audio(audiobox_root):
    metric = get_metric("audiobox", root=audiobox_root)
    rng = np.random.default_rng(0)
    audio = (0.1 * rng.standard_normal(WINDOW + 3 * 16000)).astype(np.float32)  # 13 s: a full and a 0.3 window
    scores = metric.compute(MediaClip(audio=audio[None], sample_rate=16000, duration=13.0))
    wav = torch.zeros(2, 1, WINDOW)
    mask = torch.zeros(2, 1, WINDOW, dtype=torch.bool)
    wav[0, 0], mask[0, 0] = torch.from_numpy(audio[:WINDOW]), True
    wav[1, 0, :48000], mask[1, 0, :48000] = torch.from_numpy(audio[WINDOW:]), True
    with torch.inference_mode():
        out = metric.model({"wav": wav, "mask": mask})
    for axis, (mean, std) in STATS.items():
        per_window = out[axis].numpy() * std + mean
        assert scores[f"audiobox_{axis.lower()}"] == pytest.approx(
            (per_window[0] + 0.3 * per_window[1]) / 1.3, abs=1e-4
        )
    assert scores["audiobox_aggregate"] == pytest.approx(aggregate({a: scores[f"audiobox_{a.lower()}"] for a in STATS}))
    with pytest.raises(MetricError, match="too short for audiobox"):
        metric.compute(MediaClip(audio=audio[None, :800], sample_rate=16000, duration=0.05))


def test_audiobox_refuses_a_checkpoint_of_another_shape(audiobox_root, tmp_path):
    root = tmp_path / "ckpt"
    (root / "audiobox-aesthetics").mkdir(parents=True)
    config = json.loads((audiobox_root / "audiobox-aesthetics" / "config.json").read_text())
    (root / "audiobox-aesthetics" / "config.json").write_text(json.dumps({**config, "proj_num_layer": 2}))
    (root / "audiobox-aesthetics" / "model.safetensors").symlink_to(
        audiobox_root / "audiobox-aesthetics" / "model.safetensors"
    )
    pin("audiobox_aesthetics", root)
    with pytest.raises(MetricError, match="not an Audiobox aesthetics checkpoint"):
        get_metric("audiobox", root=root)
