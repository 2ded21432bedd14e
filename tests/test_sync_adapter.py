"""The sync adapter of Qwen2.5-Omni judges (`avjudge.judges.sync_adapter`): what it computes, where its tokens sit,
that it saves, loads, batches and trains with the judge, and that a judge without one is untouched."""

import json
import shutil

import numpy as np
import pytest
import torch

from avjudge.cli import main
from avjudge.config import ConfigError, load_config
from avjudge.data import PairDataset, load_manifest, load_pairs
from avjudge.jsonl import read_jsonl
from avjudge.judges import CheckpointError, Judge
from avjudge.judges.adapters import model_name
from avjudge.judges.judge import TRAINED_SETTINGS
from avjudge.judges.served import ServedEndpoint, ServedJudge
from avjudge.judges.sync_adapter import moment_products
from avjudge.perturb import SourcePool
from avjudge.resources import resolve
from avjudge.rewards.card import card_of_run
from avjudge.train import TrainConfig, run_training
from avjudge.train.trainer import finish_checkpoint, prepared_pairs
from avjudge.world import MANIFEST

from .test_train import config as train_config

SYNC = dict(use_audio_in_video=True, fps=8.0, max_pixels=3136)  # the demo AV judge's sampling


@pytest.fixture(scope="module")
def videos(small_world):
    return [str(small_world / r["video"]) for r in read_jsonl(small_world / MANIFEST)]


def save_judge(judge: Judge, out) -> None:
    """``judge`` as a judge folder, as a training run leaves one: weights, side files, the settings it reads with."""
    judge.adapter.model.save_pretrained(str(out))
    finish_checkpoint(out, judge, {"judge_settings": {k: getattr(judge.settings, k) for k in TRAINED_SETTINGS}})


@pytest.fixture(scope="module")
def sync_checkpoint(tiny_judges, tmp_path_factory):
    """The tiny Qwen2.5-Omni thinker with a fresh sync adapter, saved as a judge folder."""
    judge = Judge.load("av", tiny_judges["qwen2_5_omni"], **SYNC)
    judge.adapter.add_sync_adapter(seed=3)
    out = tmp_path_factory.mktemp("sync_judge")
    save_judge(judge, out)
    return out


def _reference_products(embeds, video, audio, times):
    """The moment products computed in numpy, group by group, as the module's docstring states them."""
    x = embeds.double().numpy()
    group_times = sorted(set(times[video].tolist()))
    span = group_times[-1] - group_times[-2]
    bounds = group_times + [group_times[-1] + span]
    picture = np.stack([x[video.numpy() & (times.numpy() == t)].mean(0) for t in group_times])
    sound = np.zeros_like(picture)
    heard = np.zeros(len(group_times), bool)
    for g in range(len(group_times)):
        inside = audio.numpy() & (times.numpy() >= bounds[g]) & (times.numpy() < bounds[g + 1])
        if inside.any():
            sound[g], heard[g] = x[inside].mean(0), True
    picture -= picture.mean(0)
    sound = (sound - sound[heard].mean(0)) * heard[:, None]
    unit = lambda m: m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)  # noqa: E731
    return unit(picture) * unit(sound) * np.sqrt(x.shape[1]), np.array(group_times)


def test_moment_products_equal_an_independent_computation():
    rng = np.random.default_rng(0)
    # 5 groups of 4 video tokens at times 0, 6, 12, 18, 25 and audio tokens at every time 0..29 (the last group's
    # span is the one before it: 25..31), in Qwen2.5-Omni's chunk order, with text around
    group_times = [0, 6, 12, 18, 25]
    kinds, times = ["t"] * 3, [0, 1, 2]
    for t in group_times:
        kinds += ["v"] * 4
        times += [100 + t] * 4
    kinds += ["a"] * 30 + ["t"] * 2
    times += [100 + i for i in range(30)] + [200, 201]
    embeds = torch.tensor(rng.normal(size=(len(kinds), 16)), dtype=torch.float32)
    video = torch.tensor([k == "v" for k in kinds])
    audio = torch.tensor([k == "a" for k in kinds])
    times = torch.tensor(times)
    products, got_times = moment_products(embeds, video, audio, times)
    expected, expected_times = _reference_products(embeds, video, audio, times)
    np.testing.assert_allclose(products.numpy(), expected, atol=1e-5)
    np.testing.assert_array_equal(got_times.numpy(), expected_times)


