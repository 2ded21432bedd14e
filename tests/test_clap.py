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

from .helpers import swap_two

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
        # the test bites: two of the audio tower's tensors swapped, its embeddings leave the reference's
        audio_tower = {k: v for k, v in state.items() if k.startswith("audio_branch.")}
        mutated, names = swap_two(audio_tower, skip=("extractor", "attn_mask", "_index"))
        swapped = ClapEncoder({"state_dict": {f"module.{k}": v for k, v in {**state, **mutated}.items()}}, tokenizer)
        moved = swapped.audio(waveforms) - reference.get_audio_embedding(inputs)
        assert float(moved.abs().max()) > 1e-3, names


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
    weights = {"state_dict": _randomised(model.state_dict())}
    install_release(root, ("laion_clap_music_speech", "music_speech_audioset_epoch_15_esc_89.98.pt", weights),
                    ("roberta_base_tokenizer", byte_tokenizer))  # fmt: skip
    monkeypatch.setenv("AVJUDGE_CHECKPOINTS", str(root))
    return root


def install_release(root, weights: tuple, tokenizer: tuple) -> None:
    """A CLAP release under ``root`` as the manifest names it, pinned: ``weights`` (entry, file name, state) and
    ``tokenizer`` (entry, a folder with vocab.json and merges.txt)."""
    from avjudge.metrics.checkpoints import load_manifest

    manifest = load_manifest()
    (key, name, state), (tokenizer_key, files) = weights, tokenizer
    (root / manifest[key].folder).mkdir(parents=True)
    torch.save(state, root / manifest[key].folder / name)
    (root / manifest[tokenizer_key].folder).mkdir()
    for file in ("vocab.json", "merges.txt"):
        (root / manifest[tokenizer_key].folder / file).write_bytes((files / file).read_bytes())
    pin(key, root)
    pin(tokenizer_key, root)


def test_clap_metric_scores_a_clip_against_its_caption_through_metrics_run_and_serve(
    tiny_clap, world_records, tmp_path
):
    from avjudge.filter import parse_rules, run_filter
    from avjudge.jsonl import read_jsonl
    from avjudge.scoring.clip_scorer import ClipScorer
    from avjudge.scoring.dimensions import parse_dimensions
    from avjudge.scoring.jobs import run_metrics
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


GPT2_SMALL = {"n_layer": 2}  # GPT-2's width (MS-CLAP's projection takes 768 channels), two of its twelve layers


@pytest.fixture(scope="module")
def ms_clap():
    """``msclap``'s ``CLAPWrapper`` around its own ``CLAP`` model (1.3.4, installed by make install without its
    dependencies: it pins transformers < 5 and numpy < 2), built from its ``config_2023.yml`` with a GPT-2 of the
    given config (it would download gpt2); torchaudio, which only its file reading uses, is replaced by a loader of
    the arrays the test gives (``wrapper.sounds``: path -> (waveform, rate))."""
    spec = importlib.util.find_spec("msclap")
    if spec is None:
        pytest.skip("msclap is not installed (make install adds it)")
    import yaml

    root = spec.submodule_search_locations[0]
    with pytest.MonkeyPatch.context() as mp:
        sounds = {}
        torchaudio = types.ModuleType("torchaudio")
        torchaudio.load = lambda path: (torch.from_numpy(sounds[path][0])[None], sounds[path][1])
        torchaudio.transforms = types.ModuleType("torchaudio.transforms")
        mp.setitem(sys.modules, "torchaudio", torchaudio)
        mp.setitem(sys.modules, "torchaudio.transforms", torchaudio.transforms)
        package = types.ModuleType("msclap")
        package.__path__ = [root]
        mp.setitem(sys.modules, "msclap", package)
        import msclap.models.clap as clap_module
        from msclap.CLAPWrapper import CLAPWrapper

        def make(gpt2: dict, tokenizer):
            args = yaml.safe_load(open(f"{root}/configs/config_2023.yml"))
            gpt = transformers.GPT2Model(transformers.GPT2Config(**gpt2))
            with pytest.MonkeyPatch.context() as inner:
                inner.setattr(clap_module, "AutoModel", types.SimpleNamespace(from_pretrained=lambda name: gpt))
                model = clap_module.CLAP(
                    audioenc_name=args["audioenc_name"], sample_rate=args["sampling_rate"],
                    window_size=args["window_size"], hop_size=args["hop_size"], mel_bins=args["mel_bins"],
                    fmin=args["fmin"], fmax=args["fmax"], classes_num=args["num_classes"], out_emb=args["out_emb"],
                    text_model=args["text_model"], transformer_embed_dim=args["transformer_embed_dim"],
                    d_proj=args["d_proj"],
                ).eval()  # fmt: skip
            wrapper = CLAPWrapper.__new__(CLAPWrapper)
            # transformers 5 dropped ``encode_plus``, which msclap calls; in 4.x it is the tokenizer called on one text
            shim = types.SimpleNamespace(encode_plus=lambda text, **options: tokenizer(text, **options))
            wrapper.clap, wrapper.tokenizer, wrapper.use_cuda = model, shim, False
            wrapper.args = types.SimpleNamespace(**args)
            wrapper.token_keys = ["input_ids", "attention_mask"]
            wrapper.sounds = sounds
            return wrapper

        yield make


