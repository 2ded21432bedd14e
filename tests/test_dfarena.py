"""DF-Arena speech realism with a tiny random wav2vec2 classifier: window placement, tiling of short
audio, the bona fide column, and the whole-folder pin that guards the model's code."""

import numpy as np
import pytest

from avjudge.media import MediaClip
from avjudge.metrics import CheckpointMissing, MetricError, get_metric
from avjudge.metrics.checkpoints import pin
from avjudge.metrics.dfarena import HOP, WINDOW, windows

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def test_windows_cover_the_audio_and_tile_short_audio():
    audio = np.arange(WINDOW + 3 * HOP + 100, dtype=np.float32)
    chunks = windows(audio)
    assert [int(c[0]) for c in chunks] == [0, HOP, 2 * HOP, 3 * HOP, 3 * HOP + 100]  # the last ends at the end
    assert int(chunks[-1][-1]) == len(audio) - 1 and chunks.shape[1] == WINDOW
    short = windows(np.array([1.0, 2.0, 3.0], np.float32))
    assert short.shape == (1, WINDOW) and short[0, :6].tolist() == [1, 2, 3, 1, 2, 3]
    assert windows(np.ones(WINDOW, np.float32)).shape == (1, WINDOW)


@pytest.fixture
def dfarena_root(tmp_path):
    torch.manual_seed(0)
    config = transformers.Wav2Vec2Config(
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        conv_dim=(16, 16),
        conv_kernel=(10, 3),
        conv_stride=(5, 2),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
        classifier_proj_size=8,
        id2label={0: "spoof", 1: "bonafide"},
        label2id={"spoof": 0, "bonafide": 1},
    )
    transformers.Wav2Vec2ForSequenceClassification(config).save_pretrained(tmp_path / "ckpt" / "dfarena")
    return tmp_path / "ckpt"


def test_dfarena_scores_windows_with_the_bonafide_column(dfarena_root):
    with pytest.raises(CheckpointMissing, match="pin dfarena"):
        get_metric("dfarena", root=dfarena_root)
    assert "model.safetensors" in pin("dfarena", dfarena_root)  # the whole folder, not just config.json
    metric = get_metric("dfarena", root=dfarena_root)
    rng = np.random.default_rng(0)
    audio = (0.1 * rng.standard_normal(WINDOW + HOP + 500)).astype(np.float32)
    scores = metric.compute(MediaClip(audio=audio[None], sample_rate=16000, duration=len(audio) / 16000))
    model = transformers.Wav2Vec2ForSequenceClassification.from_pretrained(dfarena_root / "dfarena").eval()
    with torch.no_grad():  # the three windows (0, HOP, end), by hand
        chunks = [audio[:WINDOW], audio[HOP : HOP + WINDOW], audio[-WINDOW:]]
        expected = torch.softmax(model(torch.from_numpy(np.stack(chunks))).logits, -1)[:, 1].numpy()
    assert scores["dfarena_windows"] == 3
    assert scores["dfarena_bonafide_mean"] == pytest.approx(expected.mean(), abs=1e-5)
    assert scores["dfarena_bonafide_min"] == pytest.approx(expected.min(), abs=1e-5)


def test_dfarena_refuses_unpinned_code_and_unnamed_classes(dfarena_root):
    pin("dfarena", dfarena_root)
    (dfarena_root / "dfarena" / "modeling_extra.py").write_text("import os\n")
    with pytest.raises(CheckpointMissing, match=r"not there when it was pinned: \['modeling_extra.py'\]"):
        get_metric("dfarena", root=dfarena_root)
    (dfarena_root / "dfarena" / "modeling_extra.py").unlink()
    config = transformers.AutoConfig.from_pretrained(dfarena_root / "dfarena")
    config.id2label, config.label2id = {0: "LABEL_0", 1: "LABEL_1"}, {"LABEL_0": 0, "LABEL_1": 1}
    config.save_pretrained(dfarena_root / "dfarena")
    pin("dfarena", dfarena_root)
    with pytest.raises(MetricError, match="name no bona fide class"):
        get_metric("dfarena", root=dfarena_root)