def test_a_sound_at_its_pictures_moment_agrees_and_the_same_sound_shifted_does_not():
    """Sum over groups of the products: the mean cosine of each picture with the sound of its own moment."""
    rng = np.random.default_rng(1)
    groups, width = 12, 32
    moments = rng.normal(size=(groups, width))
    video_rows = np.repeat(moments, 4, axis=0) + rng.normal(scale=0.1, size=(groups * 4, width))
    times = list(np.repeat(np.arange(groups) * 6, 4))
    agreement = {}
    for shift in (0, 2, 4):
        sound = np.roll(moments, shift, axis=0)
        audio_rows = np.repeat(sound, 6, axis=0)  # 6 audio tokens a group
        embeds = torch.tensor(np.concatenate([video_rows, audio_rows]), dtype=torch.float32)
        video = torch.tensor([True] * len(video_rows) + [False] * len(audio_rows))
        all_times = torch.tensor(times + list(range(groups * 6)))
        products, _ = moment_products(embeds, video, ~video, all_times)
        agreement[shift] = float(products.sum() / np.sqrt(width) / groups)
    assert agreement[0] > 0.9 and agreement[2] < 0.3 and agreement[4] < 0.3


def test_a_judge_without_an_adapter_scores_exactly_as_the_thinker_alone(tiny_judges, videos, sync_checkpoint):
    plain = Judge.load("av", tiny_judges["qwen2_5_omni"], **SYNC)
    assert plain.adapter.sync_spec is None and not hasattr(plain.adapter.model, "sync_adapter")
    assert model_name(tiny_judges["qwen2_5_omni"]) == "Qwen2.5-Omni"
    tokenizer = plain.adapter.tokenizer
    prepared = [plain.prepare(plain.sample(plain.decode(v))) for v in videos[:3]]
    assert all(tokenizer.convert_tokens_to_ids("<|IMAGE|>") not in p.input_ids for p in prepared)
    batch = plain.adapter.collate(prepared)
    with torch.no_grad():  # transformers' own forward of the thinker, no hook of ours on it
        logits = plain.adapter.model(**batch, use_audio_in_video=True).logits[:, -1].double()
    yes, no = (tokenizer.convert_tokens_to_ids(t) for t in ("Yes", "No"))
    expected = torch.sigmoid(logits[:, yes] - logits[:, no]).tolist()
    only = Judge.load("av", tiny_judges["qwen2_5_omni"], yes_variants=("Yes",), no_variants=("No",), **SYNC)
    np.testing.assert_allclose([r.score for r in only.score_prepared(prepared)], expected, atol=1e-6)
    Judge.load("av", sync_checkpoint)  # a judge with an adapter in the same process leaves this one as it was
    np.testing.assert_allclose([r.score for r in only.score_prepared(prepared)], expected, atol=1e-6)


def test_sync_tokens_sit_after_the_media_at_their_groups_times(sync_checkpoint, videos):
    judge = Judge.load("av", sync_checkpoint)
    assert type(judge.adapter.model).__name__ == "Qwen2_5OmniThinkerWithSyncAdapter"
    assert model_name(sync_checkpoint) == "Qwen2.5-Omni + sync adapter"
    model, spec = judge.adapter.model, judge.adapter.sync_spec
    prepared = judge.prepare(judge.sample(judge.decode(videos[0])))
    ids = torch.tensor(prepared.input_ids)
    slots = (ids == spec["token_id"]).nonzero()[:, 0]
    assert len(slots) == prepared.video_grid_thw[0]  # one a token group
    eos = prepared.input_ids.index(judge.adapter.tokenizer.convert_tokens_to_ids("<|vision_eos|>"))
    assert slots.tolist() == list(range(eos + 1, eos + 1 + len(slots)))  # after the video item, together
    seen = {}

    def keep(module, args, kwargs):
        seen.update(embeds=kwargs["inputs_embeds"][0], positions=kwargs["position_ids"][:, 0])

    handle = model.model.language_model.register_forward_hook(
        lambda module, args, kwargs, out: keep(module, args, kwargs), with_kwargs=True
    )
    with torch.no_grad():
        judge.adapter.next_token_logits(judge.adapter.collate([prepared]))
    handle.remove()
    video = ids == model.config.video_token_id
    group_times = sorted(set(seen["positions"][0][video].tolist()))
    for axis in range(3):  # the group's time on every axis
        assert seen["positions"][axis][slots].tolist() == group_times
    # each placeholder's embedding is the adapter's token of its group's moment product
    media = seen["embeds"].clone()
    products, _ = moment_products(media, video, ids == model.config.audio_token_id, seen["positions"][0])
    with torch.no_grad():
        np.testing.assert_allclose(seen["embeds"][slots], model.sync_adapter(products), atol=1e-6)


def test_a_judge_with_an_adapter_saves_loads_and_batches_as_it_scores_alone(sync_checkpoint, videos, tmp_path):
    judge = Judge.load("av", sync_checkpoint, batch_size=4)
    batched = [r.score for r in judge.score(videos)]
    for video, score in zip(videos, batched):
        assert abs(judge.score([video])[0].score - score) < 1e-5
    assert len({round(s, 6) for s in batched}) > 1
    # its adapter's weights are part of the checkpoint: changing them changes the scores, saving keeps them
    with torch.no_grad():
        judge.adapter.model.sync_adapter.proj.weight.mul_(5)
    changed = [r.score for r in judge.score(videos)]
    assert max(abs(a - b) for a, b in zip(changed, batched)) > 1e-4
    save_judge(judge, tmp_path)
    np.testing.assert_allclose([r.score for r in Judge.load("av", tmp_path).score(videos)], changed, atol=1e-6)


