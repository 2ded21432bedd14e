"""benchmarks/pooled_head.py: the world's own ceiling on random mismatch, and the MLP that reads pooled encoder
features without the language model."""
import importlib.util
import random
from pathlib import Path

import torch

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "pooled_head.py"
spec = importlib.util.spec_from_file_location("pooled_head", SCRIPT)
pooled_head = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pooled_head)


def scene(objects, heard=None, background="indoor", ambience="none"):
    """A world scene's ground truth with ``objects`` as (colour, shape, sounding); ``heard``: indices with an
    event (default: every object)."""
    from avjudge.world import vocab

    objs = [{"colour": c, "shape": s, "sound": {"timbre": vocab.SHAPES[s], "f0": vocab.PITCHES[c]} if sounding else None}
            for c, s, sounding in objects]
    events = [{"object": i} for i in (range(len(objs)) if heard is None else heard)]
    return {"objects": objs, "events": events, "background": background, "ambience": ambience}


def test_contradictions_follow_the_worlds_links():
    red_circle = scene([("red", "circle", True)])
    assert pooled_head.contradictions(red_circle, red_circle) == set()
    assert pooled_head.contradictions(scene([("blue", "circle", True)]), red_circle) == {"colour-note"}
    assert pooled_head.contradictions(scene([("red", "square", True)]), red_circle) == {"shape-timbre"}
    # a ring's noise burst has no pitch: only its shape can be missing
    assert pooled_head.contradictions(scene([("blue", "ring", True)]), scene([("red", "ring", True)])) == set()
    # silent objects and objects without an event are not heard
    assert pooled_head.contradictions(scene([("blue", "square", True)]), scene([("red", "circle", False)])) == set()
    assert pooled_head.contradictions(scene([("blue", "square", True)]),
                                      scene([("red", "circle", True), ("blue", "square", True)], heard=[1])) == set()
    # rain belongs outdoors, a hum indoors
    assert pooled_head.contradictions(red_circle, scene([("red", "circle", True)], ambience="rain")) == {"place-ambience"}
    assert pooled_head.contradictions(red_circle, scene([("red", "circle", True)], ambience="hum")) == set()
    clones = [red_circle] * 3
    assert pooled_head.world_ceiling(clones, draws=50)["any"] == 0.0
    assert pooled_head.world_ceiling([red_circle, scene([("blue", "square", True)])], draws=50)["any"] == 1.0


def test_pair_head_finds_a_link_between_modalities_and_only_a_real_one():
    torch.manual_seed(0)
    video = torch.randn(200, 16)
    linked = video @ torch.randn(16, 16) + 0.1 * torch.randn(200, 16)  # each clip's audio follows its picture
    unrelated = torch.randn(200, 16)
    train, test = list(range(150)), list(range(150, 200))
    assert pooled_head.train_pair_head(video, linked, train, test, steps=600, every=600)[-1][2] > 0.9
    assert abs(pooled_head.train_pair_head(video, unrelated, train, test, steps=600, every=600)[-1][2] - 0.5) < 0.1


def test_pairs_are_half_own_audio_and_never_a_clip_with_itself_as_a_negative():
    pairs = pooled_head.draw_pairs(list(range(10)), 2000, random.Random(0))
    assert all((i == j) == bool(label) for i, j, label in pairs)
    assert 0.45 < sum(label for *_, label in pairs) / len(pairs) < 0.55
