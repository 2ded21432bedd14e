"""LAION aesthetics with a tiny random CLIP and a random head: the head's layer order, normalisation and
1 fps sampling are checked against a computation written out here from the raw tensors."""

import numpy as np
import pytest

from avjudge.media import MediaClip
from avjudge.metrics import CheckpointMissing, MetricError, get_metric
from avjudge.metrics.checkpoints import pin
from avjudge.metrics.laion_aesthetic import build_head

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture
def laion_root(tmp_path):
    torch.manual_seed(0)
    root = tmp_path / "ckpt"
    clip_dir = root / "clip-vit-large-patch14"
    tiny = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2)
    config = transformers.CLIPConfig(
        text_config={**tiny, "vocab_size": 100},
        vision_config={**tiny, "image_size": 64, "patch_size": 16},
        projection_dim=768,
    )
    transformers.CLIPModel(config).save_pretrained(clip_dir)
    transformers.CLIPImageProcessor(size={"shortest_edge": 64}, crop_size={"height": 64, "width": 64}).save_pretrained(
        clip_dir
    )
    (root / "laion-aesthetic").mkdir()
    torch.save(build_head(768).state_dict(), root / "laion-aesthetic" / "sac+logos+ava1-l14-linearMSE.pth")
    return root


def by_hand(root, frames):
    """CLIP image embeddings, L2-normalised, through the five linear layers of the saved head."""
    clip = transformers.CLIPModel.from_pretrained(root / "clip-vit-large-patch14").eval()
    processor = transformers.CLIPImageProcessorPil.from_pretrained(root / "clip-vit-large-patch14")
    state = torch.load(root / "laion-aesthetic" / "sac+logos+ava1-l14-linearMSE.pth", weights_only=True)
    with torch.no_grad():
        x = clip.get_image_features(**processor(images=list(frames), return_tensors="pt")).pooler_output
        x = x / x.norm(dim=-1, keepdim=True)
        for k in (0, 2, 4, 6, 7):
            x = x @ state[f"layers.{k}.weight"].T + state[f"layers.{k}.bias"]
    return x[:, 0].numpy()


def test_laion_aesthetic_scores_frames_at_one_fps(laion_root):
    with pytest.raises(CheckpointMissing, match="pin clip_vit_l14"):
        get_metric("laion_aesthetic", root=laion_root)
    pin("clip_vit_l14", laion_root)
    pin("laion_aesthetic", laion_root)
    metric = get_metric("laion_aesthetic", root=laion_root)
    rng = np.random.default_rng(0)
    seconds = rng.integers(0, 255, (3, 48, 80, 3), dtype=np.uint8)  # one picture per second
    frames = np.repeat(seconds, 10, axis=0)  # 3 s at 10 fps
    clip = MediaClip(frames=frames, fps=10.0, timestamps=np.arange(30) / 10.0, duration=3.0)
    expected = by_hand(laion_root, seconds)
    assert len(set(np.round(expected, 6))) == 3  # the three pictures score differently
    scores = metric.compute(clip)
    assert scores["laion_aesthetic"] == pytest.approx(expected.mean(), abs=1e-5)
    assert scores["laion_aesthetic_min"] == pytest.approx(expected.min(), abs=1e-5)
    with pytest.raises(MetricError, match="no video"):
        metric.compute(MediaClip(audio=np.zeros((1, 100), np.float32), sample_rate=16000, duration=0.01))


def test_laion_aesthetic_refuses_a_head_of_another_shape(laion_root):
    torch.save(build_head(512).state_dict(), laion_root / "laion-aesthetic" / "sac+logos+ava1-l14-linearMSE.pth")
    pin("clip_vit_l14", laion_root)
    pin("laion_aesthetic", laion_root)
    with pytest.raises(MetricError, match="not an aesthetic head for 768-d"):
        get_metric("laion_aesthetic", root=laion_root)
