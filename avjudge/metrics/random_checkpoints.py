"""Real-size metric checkpoints with random weights, pinned (`avjudge checkpoints make-random`), for timing and
memory runs where the real weights cannot be downloaded, and for tests that run every metric's code for real. Scores
from them mean nothing; their cost is the real one.

Every tensor is random (`randomised`): batch-norm statistics, tokens, position embeddings and biases too, so that a
parity test against a reference network sees a swap of any two tensors; the AudioSet heads are scaled so their
probabilities are far from uniform (KL and IS move away from 0 and 1). PANNs' Cnn14, 13 batch norms deep, has its
statistics measured on seeded test sounds instead (`calibrated`): random ones make its activations explode.

Builds under OUT: syncnet (SyncNet v2), clip-vit-large-patch14 + laion-aesthetic (CLIP ViT-L/14 and the
aesthetic head), audiobox-aesthetics (Meta's model classes), dover (DOVER++, 56 M parameters), and
dfarena as a stand-in of DF-Arena's size class (a wav2vec2 XLS-R-300M-shaped classifier: DF-Arena's own
code cannot be fetched here), panns (PANNs Cnn14 at 16 kHz, saved as PANNs' release is: {"model": ...})
vggish (torchvggish's VGG), passt (PaSST-S) and synchformer (DeSync's Synchformer, 237 M parameters).
NISQA's real weights are linked in from --nisqa when given.

Usage: avjudge checkpoints make-random --out /tmp/random_ckpt [--nisqa ../shared/checkpoints/nisqa]
       AVJUDGE_CHECKPOINTS=/tmp/random_ckpt python benchmarks/metrics_decode.py --metrics ...
"""

from __future__ import annotations

import json
from pathlib import Path

AUDIOSET_CLASSES = 527
HEAD_SCALE = 20.0  # an AudioSet head's weights times this: its probabilities far from uniform


FIXED = ("spectrogram_extractor", "logmel_extractor")  # PANNs' STFT and mel kernels: signal processing, not learnt


def randomised(state: dict, seed: int = 0) -> dict:
    """Random values (seeded) for every learnt floating tensor of a state dict: norms' scales near 1, running
    variances positive, an AudioSet head scaled by `HEAD_SCALE`, the rest small; integer tensors (batch counts) and
    fixed signal-processing kernels (`FIXED`) kept."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    out = {}
    for name, value in state.items():
        if not value.is_floating_point() or any(word in name for word in FIXED):
            out[name] = value
            continue
        noise = 0.05 * torch.randn(value.shape, generator=generator)
        if name.endswith("running_var"):
            out[name] = 0.5 + torch.rand(value.shape, generator=generator)
        elif value.dim() == 1 and name.endswith("weight") and ("norm" in name or "bn" in name):
            out[name] = 1 + noise
        elif value.dim() >= 1 and value.shape[0] == AUDIOSET_CLASSES:
            out[name] = HEAD_SCALE * noise
        else:
            out[name] = noise
    return out


def calibration_sounds(count: int, seconds: float, sample_rate: int, seed: int = 0):
    """``count`` seeded sounds, (count, samples): three tones of random pitch and level over noise of a random
    level, what a random network's statistics are measured on (`calibrated`)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    t = torch.arange(int(seconds * sample_rate)) / sample_rate
    sounds = []
    for _ in range(count):
        noise = torch.randn(len(t), generator=generator) * 10 ** (-3 * torch.rand(1, generator=generator))
        pitches = 50 * 2 ** (7 * torch.rand(3, 1, generator=generator))
        tones = (torch.rand(3, 1, generator=generator) * torch.sin(2 * torch.pi * pitches * t)).sum(0)
        sounds.append(0.3 * (noise + tones))
    return torch.stack(sounds)


