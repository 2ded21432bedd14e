import numpy as np
import pytest
from torch import nn

from avjudge.judges import Judge, JudgeSample
from avjudge.judges.compiling import repeated_blocks


def _samples(n: int) -> list[JudgeSample]:
    rng = np.random.default_rng(2)
    return [  # two lengths: compiled blocks take new shapes without recompiling into errors
        JudgeSample(
            frames=rng.integers(0, 256, (2 + i % 2, 112, 140, 3), dtype=np.uint8),
            fps=1.0,
            audio=(0.1 * rng.standard_normal(16000 * (2 + i % 2))).astype(np.float32),
        )
        for i in range(n)
    ]


def test_the_repeated_blocks_are_every_encoder_and_decoder_layer_once(tiny_judges):
    model = Judge.load("av", tiny_judges["qwen2_5_omni"], defer_weights=True).adapter.model
    config = model.config
    blocks = repeated_blocks(model)
    names = {type(b).__name__ for b in blocks}
    assert names == {"Qwen2_5OmniVisionBlock", "Qwen2_5OmniAudioEncoderLayer", "Qwen2_5OmniDecoderLayer"}
    expected = config.vision_config.depth + config.audio_config.encoder_layers + config.text_config.num_hidden_layers
    assert len(blocks) == len({id(b) for b in blocks}) == expected


def test_only_outermost_lists_are_taken():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.experts = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])

    model = nn.Sequential(nn.ModuleList([Block(), Block(), Block()]), nn.ModuleList([nn.Linear(2, 2), nn.ReLU()]))
    blocks = repeated_blocks(model)
    assert len(blocks) == 3 and all(isinstance(b, Block) for b in blocks)  # no experts; no mixed list


@pytest.mark.slow  # compiling the blocks on CPU takes about half a minute
def test_compiled_blocks_score_as_eager_ones(tiny_judges):
    from torch._dynamo.utils import counters

    eager = Judge.load("av", tiny_judges["qwen2_5_omni"], batch_size=2)
    compiled = Judge.load("av", tiny_judges["qwen2_5_omni"], batch_size=2, compile=True)
    samples = _samples(4)
    counters.clear()
    got = [r.score for r in compiled.score_samples(samples)]
    assert counters["stats"]["unique_graphs"] > 0  # the blocks really ran compiled
    np.testing.assert_allclose(got, [r.score for r in eager.score_samples(samples)], atol=1e-5)
    # the parameters keep their names: a compiled judge's model saves and loads as the released one
    assert compiled.adapter.model.state_dict().keys() == eager.adapter.model.state_dict().keys()
