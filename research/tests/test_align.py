"""Pretraining of the tiny thinker's encoders (research.align: contrastive alignment, presence) and the
committed aligned encoders the demo's judges start from."""

import dataclasses

import numpy as np
import pytest
import torch

from avjudge.config import ConfigError, load_config
from avjudge.demo import TRAIN_CONFIGS, DemoSize
from avjudge.jsonl import read_jsonl
from avjudge.judges import Judge
from avjudge.judges.tiny import (
    ALIGNED_ENCODERS,
    HEAD_DIM,
    build_tiny_omni_thinker,
    build_tokenizer,
    load_encoders,
    make_tiny_judges,
)
from avjudge.stats import auroc
from avjudge.train import TrainConfig, apply_freeze
from avjudge.world import MANIFEST, make_world, vocab
from research.align import (
    HEARD,
    SEEN,
    align_encoders,
    clip_embeddings,
    encoder_parameters,
    linear_presence_auroc,
    presence_labels,
    pretrain_presence,
    world_media,
)

pytestmark = pytest.mark.research  # the study's tests: `pytest -m research`

_AV = load_config(TrainConfig, TRAIN_CONFIGS["av"], [])
AV_SETTINGS = dict(fps=_AV.fps, max_pixels=_AV.max_pixels, use_audio_in_video=_AV.use_audio_in_video)  # the demo's


def test_alignment_pairs_each_clip_with_its_own_audio_and_leaves_the_llm_alone(tiny_judges, small_world):
    judge = Judge.load("av", tiny_judges["qwen2_5_omni"], **AV_SETTINGS)
    model = judge.adapter.model
    apply_freeze(model, type(judge.adapter), "llm")  # the probe's policy: encoders frozen
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    flags = {name: p.requires_grad for name, p in model.named_parameters()}
    media = world_media(judge, small_world)  # 6 clips: the first 4 train, the last 2 are held out
    history = align_encoders(judge, media[:4], media[4:], steps=40, every=20, seed=0, batch_size=4)
    assert [step for step, _, _ in history] == [20, 40]
    assert history[-1][1] < history[0][1]  # the contrastive loss falls
    changed = {name for name, p in model.named_parameters() if not torch.equal(p, before[name])}
    assert all(p.requires_grad == flags[name] for name, p in model.named_parameters())  # restored for the probe
    assert not any(name.startswith(("model.language_model.", "lm_head.")) for name in changed)
    assert changed <= set(encoder_parameters(model.model))
    assert any(name.startswith("model.visual.") for name in changed)
    assert any(name.startswith("model.audio_tower.") for name in changed)
    with torch.no_grad():
        video, audio = clip_embeddings(model.model, judge.adapter.collate(media[:4]))
    similarity = audio @ video.T
    assert torch.equal(similarity.argmax(1), torch.arange(4))  # each trained clip's audio finds its own video


def test_presence_labels_name_what_is_on_screen_and_what_is_heard():
    def obj(colour, shape, sounding=True):
        return {
            "colour": colour,
            "shape": shape,
            "sound": {"timbre": vocab.SHAPES[shape], "f0": vocab.PITCHES[colour]} if sounding else None,
        }

    scene = {
        "objects": [
            obj("red", "circle"),
            obj("blue", "ring"),
            obj("green", "square", sounding=False),
            obj("pink", "triangle"),
        ],
        "events": [{"object": 0}, {"object": 1}, {"object": 2}],  # the pink triangle makes no sound here
        "background": "outdoor",
        "ambience": "rain",
    }
    seen, heard = presence_labels(scene)
    assert {SEEN[k] for k in np.flatnonzero(seen)} == {
        "red",
        "blue",
        "green",
        "pink",
        "circle",
        "ring",
        "square",
        "triangle",
        "outdoor",
    }
    # a noise burst (the ring) has no note; a silent object and one without an event are not heard
    assert {HEARD[k] for k in np.flatnonzero(heard)} == {vocab.PITCHES["red"], "sine", "noise_burst", "rain"}


def test_presence_pretraining_reads_one_clips_picture_and_another_clips_sound(tiny_judges, small_world):
    judge = Judge.load("av", tiny_judges["qwen2_5_omni"], **AV_SETTINGS)
    model = judge.adapter.model
    apply_freeze(model, type(judge.adapter), "llm")
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    flags = {name: p.requires_grad for name, p in model.named_parameters()}
    media = world_media(judge, small_world)
    scenes = [record["scene"] for record in read_jsonl(small_world / MANIFEST)]
    # measured on the clips it trains on, each picture with the next clip's sound: the heard labels must follow
    # the sound's clip, or the pairs it is measured on would contradict what it learned
    history = pretrain_presence(
        judge, media, scenes, media, scenes, steps=60, every=30, seed=0, batch_size=6, learning_rate=3e-3
    )
    assert [step for step, _, _ in history] == [30, 60]
    assert history[-1][1] < history[0][1]
    assert history[-1][2] > 0.9
    changed = {name for name, p in model.named_parameters() if not torch.equal(p, before[name])}
    assert all(p.requires_grad == flags[name] for name, p in model.named_parameters())
    assert changed <= set(encoder_parameters(model.model))
    assert any(name.startswith("model.visual.") for name in changed)
    assert any(name.startswith("model.audio_tower.") for name in changed)


