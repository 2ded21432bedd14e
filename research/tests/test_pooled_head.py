"""`research/pooled_head.py`: the world's own ceiling on random mismatch, and the MLP that reads pooled encoder
features without the language model."""

import random

import pytest
import torch

from research import pooled_head

pytestmark = pytest.mark.research  # the study's tests: `pytest -m research`


def scene(objects, heard=None, background="indoor", ambience="none"):
    """A world scene's ground truth with ``objects`` as (colour, shape, sounding); ``heard``: indices with an
    event (default: every object)."""
    from avjudge.world import vocab

    objs = [
        {"colour": c, "shape": s, "sound": {"timbre": vocab.SHAPES[s], "f0": vocab.PITCHES[c]} if sounding else None}
        for c, s, sounding in objects
    ]
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
    assert (
        pooled_head.contradictions(
            scene([("blue", "square", True)]), scene([("red", "circle", True), ("blue", "square", True)], heard=[1])
        )
        == set()
    )
    # rain belongs outdoors, a hum indoors
    assert pooled_head.contradictions(red_circle, scene([("red", "circle", True)], ambience="rain")) == {
        "place-ambience"
    }
    assert pooled_head.contradictions(red_circle, scene([("red", "circle", True)], ambience="hum")) == set()
    clones = [red_circle] * 3
    assert pooled_head.world_ceiling(clones, draws=50)["any"] == 0.0
    assert pooled_head.world_ceiling([red_circle, scene([("blue", "square", True)])], draws=50)["any"] == 1.0


def linked_tokens(clips=200, tokens=8, width=16):
    """(video, audio, unrelated audio) tokens: each clip's audio tokens follow its video tokens."""
    torch.manual_seed(0)
    video = torch.randn(clips, tokens, width)
    linked = video @ torch.randn(width, width) + 0.1 * torch.randn(clips, tokens, width)
    return video, linked, torch.randn(clips, tokens, width)


@pytest.mark.parametrize("name", ["mean+max", "attention"])
def test_readers_find_a_link_between_modalities_and_only_a_real_one(name):
    video, linked, unrelated = linked_tokens()
    train, test = list(range(150)), list(range(150, 200))

    def held_out_auroc(audio):
        reader = pooled_head.make_reader(name, video.shape[-1], heads=4)
        return pooled_head.train_pair_head(
            reader, reader.inputs(video), reader.inputs(audio), train, test, steps=600, every=600
        )[-1][2]

    assert held_out_auroc(linked) > 0.85
    assert abs(held_out_auroc(unrelated) - 0.5) < 0.1


def test_attention_pool_is_a_weighted_mean_per_head_not_a_maximum():
    pool = pooled_head.AttentionPool(heads=2, width=4, head_dim=4)
    tokens = torch.randn(3, 5, 4)
    with torch.no_grad():
        pool.query.zero_()  # equal scores: every head averages the (normalised) tokens' values
        expected = pool.value(pool.norm(tokens)).mean(1)
        assert torch.allclose(pool(tokens), expected, atol=1e-6)


def test_fixed_pairs_keep_to_their_budget_of_distinct_negatives():
    clips = list(range(20))
    fixed = pooled_head.FixedPairs(clips, 30, random.Random(0))
    assert len({(i, j) for i, j, _ in fixed.negatives}) == 30
    assert all(i != j for i, j, _ in fixed.negatives)
    drawn = fixed(2000)
    assert {(i, j) for i, j, label in drawn if not label} <= {(i, j) for i, j, _ in fixed.negatives}
    assert all(i == j for i, j, label in drawn if label)
    assert 0.45 < sum(label for *_, label in drawn) / len(drawn) < 0.55
    with pytest.raises(ValueError, match="at most 6 distinct negatives"):
        pooled_head.FixedPairs([0, 1, 2], 7, random.Random(0))


def test_unknown_reader_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown reader 'median'"):
        pooled_head.make_reader("median", 8)
    assert pooled_head.make_reader("max+mean", 8).poolings == ["max", "mean"]


def test_pairs_are_half_own_audio_and_never_a_clip_with_itself_as_a_negative():
    pairs = pooled_head.draw_pairs(list(range(10)), 2000, random.Random(0))
    assert all((i == j) == bool(label) for i, j, label in pairs)
    assert 0.45 < sum(label for *_, label in pairs) / len(pairs) < 0.55
