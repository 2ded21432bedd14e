"""LAION-CLAP: avjudge's encoder (transformers' ClapModel on LAION-CLAP's converted state dict, torchlibrosa's
log-mel) against the ``laion_clap`` package's own model and audio preparation (1.1.7, installed by make install
without its dependencies) on the same random weights; and the ``clap`` metric through metrics run and serve."""

from __future__ import annotations

import importlib.util
import json
import sys
import types

import numpy as np
import pytest

from avjudge.media import decode
from avjudge.metrics import MetricError, get_metric
from avjudge.metrics.checkpoints import pin
from avjudge.metrics.clap import CLIP_SAMPLES, SAMPLE_RATE, ClapEncoder, repeat_pad
from avjudge.metrics.reference_audio import reference_waveform

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

ROBERTA_BASE = {"vocab_size": 50265, "max_position_embeddings": 514, "type_vocab_size": 1, "layer_norm_eps": 1e-5,
                "pad_token_id": 1}  # fmt: skip
# LAION-CLAP's text projection takes RoBERTa's 768 channels: only depth, vocabulary and MLP shrink
TINY_ROBERTA = {**ROBERTA_BASE, "vocab_size": 300, "num_hidden_layers": 1, "intermediate_size": 256}


@pytest.fixture(scope="module")
def laion_clap():
    """``laion_clap``'s ``CLAP`` model and ``get_audio_features``, imported without the package's ``__init__`` and
    with the modules its dataset code imports but these never run (torchvision's frozen batch norm, h5py,
    webdataset, braceexpand, wget, CLIP's tokenizer) left empty; its three tokenizers, which it downloads at
    import, are not loaded. ``make_model(audio, roberta)`` builds the model of an HTSAT config of the package's
    with a RoBERTa of that config (it would download roberta-base)."""
    spec = importlib.util.find_spec("laion_clap")
    if spec is None:
        pytest.skip("laion_clap is not installed (make install adds it)")
    root = spec.submodule_search_locations[0]
    with pytest.MonkeyPatch.context() as mp:
        for name in ("torchvision", "torchvision.ops", "torchvision.ops.misc", "torchvision.datasets",
                     "torchvision.transforms", "h5py", "webdataset", "braceexpand", "wget"):  # fmt: skip
            mp.setitem(sys.modules, name, types.ModuleType(name))
        sys.modules["torchvision.ops.misc"].FrozenBatchNorm2d = type("FrozenBatchNorm2d", (torch.nn.Module,), {})
        for name, path in (("laion_clap", root), ("laion_clap.training", f"{root}/training"),
                           ("clap_module", f"{root}/clap_module")):  # fmt: skip
            package = types.ModuleType(name)
            package.__path__ = [path]
            mp.setitem(sys.modules, name, package)
        sys.modules["clap_module"].tokenize = None
        for cls in (transformers.BertTokenizer, transformers.RobertaTokenizer, transformers.BartTokenizer):
            mp.setattr(cls, "from_pretrained", classmethod(lambda c, name: None))
        import clap_module.model as model_module
        from laion_clap.training.data import get_audio_features

        def make_model(audio: str, roberta: dict):
            config = json.loads(open(f"{root}/clap_module/model_configs/{audio}.json").read())
            config["text_cfg"]["model_type"] = "roberta"
            with pytest.MonkeyPatch.context() as inner:
                inner.setattr(
                    model_module,
                    "RobertaModel",
                    types.SimpleNamespace(
                        from_pretrained=lambda name: transformers.RobertaModel(transformers.RobertaConfig(**roberta))
                    ),
                )
                return model_module.CLAP(**config, enable_fusion=False, fusion_type="None").eval(), config

        yield make_model, get_audio_features


def _randomised(state: dict) -> dict:
    """Random weights and batch-norm statistics (the fixed spectrogram and mel weights stay)."""
    generator = torch.Generator().manual_seed(0)
    out = {}
    for name, value in state.items():
        if "extractor" in name or not value.is_floating_point() or name.endswith(("_index", "attn_mask")):
            out[name] = value
        elif name.endswith("running_var"):
            out[name] = 0.5 + torch.rand(value.shape, generator=generator)
        elif value.dim() == 1 and "norm" in name.lower() and name.endswith("weight"):
            out[name] = 1 + 0.05 * torch.randn(value.shape, generator=generator)
        else:
            out[name] = 0.05 * torch.randn(value.shape, generator=generator)
    return out