@pytest.fixture(scope="module")
def demo_sized_world(tmp_path_factory):
    """Clips as the demo makes them, from a seed the committed encoders were not pretrained on (they used 1)."""
    out = tmp_path_factory.mktemp("demo_sized_world")
    make_world(DemoSize().world(seed=0, clips=48), out, progress=False)
    return out


def test_committed_encoders_say_what_unseen_clips_show_and_sound(tmp_path, demo_sized_world):
    """The committed encoders were pretrained contrastively, then on presence (`research/align_tiny_encoders.py`): on
    clips of the demo's world, never pretrained on, linear heads on their pooled tokens name what is on screen and
    what is heard far better than on random encoders' (docs/research/tiny_judges.md)."""
    tokenizer = build_tokenizer(tmp_path / "tokenizer")
    scenes = [record["scene"] for record in read_jsonl(demo_sized_world / MANIFEST)]
    presence = {}
    for name, encoders in (("random", None), ("committed", ALIGNED_ENCODERS)):
        judge = Judge.load("av", build_tiny_omni_thinker(tmp_path / name, tokenizer, encoders=encoders), **AV_SETTINGS)
        presence[name] = linear_presence_auroc(judge, world_media(judge, demo_sized_world), scenes, train=32)
    assert presence["committed"] > 0.8
    assert presence["committed"] > presence["random"] + 0.15


def test_the_tiny_thinker_takes_its_encoders_from_the_committed_file_and_nothing_else(tmp_path, tiny_judges):
    from safetensors.torch import load_file, save_file

    weights = load_file(str(ALIGNED_ENCODERS))
    thinker = Judge.load("av", tiny_judges["qwen2_5_omni"]).adapter.model
    random_thinker = Judge.load(
        "av", build_tiny_omni_thinker(tmp_path / "random", build_tokenizer(tmp_path / "tok"))
    ).adapter.model
    for name, value in thinker.state_dict().items():
        expected = weights[name] if name in weights else random_thinker.state_dict()[name]
        assert torch.equal(value, expected), name
    # the learnability benchmark's from-scratch runs: random encoders, in a folder of their own
    scratch = Judge.load("av", make_tiny_judges(tmp_path, encoders=None)["qwen2_5_omni"]).adapter.model
    assert all(torch.equal(value, random_thinker.state_dict()[name]) for name, value in scratch.state_dict().items())
    save_file(
        {k: v for k, v in weights.items() if not k.startswith("model.visual.")}, str(tmp_path / "part.safetensors")
    )
    with pytest.raises(RuntimeError, match="missing.*align_tiny_encoders"):
        load_encoders(random_thinker, tmp_path / "part.safetensors")
    # other encoder weights (a re-alignment the learnability benchmark compares): a folder of their own
    other = {name: value + 1.0 for name, value in weights.items()}
    save_file(other, str(tmp_path / "other.safetensors"))
    dirs = make_tiny_judges(tmp_path, encoders=str(tmp_path / "other.safetensors"))
    assert dirs["qwen2_5_omni"].parent.name.startswith("tiny_encoders_")
    state = Judge.load("av", dirs["qwen2_5_omni"]).adapter.model.state_dict()
    assert all(torch.equal(state[name], value) for name, value in other.items())
    with pytest.raises(FileNotFoundError, match="nowhere.safetensors is missing; give an encoder weights file"):
        make_tiny_judges(tmp_path, encoders=tmp_path / "nowhere.safetensors")


def test_untrained_judge_with_aligned_encoders_still_answers_at_chance(tiny_judges, demo_sized_world):
    """Aligned encoders are a pretrained start, not a judge: the random language model cannot yet tell a clip's
    own audio from another clip's (the demo's "before" column)."""
    judge = Judge.load("av", tiny_judges["qwen2_5_omni"], **AV_SETTINGS)
    clips = [judge.decode(demo_sized_world / r["video"]) for r in read_jsonl(demo_sized_world / MANIFEST)]
    own = [judge.prepare(judge.sample(clip)) for clip in clips]
    swapped = [
        judge.prepare(judge.sample(dataclasses.replace(clip, audio=clips[i - 1].audio))) for i, clip in enumerate(clips)
    ]
    scores = np.array([result.score for result in judge.score_prepared(own + swapped)])
    assert abs(auroc(scores, np.repeat([1, 0], len(clips))) - 0.5) < 0.2


def test_clip_embeddings_pool_each_clips_own_tokens(tiny_judges, small_world):
    judge = Judge.load("av", tiny_judges["qwen2_5_omni"], **AV_SETTINGS)
    core = judge.adapter.model.model
    media = world_media(judge, small_world)[:2]
    with torch.no_grad():
        pooled = {pooling: clip_embeddings(core, judge.adapter.collate(media), pooling) for pooling in ("max", "mean")}
        for i, sample in enumerate(media):  # one clip alone: its tokens, no padding or neighbour in the pool
            batch = judge.adapter.collate([sample])
            video = core.get_video_features(batch["pixel_values_videos"], batch["video_grid_thw"]).pooler_output[0]
            audio = core.get_audio_features(batch["input_features"], batch["feature_attention_mask"]).last_hidden_state
            for pooling, reduce in (("max", lambda t: t.max(0).values), ("mean", lambda t: t.mean(0))):
                torch.testing.assert_close(pooled[pooling][0][i], torch.nn.functional.normalize(reduce(video), dim=0))
                torch.testing.assert_close(pooled[pooling][1][i], torch.nn.functional.normalize(reduce(audio), dim=0))