def test_a_judge_with_an_adapter_refuses_what_it_cannot_read(tiny_judges, sync_checkpoint, tmp_path):
    with pytest.raises(ValueError, match="sync adapter.*use_audio_in_video"):
        Judge.load("av", sync_checkpoint, use_audio_in_video=False)
    with pytest.raises(ValueError, match="sync adapter.*not vt"):
        Judge.load("vt", sync_checkpoint)
    with pytest.raises(ConfigError, match="sync adapter.*score it locally"):
        ServedJudge.load("av", sync_checkpoint, ServedEndpoint("http://127.0.0.1:9", "judge"))
    # a hand-edited entry is named
    edited = tmp_path / "edited"
    shutil.copytree(sync_checkpoint, edited)
    cfg = json.loads((edited / "config.json").read_text())
    (edited / "config.json").write_text(json.dumps({**cfg, "sync_adapter": {"placeholder": "<|IMAGE|>"}}))
    with pytest.raises(ConfigError, match="sync_adapter must be an object"):
        Judge.load("av", edited)
    # Qwen3-Omni takes none
    qwen3 = tmp_path / "qwen3"
    shutil.copytree(tiny_judges["qwen3_omni"], qwen3)
    cfg = json.loads((qwen3 / "config.json").read_text())
    (qwen3 / "config.json").write_text(json.dumps({**cfg, "sync_adapter": {"placeholder": "x", "token_id": 1}}))
    with pytest.raises(CheckpointError, match="cannot carry a sync adapter"):
        Judge.load("av", qwen3)
    with pytest.raises(ConfigError, match="Qwen3-Omni judge cannot carry a sync adapter"):
        Judge.load("av", tiny_judges["qwen3_omni"], use_audio_in_video=True).adapter.add_sync_adapter()


def test_a_training_config_asks_for_an_adapter_only_where_it_can_work(tiny_judges, pairs, tmp_path):
    # the 7B AV config switches it on as its comment says
    switched = ["use_audio_in_video=true", "sync_adapter=true"]
    assert load_config(TrainConfig, resolve("av_qwen25omni_7b", "train_config"), switched).sync_adapter
    for overrides in ({"use_audio_in_video": "false"}, {"task": "vt"}):
        with pytest.raises(ConfigError, match="sync_adapter compares"):
            train_config(tiny_judges, pairs, tmp_path, sync_adapter="true", **overrides)


@pytest.mark.parametrize("freeze", ["llm", "lora"])
def test_training_with_an_adapter_trains_it_and_saves_it_with_the_judge(tiny_judges, pairs, tmp_path, freeze, capsys):
    out = tmp_path / freeze
    config = train_config(tiny_judges, pairs, out, sync_adapter="true", freeze=freeze, lora_r=4, learning_rate=1e-2)
    summary = run_training(config)
    if freeze == "llm":  # its card names it, and so does `judges card`
        assert card_of_run(config, summary, clips=2)["model"] == "Qwen2.5-Omni + sync adapter"
        assert main(["judges", "card", str(out)]) == 0
        assert "Model: Qwen2.5-Omni + sync adapter." in capsys.readouterr().out
    assert summary["sync_adapter"]["placeholder"] == "<|IMAGE|>"
    final = Judge.load("av", out / "final")
    assert final.adapter.sync_spec == summary["sync_adapter"]
    fresh = Judge.load("av", tiny_judges["qwen2_5_omni"], **SYNC)
    fresh.adapter.add_sync_adapter(seed=0)  # the run's seed: where its adapter started
    trained, start = final.adapter.model.sync_adapter.proj.weight, fresh.adapter.model.sync_adapter.proj.weight
    assert not torch.allclose(trained, start)  # the Yes/No gradient reached it, and it was saved
    # the scores the run recorded are the saved judge's, every weight loaded back (the language model's too)
    record = json.loads((out / "final" / "avjudge_train.json").read_text())
    assert record["sync_adapter"] == summary["sync_adapter"]
    held_out = load_pairs(pairs, "av", "test", 6)
    pool = SourcePool(load_manifest(json.loads((pairs / "stats.json").read_text())["manifest"]))
    dataset = PairDataset(held_out, pool, final.settings.sample_rate, final.settings.fps, pairs,
                          max_pixels=final.needs.max_pixels)  # fmt: skip
    rescored = [r.score for r in final.score_prepared(prepared_pairs(final, dataset))]
    np.testing.assert_allclose(list(record["eval_after"]["scores"].values()), rescored, atol=1e-6)