@pytest.fixture
def gpt2_tokenizer(tmp_path):
    """GPT-2's byte-level BPE with every byte and no merges; its byte order puts ``!`` at id 0, as in GPT-2's own
    vocabulary (MS-CLAP finds a text's end by it)."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    vocab = {ch: i for i, ch in enumerate(bytes_to_unicode().values())}
    vocab["<|endoftext|>"] = len(vocab)
    folder = tmp_path / "gpt2"
    folder.mkdir()
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    return folder


def gpt2_of(folder):
    """MS-CLAP's tokenizer: GPT-2's, padded with ``!``."""
    return transformers.GPT2Tokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"), pad_token="!")


def test_ms_clap_embeddings_equal_msclaps_own_model_on_the_same_weights(ms_clap, gpt2_tokenizer, world_records):
    from avjudge.metrics.clap import MS_SAMPLE_RATE, MsClapEncoder, repeat_cut

    tokenizer = gpt2_of(gpt2_tokenizer)
    assert tokenizer.pad_token_id == 0
    wrapper = ms_clap(GPT2_SMALL, tokenizer)
    state = _randomised(wrapper.clap.state_dict())
    wrapper.clap.load_state_dict(state)
    ours = MsClapEncoder({"model": state}, tokenizer)

    waveforms = [
        decode(r["video"], video=False, sample_rate=MS_SAMPLE_RATE, channels=1).audio[0] for r in world_records[:2]
    ]
    for k, w in enumerate(waveforms):
        wrapper.sounds[f"clip{k}"] = (w, MS_SAMPLE_RATE)
    with torch.inference_mode():
        expected = torch.nn.functional.normalize(
            wrapper.get_audio_embeddings(["clip0", "clip1"], resample=False), dim=-1
        )
        np.testing.assert_allclose(ours.audio(waveforms).numpy(), expected.numpy(), atol=1e-5)
        assert expected.shape == (2, 1024) and float((expected[0] - expected[1]).abs().max()) > 1e-3
        texts = ["a dog barks twice", "rain on a tin roof while a kettle whistles"]
        expected = torch.nn.functional.normalize(wrapper.get_text_embeddings(texts), dim=-1)
        np.testing.assert_allclose(ours.text(texts).numpy(), expected.numpy(), atol=1e-5)
    np.testing.assert_array_equal(repeat_cut(np.arange(3.0), 8), [0, 1, 2, 0, 1, 2, 0, 1])
    np.testing.assert_array_equal(repeat_cut(np.arange(10.0), 8), np.arange(8))


def test_clap_ms_metric_through_metrics_run(ms_clap, gpt2_tokenizer, world_records, tmp_path, monkeypatch):
    from avjudge.metrics.clap import MS_SAMPLE_RATE
    from avjudge.scoring.jobs import run_metrics

    tokenizer = gpt2_of(gpt2_tokenizer)
    torch.manual_seed(0)
    wrapper = ms_clap({"n_layer": 1, "vocab_size": 257}, tokenizer)
    root = tmp_path / "ckpt"
    weights = {"model": _randomised(wrapper.clap.state_dict())}
    install_release(root, ("msclap_2023", "CLAP_weights_2023.pth", weights), ("gpt2_tokenizer", gpt2_tokenizer))
    monkeypatch.setenv("AVJUDGE_CHECKPOINTS", str(root))

    manifest = tmp_path / "two.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in world_records[:2]))
    run_metrics(["clap_ms"], manifest, tmp_path / "ms.jsonl", progress=False)
    rows = [json.loads(line) for line in (tmp_path / "ms.jsonl").read_text().splitlines()]
    encoder = get_metric("clap_ms", device="cpu").encoder
    for row, record in zip(rows, world_records):
        clip = decode(record["video"], video=False, sample_rate=MS_SAMPLE_RATE, channels=1)
        audio, text = encoder.audio([clip.audio[0]]), encoder.text([record["captions"]["audio"]])
        assert row["clap_ms"] == pytest.approx(float((audio * text).sum()), abs=1e-5)
    assert rows[0]["clap_ms"] != rows[1]["clap_ms"]