def test_language_model_overrides_build_judges_of_their_own_and_typos_are_errors(tmp_path, tiny_judges):
    """What `research/learnability.py` --lm` varies: the overrides reach every family's language model, in a
    folder of their own, while the encoders and the default judges stay as they are."""
    import json

    from safetensors.torch import load_file

    dirs = make_tiny_judges(
        tmp_path, language_model={"num_hidden_layers": 3, "num_key_value_heads": 4, "num_attention_heads": 8}
    )
    assert dirs["qwen2_5_omni"].parent.name.startswith("tiny_lm_")
    for family, path in dirs.items():
        text = json.loads((path / "config.json").read_text())["text_config"]
        assert (text["num_hidden_layers"], text["num_key_value_heads"]) == (3, 4), family
    # more heads, each as wide as before: twice the query width, the rotary sections still fit
    model = Judge.load("av", dirs["qwen2_5_omni"]).adapter.model
    attention = model.model.language_model.layers[0].self_attn
    assert attention.q_proj.out_features == 8 * HEAD_DIM and attention.o_proj.out_features == 64
    default = json.loads((tiny_judges["qwen2_5_omni"] / "config.json").read_text())["text_config"]
    assert (default["num_hidden_layers"], default["num_key_value_heads"]) == (2, 2)
    state = model.state_dict()
    weights = load_file(str(ALIGNED_ENCODERS))
    assert all(torch.equal(state[name], value) for name, value in weights.items())
    with pytest.raises(ConfigError, match="unknown language-model settings.*num_layers"):
        make_tiny_judges(tmp_path, language_model={"num_layers": 3})
    with pytest.raises(ConfigError, match="hidden_size.*cannot be changed"):
        make_tiny_judges(tmp_path, language_model={"hidden_size": 128})
    with pytest.raises(ConfigError, match="head_dim.*cannot be changed"):
        make_tiny_judges(tmp_path, language_model={"head_dim": 8})


def test_moment_alignment_pairs_each_group_with_the_sound_of_its_span_and_its_loss_falls(tiny_judges, small_world):
    """`align_in_time`: per clip, one picture and one sound embedding a visual token group (the sound of the group's
    own 2 / fps seconds), centred over the clip; the in-clip contrast of moments falls as the encoders train."""
    from research.align import AUDIO_TOKENS_PER_SECOND, align_in_time, moment_embeddings, shift_auroc

    judge = Judge.load("av", tiny_judges["qwen2_5_omni"], **AV_SETTINGS)
    media = world_media(judge, small_world)
    batch = judge.adapter.collate(media[:2])
    moments = moment_embeddings(judge.adapter.model.model, batch)
    for (video, audio), grid in zip(moments, batch["video_grid_thw"].tolist()):
        assert video.shape == audio.shape and video.shape[0] <= grid[0]
        assert torch.allclose(video.norm(dim=-1), torch.ones(len(video)), atol=1e-5)
    assert AUDIO_TOKENS_PER_SECOND * batch["video_second_per_grid"][0].item() == pytest.approx(25 * 2 / _AV.fps)
    history = align_in_time(judge, media[:4], media[4:], steps=40, every=20, seed=0, batch_size=4, lag=2)
    assert history[-1][1] < history[0][1]
    assert 0.0 <= shift_auroc(judge.adapter.model.model, judge.adapter.collate(media[4:]), lag=2) <= 1.0


def test_a_clips_lag_profile_peaks_where_its_sound_meets_its_picture(tiny_judges, small_world):
    """`lag_agreements`: the mean of each diagonal of a clip's picture-against-sound similarities, lag -L to L;
    `lag_readouts` reads a clip against itself (paired, the profile's peak) beside the unpaired AUROC."""
    from research.align import lag_agreements, lag_readouts

    similarities = torch.eye(6) * 0.9 + 0.1 * torch.arange(36.0).reshape(6, 6) / 36
    profile = lag_agreements(similarities, 2)
    assert profile.shape == (5,) and int(profile.argmax()) == 2  # lag 0 in the middle: the diagonal
    assert profile[3] == pytest.approx(float(torch.diagonal(similarities, 1).mean()))  # sound one group later
    judge = Judge.load("av", tiny_judges["qwen2_5_omni"], **AV_SETTINGS)
    batch = judge.adapter.collate(world_media(judge, small_world))
    read = lag_readouts(judge.adapter.model.model, batch, lag=2, lags=3)
    assert read["clips"] > 0 and all(0.0 <= read[k] <= 1.0 for k in ("unpaired_auroc", "paired", "offset_found"))