@pytest.fixture
def byte_tokenizer(tmp_path):
    """A RoBERTa byte-level BPE tokenizer with every byte and no merges (roberta-base's files cannot be had)."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    vocab = {token: i for i, token in enumerate(specials + sorted(set(bytes_to_unicode().values())))}
    (tmp_path / "vocab.json").write_text(json.dumps(vocab))
    (tmp_path / "merges.txt").write_text("#version: 0.2\n")
    return tmp_path


def test_embeddings_equal_laion_claps_own_model_on_the_same_weights(laion_clap, byte_tokenizer, small_world):
    make_model, get_audio_features = laion_clap
    reference, config = make_model("HTSAT-base", ROBERTA_BASE)
    state = _randomised(reference.state_dict())
    reference.load_state_dict(state)
    release = {"state_dict": {f"module.{k}": v for k, v in state.items()}, "epoch": 15}  # as the release is saved
    tokenizer = transformers.RobertaTokenizer(str(byte_tokenizer / "vocab.json"), str(byte_tokenizer / "merges.txt"))
    ours = ClapEncoder(release, tokenizer)

    clips = sorted((small_world / "clips").iterdir())[:2]
    waveforms = [
        reference_waveform(decode(c, video=False, sample_rate=SAMPLE_RATE, channels=1), SAMPLE_RATE) for c in clips
    ]
    with torch.inference_mode():
        inputs = [
            get_audio_features({}, torch.from_numpy(w), CLIP_SAMPLES, "rand_trunc", "repeatpad", config["audio_cfg"])
            for w in waveforms
        ]
        expected = reference.get_audio_embedding(inputs)
        np.testing.assert_allclose(ours.audio(waveforms).numpy(), expected.numpy(), atol=1e-5)
        assert expected.shape == (2, 512) and float((expected[0] - expected[1]).abs().max()) > 1e-3
        np.testing.assert_allclose(inputs[0]["waveform"].numpy(), repeat_pad(waveforms[0]), atol=0)

        texts = ["a dog barks twice", "rain on a tin roof while a kettle whistles"]
        tokens = tokenizer(texts, padding="max_length", truncation=True, max_length=77, return_tensors="pt")
        expected = reference.get_text_embedding(dict(tokens))
        np.testing.assert_allclose(ours.text(texts).numpy(), expected.numpy(), atol=1e-5)
        assert float((expected[0] - expected[1]).abs().max()) > 1e-3


def test_repeat_pad_repeats_whole_copies_then_pads_with_zeros():
    audio = np.arange(1, 4, dtype=np.float32)
    np.testing.assert_array_equal(repeat_pad(audio, 8), [1, 2, 3, 1, 2, 3, 0, 0])
    np.testing.assert_array_equal(repeat_pad(np.arange(10, dtype=np.float32), 8), np.arange(8))


@pytest.fixture
def tiny_clap(tmp_path, monkeypatch, laion_clap, byte_tokenizer):
    make_model, _ = laion_clap
    torch.manual_seed(0)
    model, _ = make_model("HTSAT-tiny", TINY_ROBERTA)
    root = tmp_path / "ckpt"
    (root / "laion_clap").mkdir(parents=True)
    torch.save(
        {"state_dict": _randomised(model.state_dict())},
        root / "laion_clap" / "music_speech_audioset_epoch_15_esc_89.98.pt",
    )
    (root / "roberta-base").mkdir()
    for name in ("vocab.json", "merges.txt"):
        (root / "roberta-base" / name).write_bytes((byte_tokenizer / name).read_bytes())
    pin("laion_clap_music_speech", root)
    pin("roberta_base_tokenizer", root)
    monkeypatch.setenv("AVJUDGE_CHECKPOINTS", str(root))
    return root


def test_clap_metric_scores_a_clip_against_its_caption_through_metrics_run_and_serve(
    tiny_clap, world_records, tmp_path
):
    from avjudge.bench import parse_dimensions
    from avjudge.bench.scoring import ClipScorer
    from avjudge.filter import parse_rules, run_filter
    from avjudge.jsonl import read_jsonl
    from avjudge.runtime.clip_jobs import run_metrics
    from avjudge.serve.service import ScoreService

    records = world_records
    manifest = tmp_path / "three.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in records[:2]))
    run_metrics(["clap"], manifest, tmp_path / "clap.jsonl", progress=False)
    rows = {r["id"]: r for r in read_jsonl(tmp_path / "clap.jsonl")}
    metric = get_metric("clap", device="cpu")
    for record in records[:2]:
        clip = decode(record["video"], video=False, sample_rate=SAMPLE_RATE, channels=1)
        encoder = metric.encoder
        expected = float(
            (encoder.audio([reference_waveform(clip, SAMPLE_RATE)]) * encoder.text([record["captions"]["audio"]])).sum()
        )
        assert rows[record["id"]]["clap_laion"] == pytest.approx(expected, abs=1e-5)
        assert -1 <= expected <= 1
    a, b = (rows[r["id"]]["clap_laion"] for r in records[:2])
    assert a != b

    scorer = ClipScorer(parse_dimensions("clap"), {})
    run_filter(manifest, parse_rules("clap>=-1"), tmp_path / "filter", scorer, progress=False)
    kept = {r["id"]: r["scores"]["clap"] for r in read_jsonl(tmp_path / "filter" / "kept.jsonl")}
    assert kept == pytest.approx({r["id"]: rows[r["id"]]["clap_laion"] for r in records[:2]}, abs=1e-5)

    service = ScoreService({}, {"clap": metric})
    results = service.score_records(
        [
            {"id": "captioned", "judge": "clap", "video": records[0]["video"], "text": records[0]["captions"]["audio"]},
            {"id": "silent", "judge": "clap", "video": records[0]["video"]},
        ]
    )
    assert results[0]["score"] == pytest.approx(rows[records[0]["id"]]["clap_laion"], abs=1e-5)
    assert results[1]["score"] is None and "no caption" in results[1]["error"]
    with pytest.raises(MetricError, match="no caption"):
        metric.compute(decode(records[0]["video"], video=False, sample_rate=SAMPLE_RATE))
