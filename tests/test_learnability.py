"""benchmarks/learnability.py's encoder alignment: the warm-up its README figures rest on."""
import importlib.util
from pathlib import Path

import torch

from avjudge.judges import Judge
from avjudge.train import apply_freeze

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "learnability.py"


def _learnability():
    spec = importlib.util.spec_from_file_location("learnability", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_alignment_pairs_each_clip_with_its_own_audio_and_leaves_the_llm_alone(tiny_judges, small_world):
    learnability = _learnability()
    judge = Judge.load("av", tiny_judges["qwen2_5_omni"], fps=2.0, max_pixels=12600, use_audio_in_video=True)
    model = judge.adapter.model
    apply_freeze(model, type(judge.adapter), "llm")  # the probe's policy: encoders frozen
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    flags = {name: p.requires_grad for name, p in model.named_parameters()}
    media = learnability.world_media(judge, small_world)  # 6 clips: the first 4 train, the last 2 are held out
    learnability.align_encoders(judge, media[:4], media[4:], steps=40, every=40, seed=0, batch_size=4)
    changed = {name for name, p in model.named_parameters() if not torch.equal(p, before[name])}
    assert all(p.requires_grad == flags[name] for name, p in model.named_parameters())  # restored for the probe
    assert not any(name.startswith(("model.language_model.", "lm_head.")) for name in changed)
    assert any(name.startswith("model.visual.") for name in changed)
    assert any(name.startswith("model.audio_tower.") for name in changed)
    with torch.no_grad():
        video, audio = learnability._clip_embeddings(model.model, judge.adapter.collate(media[:4]))
    similarity = audio @ video.T
    assert torch.equal(similarity.argmax(1), torch.arange(4))  # each trained clip's audio finds its own video
