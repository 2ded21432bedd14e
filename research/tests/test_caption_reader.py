"""`research/caption_reader.py`: the colour probe, and the pair reader that needs the picture."""

import random

import pytest
import torch

from research import caption_reader

pytestmark = pytest.mark.research  # the study's tests: `pytest -m research`


def world_of_colours(clips=240, seed=0):
    """Clips that each show one colour (a feature of the 'video'), and pairs: the true caption, or the same
    caption with the colour swapped; half the clips held out."""
    rng = random.Random(seed)
    colours = ["red", "green", "blue", "yellow"]
    shown = [rng.randrange(4) for _ in range(clips)]
    torch.manual_seed(seed)
    video = torch.nn.functional.one_hot(torch.tensor(shown), 4).float() + 0.1 * torch.randn(clips, 4)
    records = []
    for clip, colour in enumerate(shown):
        for label in (1, 0):
            said = colour if label else (colour + rng.randrange(1, 4)) % 4
            records.append(
                {
                    "source_id": f"c{clip}",
                    "text": f"a {colours[said]} circle moves left",
                    "label": label,
                    "split": "train" if clip < clips // 2 else "test",
                    "negative_type": "positive" if label else "appearance",
                }
            )
    scenes = [{"objects": [{"colour": colours[c]}]} for c in shown]
    return video, records, scenes


def test_the_pair_reader_needs_the_picture_when_only_the_picture_tells():
    video, records, _ = world_of_colours()
    index = {f"c{i}": i for i in range(len(video))}
    with_picture = caption_reader.caption_pair_aurocs(video, records, index, steps=800, with_picture=True)
    alone = caption_reader.caption_pair_aurocs(video, records, index, steps=800, with_picture=False)
    assert with_picture["all"] > 0.9 and with_picture["appearance"] > 0.9
    assert abs(alone["all"] - 0.5) < 0.1  # every colour word is as often true as false


def test_colour_probe_reads_colours_that_are_on_screen_and_skips_absent_ones():
    video, _, scenes = world_of_colours()
    shown = caption_reader.colours_on_screen(video, scenes, list(range(120)), list(range(120, 240)), steps=300)
    assert set(shown) == {"red", "green", "blue", "yellow"}  # world colours never shown are left out
    assert min(shown.values()) > 0.95
