"""`metrics compare --protocol av-benchmark` against av-benchmark's own pipeline (hkchengrex/av-benchmark @ 050a5cdb)
run on the same files, every piece of it reproduced here or taken from its reference package:

- input, ``av_bench/data/audio_dataset.py`` ``AudioDataset.read_from_file``: the clip's sound as the FFmpeg command line
  writes it (av-benchmark reads audio files: a video's sound extracted by ``ffmpeg -i clip.mp4 -c:a pcm_f32le
  clip.wav``), the channels averaged, the mean removed, torchaudio's ``Resample`` to the extractor's rate (the same
  filter as `avjudge.metrics.sinc_resample`, which test_sinc_resample checks against torchaudio's own functions:
  torchaudio stays out of the install), the first 8 s; PaSST's input cut or padded to 320,000 samples
  (``av_bench/extract.py``), the clips in order of their names;
- networks: ``panns_inference``'s Cnn14, its logits ``fc_audioset`` of the embedding (``av_bench/panns/models.py``);
  torchvggish's front end and VGG without its last ReLU (``av_bench/vggish/vggish.py``); hear21passt's PaSST and
  front end (``get_basic_model(mode="all")``), narrow (one block of width 64: the real size costs minutes here, and
  test_passt checks it);
- statistics, ``av_bench/metrics/{fad,kl,isc}.py`` (`tests.helpers`), paired as ``av_bench/evaluate.py`` pairs them:
  PaSST's three over the clips paired by name, PANNs' FD and IS and VGGish's FD over every clip, KL by name.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from .helpers import (
    av_benchmark_fd,
    av_benchmark_isc,
    av_benchmark_kl,
    ffmpeg_audio,
    hear21passt_front_end,
    hear21passt_modules,
    panns_inference_cnn14,
    requires_ffmpeg,
)

torch = pytest.importorskip("torch")
pytest.importorskip("torchvggish")
pytestmark = [requires_ffmpeg, pytest.mark.slow]  # 100 s on 2 cores

PAIRED = 20  # 2 clips in each of the inception score's 10 splits
NARROW_PASST = {"width": 64, "depth": 1, "heads": 2}


@pytest.fixture(scope="module")
def world_sets(tmp_path_factory):
    """A generated set of 22 clips and a reference set of 21, 20 of them paired by name: one world's clips,
    the reference's shifted by one (pairs hold different clips), an unpaired extra on each side."""
    from avjudge.world import WorldConfig, make_world

    out = tmp_path_factory.mktemp("av_benchmark_parity")
    make_world(WorldConfig(n=PAIRED + 3, seed=5, duration=3.0, max_duration=3.0), out / "world", progress=False)
    clips = sorted((out / "world" / "clips").glob("*.mp4"))
    generated, reference = out / "generated", out / "reference"
    generated.mkdir()
    reference.mkdir()
    for k, clip in enumerate(clips[: PAIRED + 2]):
        shutil.copy(clip, generated / f"clip{k:02d}.mp4")
    for k, clip in enumerate(clips[1 : PAIRED + 1]):
        shutil.copy(clip, reference / f"clip{k:02d}.mp4")
    shutil.copy(clips[-1], reference / "extra.mp4")
    return generated, reference


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """The random checkpoints `avjudge checkpoints make-random` builds for PANNs and VGGish, and a narrow PaSST's."""
    from avjudge.metrics.checkpoints import pin
    from avjudge.metrics.passt import build_passt
    from avjudge.metrics.random_checkpoints import make_random_checkpoints, randomised

    root = tmp_path_factory.mktemp("checkpoints")
    make_random_checkpoints(root, only=["panns", "vggish"])
    (root / "passt").mkdir()
    torch.save(
        randomised(build_passt(**NARROW_PASST).state_dict()), root / "passt" / "passt-s-f128-p16-s10-ap.476-swa.pt"
    )
    pin("passt_s_swa", root)
    return root


def _state(path, key=None):
    state = torch.load(path, map_location="cpu", weights_only=True)
    return state[key] if key else state


def reference_networks(root):
    """av-benchmark's three extractors from their reference packages, with the checkpoints' weights: (B, N)
    waveforms -> named features, as ``av_bench/extract.py`` stores them."""
    from torchvggish import vggish_input
    from torchvggish.torchvggish import VGG, make_layers

    cnn14 = panns_inference_cnn14()
    cnn14.load_state_dict(_state(root / "panns" / "Cnn14_16k_mAP=0.438.pth", "model"))
    vgg = VGG(make_layers(), postprocess=False)
    vgg.load_state_dict(_state(root / "vggish" / "vggish-10086976.pth"))
    vgg.embeddings = vgg.embeddings[:-1]  # av-benchmark's VGGish leaves the last ReLU out
    with hear21passt_modules() as (passt, preprocess):
        network = passt.PaSST(img_size=(128, 998), stride=(10, 10), patch_size=16, embed_dim=NARROW_PASST["width"],
                              depth=NARROW_PASST["depth"], num_heads=NARROW_PASST["heads"], distilled=True)  # fmt: skip
        network.load_state_dict(_state(root / "passt" / "passt-s-f128-p16-s10-ap.476-swa.pt"))
        front_end = hear21passt_front_end(preprocess)
    for module in (cnn14, vgg, network):
        module.eval()

    def panns(wav):
        out = cnn14(wav)
        return {"2048": out["embedding"], "logits": cnn14.fc_audioset(out["embedding"])}

    def vggish(wav):
        examples = np.stack([vggish_input.waveform_to_examples(w.numpy(), 16000, return_tensor=False) for w in wav])
        return vgg(torch.from_numpy(examples).float().flatten(0, 1)[:, None]).view(len(wav), len(examples[0]), -1)

    def passt_all(wav):
        wav = wav[..., :320000] if wav.size(-1) >= 320000 else torch.nn.functional.pad(wav, (0, 320000 - wav.size(-1)))
        logits, embedding = network(front_end(wav)[:, None])
        return torch.cat([logits, embedding], dim=1)  # get_basic_model(mode="all")

    return panns, vggish, passt_all