def calibrated(network, batches: list, head: str, head_std: float = 4.0):
    """``network`` (random weights) with its batch-norm statistics measured on ``batches`` (those layers in training
    mode, the rest not) and its ``head`` (a Linear giving logits) scaled so the logits' spread over the last batch is
    ``head_std``. Random statistics let activations grow layer by layer (Cnn14's embeddings ~1e4, its logits ~1e6:
    every softmax saturated, so KL is 0 and a swapped tensor unseen); measured ones keep each layer's output near
    unit scale, as trained statistics do."""
    import torch

    network.eval()
    norms = [m for m in network.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    momenta = [m.momentum for m in norms]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average over the batches
        m.train()
    with torch.no_grad():
        for batch in batches:
            network(batch)
        for m, momentum in zip(norms, momenta):
            m.momentum = momentum
        network.eval()
        logits = network(batches[-1])[-1]
        layer = network.get_submodule(head)
        scale = head_std / float(logits.std())
        layer.weight.mul_(scale)
        layer.bias.mul_(scale)
    return network


def _randomise(model, seed: int = 0):
    model.load_state_dict(randomised(model.state_dict(), seed))
    return model


def _save(state: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    state = randomised(state)
    import torch

    torch.save(state, path)


def syncnet(out: Path) -> None:
    from avjudge.metrics.syncnet import build_network

    _save(build_network().state_dict(), out / "syncnet" / "syncnet_v2.model")


def laion(out: Path) -> None:
    import transformers

    from avjudge.metrics.laion_aesthetic import build_head

    config = transformers.CLIPConfig(
        text_config={"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12},
        vision_config={
            "hidden_size": 1024,
            "intermediate_size": 4096,
            "num_hidden_layers": 24,
            "num_attention_heads": 16,
            "image_size": 224,
            "patch_size": 14,
        },
        projection_dim=768,
    )
    folder = out / "clip-vit-large-patch14"
    _randomise(transformers.CLIPModel(config)).save_pretrained(folder)
    transformers.CLIPImageProcessor(
        size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224}
    ).save_pretrained(folder)
    _save(build_head(768).state_dict(), out / "laion-aesthetic" / "sac+logos+ava1-l14-linearMSE.pth")


def audiobox(out: Path) -> None:
    from audiobox_aesthetics.model.aes import AesMultiOutput
    from safetensors.torch import save_file

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
        "target_transform": {a: {"mean": 5.0, "std": 1.5} for a in ("CE", "CU", "PC", "PQ")},
    }
    folder = out / "audiobox-aesthetics"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    save_file(
        {k: v.contiguous() for k, v in randomised(AesMultiOutput(**config).state_dict()).items()},
        folder / "model.safetensors",
    )


def dfarena(out: Path) -> None:
    import transformers

    config = transformers.Wav2Vec2Config(
        hidden_size=1024,
        num_hidden_layers=24,
        num_attention_heads=16,
        intermediate_size=4096,
        do_stable_layer_norm=True,
        feat_extract_norm="layer",
        id2label={0: "spoof", 1: "bonafide"},
        label2id={"spoof": 0, "bonafide": 1},
    )
    _randomise(transformers.Wav2Vec2ForSequenceClassification(config)).save_pretrained(out / "dfarena")


def dover(out: Path) -> None:
    from avjudge.metrics.dover import build_dover

    _save(build_dover().state_dict(), out / "dover" / "DOVER_plus_plus.pth")


def random_cnn14(seed: int = 0):
    """Cnn14 (16 kHz) with random weights, its batch-norm statistics measured on test sounds (`calibrated`)."""
    from avjudge.metrics.panns import build_cnn14
    from avjudge.metrics.reference_audio import SAMPLE_RATE

    network = _randomise(build_cnn14(), seed)
    batches = [calibration_sounds(8, 2.0, SAMPLE_RATE, seed + k) for k in range(2)]
    return calibrated(network, batches, head="fc_audioset")


def panns(out: Path) -> None:
    import torch

    path = out / "panns" / "Cnn14_16k_mAP=0.438.pth"
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"model": random_cnn14().state_dict()}, path)  # as PANNs saves it


def vggish(out: Path) -> None:
    from avjudge.metrics.vggish import build_vggish

    _save(build_vggish().state_dict(), out / "vggish" / "vggish-10086976.pth")


def passt(out: Path) -> None:
    from avjudge.metrics.passt import build_passt

    _save(build_passt().state_dict(), out / "passt" / "passt-s-f128-p16-s10-ap.476-swa.pt")


def synchformer(out: Path) -> None:
    from avjudge.metrics.synchformer import Synchformer

    _save(Synchformer().state_dict(), out / "synchformer" / "synchformer_state_dict.pth")


BUILDERS = {
    "syncnet": (syncnet, ["syncnet"]),
    "laion": (laion, ["clip_vit_l14", "laion_aesthetic"]),
    "audiobox": (audiobox, ["audiobox_aesthetics"]),
    "dfarena": (dfarena, ["dfarena"]),
    "dover": (dover, ["dover"]),
    "panns": (panns, ["panns_cnn14_16k"]),
    "vggish": (vggish, ["vggish"]),
    "passt": (passt, ["passt_s_swa"]),
    "synchformer": (synchformer, ["synchformer"]),
}


def make_random_checkpoints(out: Path, only: list[str] | None = None, nisqa: Path | None = None) -> dict[str, list]:
    """Build and pin the random checkpoints of ``only`` (default: all of `BUILDERS`) under ``out``; ``nisqa``: a
    folder holding NISQA's real weights, linked in. Returns what was built: builder -> manifest entries pinned."""
    from .checkpoints import pin

    unknown = sorted(set(only or []) - set(BUILDERS))
    if unknown:
        from ..config import ConfigError

        raise ConfigError(f"--only {unknown}: known are {', '.join(BUILDERS)}")
    out.mkdir(parents=True, exist_ok=True)
    import torch  # here, not at import: the CLI lists the builders on the base install

    torch.manual_seed(0)
    built = {}
    for name in only or BUILDERS:
        build, keys = BUILDERS[name]
        build(out)
        for key in keys:
            pin(key, out)
        built[name] = keys
    if nisqa and not (out / "nisqa").exists():
        (out / "nisqa").symlink_to(Path(nisqa).resolve())
    return built
