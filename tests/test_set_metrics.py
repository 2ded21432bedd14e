"""Set metrics (FD, KL, IS) against independent computations, and `avjudge metrics compare` end to end with a
random-weight PANNs Cnn14 on the world's clips."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from avjudge.metrics.base import MetricError
from avjudge.metrics.distributions import frechet_distance, inception_score, paired_kl

from .helpers import av_benchmark_fd, av_benchmark_isc, av_benchmark_kl

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(("clips", "dims"), [(12, 256), (300, 32)])  # fewer clips than dimensions, and more
def test_fd_is_zero_for_a_set_against_itself_symmetric_and_scipys_where_that_is_defined(clips, dims):
    rng = np.random.default_rng(0)
    g = rng.normal(size=(clips, dims))
    r = 1.3 * rng.normal(size=(clips + 7, dims)) + 0.2
    assert abs(frechet_distance(g, g)) < 1e-6 and abs(frechet_distance(g, g[::-1].copy())) < 1e-6
    assert frechet_distance(g, r) == pytest.approx(frechet_distance(r, g), rel=1e-9)
    if clips > dims:  # full-rank covariances: scipy's matrix root is exact
        assert frechet_distance(g, r) == pytest.approx(av_benchmark_fd(g, r), rel=1e-8)
    shifted = g + 0.5  # a shift of the mean alone adds its squared length
    assert frechet_distance(g, shifted) == pytest.approx(0.25 * dims, rel=1e-6)
    with pytest.raises(MetricError, match="at least 2"):
        frechet_distance(g[:1], r)


def test_kl_and_is_equal_av_benchmarks_torch_formulas():
    rng = np.random.default_rng(1)
    generated, reference = rng.normal(size=(40, 527)) * 3, rng.normal(size=(40, 527)) * 3
    assert paired_kl(generated, reference) == pytest.approx(av_benchmark_kl(generated, reference), rel=1e-9)
    assert abs(paired_kl(generated, generated)) < 1e-9
    assert inception_score(generated) == pytest.approx(av_benchmark_isc(generated), rel=1e-9)
    uniform = np.zeros((20, 527))  # every clip the same distribution: IS 1
    assert inception_score(uniform)[0] == pytest.approx(1.0)


@pytest.fixture
def extractors_root(tmp_path):
    """A checkpoint folder with a random Cnn14 (saved as PANNs releases it) and a random VGGish, pinned."""
    from avjudge.metrics.checkpoints import pin
    from avjudge.metrics.panns import build_cnn14
    from avjudge.metrics.vggish import build_vggish

    root = tmp_path / "checkpoints"
    (root / "panns").mkdir(parents=True)
    (root / "vggish").mkdir()
    torch.manual_seed(0)
    torch.save({"model": build_cnn14().state_dict()}, root / "panns" / "Cnn14_16k_mAP=0.438.pth")
    torch.save(build_vggish().state_dict(), root / "vggish" / "vggish-10086976.pth")
    pin("panns_cnn14_16k", root)
    pin("vggish", root)
    return root


def _clip_folder(folder, sources, names):
    folder.mkdir()
    for source, name in zip(sources, names):
        shutil.copy(source, folder / name)
    return folder


def test_compare_a_set_with_itself_then_another_counting_a_corrupt_clip_and_reusing_the_cache(
    extractors_root, world_records, tmp_path, monkeypatch
):
    from avjudge.metrics import panns
    from avjudge.scoring.set_compare import compare_sets

    videos = [r["video"] for r in world_records]
    names = [f"clip{k:02d}.mp4" for k in range(12)]
    generated = _clip_folder(tmp_path / "generated", [videos[k % 3] for k in range(12)], names)
    reference = _clip_folder(tmp_path / "reference", [videos[(k + 1) % 3] for k in range(12)], names)
    cache, metrics = tmp_path / "cache", ["fd_panns", "kl_panns", "is_panns", "fd_vggish"]

    itself = compare_sets(generated, generated, metrics, tmp_path / "self.json", cache, extractors_root, progress=False)
    assert abs(itself["metrics"]["fd_panns"]) < 1e-6 and abs(itself["metrics"]["kl_panns"]) < 1e-6
    assert abs(itself["metrics"]["fd_vggish"]) < 1e-6
    assert itself["av_benchmark"]["FD-PANN"] == itself["metrics"]["fd_panns"] and itself["pairs"] == 12
    assert json.loads((tmp_path / "self.json").read_text())["metrics"] == itself["metrics"]

    (generated / "clip11.mp4").write_bytes(b"not a video")  # one generated clip is corrupt
    (reference / "extra.wav").write_bytes(b"RIFF")  # and the reference has one that pairs with nothing
    extracted = []
    features = panns.PannsFeatures.features
    monkeypatch.setattr(panns.PannsFeatures, "features", lambda self, w: extracted.append(len(w)) or features(self, w))
    report = compare_sets(
        generated, reference, metrics, tmp_path / "report.json", cache, extractors_root, progress=False
    )
    assert extracted == []  # every readable clip's features came from the cache (the same files, by content)
    assert list(report["generated"]["failed"]) == ["clip11.mp4"] and "extra.wav" in report["reference"]["failed"]
    assert set(report["generated"]["failed"]["clip11.mp4"]) == {"panns", "vggish"}  # why, for each extractor
    assert report["generated"]["clips"] == 12 and report["pairs"] == 11
    assert report["unpaired"] == {"generated": [], "reference": ["extra.wav"]}
    assert report["metrics"]["fd_panns"] > 0 and report["metrics"]["kl_panns"] > 0
    assert set(report["av_benchmark"]) == {"FD-PANN", "KL-PANNS-softmax", "ISC-PANNS-mean", "ISC-PANNS-std", "FD-VGG"}

    # the figures from the features themselves: FD over every readable clip, KL over the pairs, IS of the generated
    from avjudge.metrics.feature_cache import FeatureCache
    from avjudge.metrics.sets import EXTRACTORS

    spec = EXTRACTORS.lookup("panns")
    store = FeatureCache(cache, "panns", spec.version, extractors_root / "panns" / "Cnn14_16k_mAP=0.438.pth")
    g = [store.get(store.key(generated / n)) for n in names[:11]]
    r = [store.get(store.key(reference / n)) for n in names]
    fd = frechet_distance(np.stack([f["embedding"] for f in g]), np.stack([f["embedding"] for f in r]))
    kl = paired_kl(np.stack([f["logits"] for f in g]), np.stack([f["logits"] for f in r[:11]]))
    assert report["metrics"]["fd_panns"] == pytest.approx(fd, rel=1e-9)
    assert report["metrics"]["kl_panns"] == pytest.approx(kl, rel=1e-9)
    assert report["metrics"]["is_panns"] == pytest.approx(inception_score(np.stack([f["logits"] for f in g]))[0])
    vgg = FeatureCache(
        cache, "vggish", EXTRACTORS.lookup("vggish").version, extractors_root / "vggish" / "vggish-10086976.pth"
    )
    frames = [np.concatenate([vgg.get(vgg.key(folder / n))["frames"] for n in used]) for folder, used in
              ((generated, names[:11]), (reference, names))]  # fmt: skip
    assert report["metrics"]["fd_vggish"] == pytest.approx(frechet_distance(*frames), rel=1e-9)


def test_the_cli_compares_and_names_what_it_could_not_compute(extractors_root, world_records, tmp_path, capsys):
    from avjudge.cli import main

    videos = [r["video"] for r in world_records]
    generated = _clip_folder(tmp_path / "generated", videos, ["a.mp4", "b.mp4", "c.mp4"])
    reference = _clip_folder(tmp_path / "reference", videos[::-1], ["a.mp4", "b.mp4", "c.mp4"])
    args = ["metrics", "compare", "--metrics", "fd_panns,is_panns", "--input", str(generated), "--reference",
            str(reference), "--out", str(tmp_path / "r.json"), "--root", str(extractors_root), "--cache",
            str(tmp_path / "cache"), "--no-progress", "--device", "cpu"]  # fmt: skip
    assert main(args) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert "fd_panns" in report["metrics"] and "at least 10 clips" in report["errors"]["is_panns"]
    assert "is_panns" in capsys.readouterr().out
    assert main([*args[:3], "fd_nope", *args[4:]]) == 2
    assert "unknown set metric 'fd_nope'" in capsys.readouterr().err


def test_a_saturated_softmax_gives_a_finite_inception_score():
    logits = np.zeros((40, 5))
    logits[np.arange(40), np.arange(40) % 5] = 2000.0  # each row certain of one class: the others' p underflows to 0
    nearly = np.where(logits > 0, 60.0, 0.0)  # the same certainty, the others' p about 1e-26
    saturated = inception_score(logits)
    assert np.isfinite(saturated).all() and saturated == pytest.approx(inception_score(nearly), abs=1e-9)
