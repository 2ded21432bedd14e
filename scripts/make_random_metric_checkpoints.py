"""Real-size metric checkpoints with random weights, pinned, for timing and memory runs where the real
weights cannot be downloaded (no internet here; a lent GPU machine has none either). Scores from them
mean nothing; their cost is the real one.

Builds under OUT: syncnet (SyncNet v2), clip-vit-large-patch14 + laion-aesthetic (CLIP ViT-L/14 and the
aesthetic head), audiobox-aesthetics (Meta's model classes), dover (DOVER++, 56 M parameters), and
dfarena as a stand-in of DF-Arena's size class (a wav2vec2 XLS-R-300M-shaped classifier: DF-Arena's own
code cannot be fetched here), panns (PANNs Cnn14 at 16 kHz, saved as PANNs' release is: {"model": ...})
vggish (torchvggish's VGG), passt (PaSST-S) and synchformer (DeSync's Synchformer, 237 M parameters).
NISQA's real weights are linked in from --nisqa when given.

Usage: python scripts/make_random_metric_checkpoints.py --out /tmp/random_ckpt [--nisqa ../shared/checkpoints/nisqa]
       AVJUDGE_CHECKPOINTS=/tmp/random_ckpt python benchmarks/metrics_decode.py --metrics ...
"""

import argparse
import json
from pathlib import Path

import torch


def syncnet(out: Path) -> None:
    from avjudge.metrics.syncnet import build_network

    (out / "syncnet").mkdir(parents=True, exist_ok=True)
    torch.save(build_network().state_dict(), out / "syncnet" / "syncnet_v2.model")


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
    transformers.CLIPModel(config).save_pretrained(folder)
    transformers.CLIPImageProcessor(
        size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224}
    ).save_pretrained(folder)
    (out / "laion-aesthetic").mkdir(exist_ok=True)
    torch.save(build_head(768).state_dict(), out / "laion-aesthetic" / "sac+logos+ava1-l14-linearMSE.pth")


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
        {k: v.contiguous() for k, v in AesMultiOutput(**config).state_dict().items()}, folder / "model.safetensors"
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
    transformers.Wav2Vec2ForSequenceClassification(config).save_pretrained(out / "dfarena")


def dover(out: Path) -> None:
    from avjudge.metrics.dover import build_dover

    (out / "dover").mkdir(exist_ok=True)
    torch.save(build_dover().state_dict(), out / "dover" / "DOVER_plus_plus.pth")


def panns(out: Path) -> None:
    from avjudge.metrics.panns import build_cnn14

    (out / "panns").mkdir(exist_ok=True)
    torch.save({"model": build_cnn14().state_dict()}, out / "panns" / "Cnn14_16k_mAP=0.438.pth")


def vggish(out: Path) -> None:
    from avjudge.metrics.vggish import build_vggish

    (out / "vggish").mkdir(exist_ok=True)
    torch.save(build_vggish().state_dict(), out / "vggish" / "vggish-10086976.pth")


def passt(out: Path) -> None:
    from avjudge.metrics.passt import build_passt

    (out / "passt").mkdir(exist_ok=True)
    torch.save(build_passt().state_dict(), out / "passt" / "passt-s-f128-p16-s10-ap.476-swa.pt")


def synchformer(out: Path) -> None:
    from avjudge.metrics.synchformer import Synchformer

    (out / "synchformer").mkdir(exist_ok=True)
    torch.save(Synchformer().state_dict(), out / "synchformer" / "synchformer_state_dict.pth")


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


def main() -> None:
    from avjudge.metrics.checkpoints import pin

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--only", default=",".join(BUILDERS), help=f"comma-separated subset of {list(BUILDERS)}")
    p.add_argument("--nisqa", type=Path, help="a folder holding the real nisqa.tar / nisqa_tts.tar, linked in")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    for name in args.only.split(","):
        build, keys = BUILDERS[name]
        build(args.out)
        for key in keys:
            pin(key, args.out)
        print(f"{name}: built and pinned {keys}")
    if args.nisqa and not (args.out / "nisqa").exists():
        (args.out / "nisqa").symlink_to(args.nisqa.resolve())
        print(f"nisqa: linked {args.nisqa}")


if __name__ == "__main__":
    main()