def read_from_file(path, sample_rate: int, cut: int | None = None):
    """``AudioDataset.read_from_file`` on the clip's sound as FFmpeg's command line writes it (``cut``: only the
    first samples, as a decoder that stops at the declared duration gives)."""
    from avjudge.metrics.sinc_resample import sinc_resample

    audio, rate = ffmpeg_audio(path)
    waveform = audio[:, :cut].mean(axis=0)
    waveform = waveform - waveform.mean()
    if rate != sample_rate:
        waveform = sinc_resample(waveform, rate, sample_rate)
    return torch.from_numpy(np.ascontiguousarray(waveform[: int(sample_rate * 8.0)], np.float32))


def av_benchmark_evaluate(generated, reference, networks, cut: int | None = None) -> dict[str, float]:
    """``av_bench/extract.py`` on each folder, then ``av_bench/evaluate.py``'s audio metrics (paired)."""
    panns, vggish, passt_all = networks
    features = {}
    for side, folder in (("pred", generated), ("gt", reference)):
        paths = sorted(folder.glob("*.mp4"), key=lambda p: p.stem)
        with torch.inference_mode():
            wav16 = torch.stack([read_from_file(p, 16000, cut) for p in paths])
            wav32 = torch.stack([read_from_file(p, 32000, cut) for p in paths])
            pann, vgg, passt = panns(wav16), vggish(wav16), passt_all(wav32)
        features[side] = {
            "pann": {p.stem: {k: v[i] for k, v in pann.items()} for i, p in enumerate(paths)},
            "vggish": {p.stem: vgg[i] for i, p in enumerate(paths)},
            "passt_embed": {p.stem: passt[i, 527:] for i, p in enumerate(paths)},
            "passt_logits": {p.stem: passt[i, :527] for i, p in enumerate(paths)},
        }
    pred, gt = features["pred"], features["gt"]
    paired = [name for name in pred["pann"] if name in gt["pann"]]  # unroll_paired_dict(_with_key)

    def stack(d, names, key=None):
        return torch.stack([d[n][key] if key else d[n] for n in names]).numpy()

    def passt(kind, side):
        return stack(features[side][f"passt_{kind}"], paired)

    return {
        "FD-VGG": av_benchmark_fd(
            torch.cat(list(pred["vggish"].values())).numpy(), torch.cat(list(gt["vggish"].values())).numpy()
        ),  # fmt: skip
        "FD-PANN": av_benchmark_fd(stack(pred["pann"], pred["pann"], "2048"), stack(gt["pann"], gt["pann"], "2048")),
        "FD-PASST": av_benchmark_fd(passt("embed", "pred"), passt("embed", "gt")),
        "KL-PANNS-softmax": av_benchmark_kl(stack(pred["pann"], paired, "logits"), stack(gt["pann"], paired, "logits")),
        "KL-PASST-softmax": av_benchmark_kl(passt("logits", "pred"), passt("logits", "gt")),
        **dict(zip(("ISC-PANNS-mean", "ISC-PANNS-std"), av_benchmark_isc(stack(pred["pann"], pred["pann"], "logits")))),
        **dict(zip(("ISC-PASST-mean", "ISC-PASST-std"), av_benchmark_isc(passt("logits", "pred")))),
    }


def test_metrics_compare_equals_av_benchmarks_own_pipeline_on_the_same_files(
    world_sets, checkpoints, tmp_path, monkeypatch
):
    import avjudge.metrics.passt as passt
    from avjudge.metrics.sets import SET_METRICS
    from avjudge.scoring.set_compare import compare_sets

    generated, reference = world_sets
    full_size = passt.build_passt
    monkeypatch.setattr(passt, "build_passt", lambda: full_size(**NARROW_PASST))
    report = compare_sets(generated, reference, list(SET_METRICS), tmp_path / "report.json", cache=tmp_path / "c",
                          root=checkpoints, progress=False)  # fmt: skip
    assert report["protocol"] == "av-benchmark" and report["pairs"] == PAIRED
    assert report["unpaired"] == {"generated": ["clip20.mp4", "clip21.mp4"], "reference": ["extra.mp4"]}
    networks = reference_networks(checkpoints)
    expected = av_benchmark_evaluate(generated, reference, networks)
    assert set(report["av_benchmark"]) == set(expected)
    for key, value in expected.items():
        assert report["av_benchmark"][key] == pytest.approx(value, rel=1e-4), key
    # figures far from their trivial values, so the agreement says something
    assert expected["KL-PANNS-softmax"] > 0.1 and expected["ISC-PANNS-mean"] > 1.1 and expected["ISC-PASST-mean"] > 1
    # and the tolerance bites: the same pipeline reading the sound only to the declared 3 s moves FD-PANN past it
    cut = av_benchmark_evaluate(generated, reference, networks, cut=3 * 16000)
    assert abs(cut["FD-PANN"] / expected["FD-PANN"] - 1) > 1e-4
