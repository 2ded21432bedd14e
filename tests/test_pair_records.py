"""A pair dataset's records are read strictly: a hand-edited line (a label that is not 0 or 1, a strategy's parameter
out of its bounds, a window before its source, a source the dataset does not hold) is refused naming its file, line
and field, before a model loads; before, training loaded the model, then died mid-run on a `KeyError` or a library's
error, or learnt from a wrong label without a word. A judge trained on pairs edited since their build records the hash
of what it trained on, and says so."""

from __future__ import annotations

import json
import math
import shutil

import pytest

from avjudge.config import ConfigError, load_config
from avjudge.data import built_sources, load_pairs, pairs_now
from avjudge.resources import resolve
from avjudge.train import TrainConfig

from .helpers import refused


@pytest.fixture
def dataset(pairs, tmp_path):
    """A copy of the session's pair dataset, to edit."""
    return shutil.copytree(pairs, tmp_path / "pairs")


def edit(dataset, change, split: str = "train", where=lambda r: True) -> tuple[str, int]:
    """Change the first AV record of ``split`` that ``where`` picks; its ``file:line``."""
    path = dataset / "pairs" / "av" / f"{split}.jsonl"
    lines = path.read_text().splitlines()
    index = next(k for k, line in enumerate(lines) if where(json.loads(line)))
    record = json.loads(lines[index])
    lines[index] = change(record) if callable(change) else change
    path.write_text("\n".join(lines) + "\n")
    return f"{path}:{index + 1}", index


def _set(**fields):
    return lambda record: json.dumps({**record, **fields})


def _negative(strategy: str):
    return lambda record: record["strategy"] == strategy


EDITS = {
    "label not 0 or 1": (_set(label="yes"), lambda r: True, "label: 1 (a match) or 0 (a negative), not 'yes'"),
    "a negative labelled a match": (_set(label=1), _negative("filter"), "label: 1 for a pair made by 'filter'"),
    "an unknown strategy": (_set(strategy="reverb"), lambda r: True, "strategy: 'reverb' is none of"),
    "a parameter out of bounds": (
        lambda r: json.dumps({**r, "params": {**r["params"], "order": 0}}),  # an order-0 filter passes the sound
        _negative("filter"),
        "params: filter.order must be a whole number at least 1",
    ),
    "a parameter missing": (_set(params={"kind": "lowpass"}), _negative("filter"), "missing: ['cutoff_hz', 'order']"),
    "a window before its source": (
        lambda r: json.dumps({**r, "window": {**r["window"], "start_s": -1.0}}),
        lambda r: True,
        "window: start_s must be a number at least 0",
    ),
    "a window of NaN seconds": (
        lambda r: json.dumps({**r, "window": {**r["window"], "duration_s": math.nan}}),
        lambda r: True,
        "window: duration_s must be a finite number",
    ),
    "another task's pair": (_set(dimension="vt"), lambda r: True, "dimension: 'vt' in the av pairs"),
    "no id": (lambda r: json.dumps({k: v for k, v in r.items() if k != "id"}), lambda r: True, "id: a pair names"),
    "a source the dataset does not hold": (_set(source_id="elsewhere"), lambda r: True, "no source 'elsewhere'"),
    "a borrowed sound the dataset does not hold": (
        _set(params={"source": "elsewhere"}),
        _negative("random_mismatch"),
        "params: no source 'elsewhere'",
    ),
    "a window past its source's end": (
        lambda r: json.dumps({**r, "window": {**r["window"], "start_s": 100.0}}),
        lambda r: True,
        "window: it ends at",
    ),
    "a seed that is a string": (_set(seed="x"), lambda r: True, "seed: a whole number 0 or more, or a list of them"),
    "a repeated id": (
        _set(id="av-train-p0000000"),  # the first line's
        lambda r: r["id"] != "av-train-p0000000",
        "id: 'av-train-p0000000' is line 1's too",
    ),
    "a line that is not an object": ("[1, 2]", lambda r: True, "a record must be a JSON object"),
    "a line that is not JSON": ('{"id": "av-train', lambda r: True, "not valid JSON"),
}


@pytest.mark.parametrize("case", sorted(EDITS))
def test_a_hand_edited_pair_is_refused_naming_its_line_and_field(dataset, case):
    change, where, words = EDITS[case]
    line, _ = edit(dataset, change, where=where)
    sources = {s["id"]: s for s in built_sources(dataset)}  # the manifest's records: their durations hold windows
    with pytest.raises(ConfigError) as refused:
        load_pairs(dataset, "av", "train", sources=sources)
    message = str(refused.value)
    assert message.startswith(f"{line}:") and words in message, message
    assert "avjudge data build" in message  # how to go on


def test_the_records_a_build_writes_pass(pairs):
    sources = {s["id"]: s for s in built_sources(pairs)}  # each window within its source's duration too
    for task in ("av", "vt", "at"):
        for split in ("train", "test"):
            assert load_pairs(pairs, task, split, sources=sources)


@pytest.mark.parametrize(
    "command",
    [
        # the model named does not exist: the run is refused for the pairs before it looks for it
        lambda d, t: ["train", "--config", "tiny_world_av", "--set", f"dataset={d}", "--set", f"model={t / 'none'}"],
        lambda d, t: ["judges", "calibrate", "--judge", f"av={t / 'none'}", "--pairs", str(d)],
        lambda d, t: ["data", "audit", "--input", str(d)],
        lambda d, t: ["data", "export", "--input", str(d), "--format", "llamafactory", "--out", str(t / "export")],
        lambda d, t: ["data", "export", "--input", str(d), "--format", "pairs-csv", "--out", str(t / "export")],
    ],
    ids=["train", "judges calibrate", "data audit", "data export", "data export pairs-csv"],
)
def test_commands_refuse_a_hand_edited_pair_before_a_model_loads_or_a_file_is_written(
    dataset, tmp_path, capsys, command
):
    edit(dataset, _set(label=1), where=_negative("filter"))
    edit(dataset, _set(label=1), split="test", where=_negative("filter"))
    err = refused(command(dataset, tmp_path), capsys)
    assert "label: 1 for a pair made by 'filter'" in err, err
    assert "none" not in err.splitlines()[-1] and not (tmp_path / "export").exists()


def test_a_judge_trained_on_pairs_edited_since_their_build_records_what_it_trained_on(
    dataset, tiny_judges, tmp_path, capsys
):
    from avjudge.train.trainer import build_training

    assert pairs_now(dataset)[1] is False
    edit(dataset, lambda r: json.dumps({**r, "window": {**r["window"], "start_s": 0.0}}))  # a valid edit
    now, edited = pairs_now(dataset)
    assert edited and now != json.loads((dataset / "stats.json").read_text())["dataset_hash"]
    config = load_config(
        TrainConfig,
        resolve("tiny_world_av", "train_config"),
        [f"model={tiny_judges['qwen2_5_omni']}", f"dataset={dataset}", f"output_dir={tmp_path / 'run'}"],
    )
    *_, record = build_training(config)
    assert record["dataset_hash"] == now and record["pairs_edited_since_build"] is True
    assert "changed since `avjudge data build` wrote it" in capsys.readouterr().err


def test_the_card_of_a_judge_trained_on_edited_pairs_flags_the_edit(dataset, tiny_judges):
    from avjudge.rewards.card import judge_card

    tiny = tiny_judges["qwen2_5_omni"]
    summary = {"eval_after": {"overall": {}, "per_type": {}}, "steps": 0}
    built = json.loads((dataset / "stats.json").read_text())["dataset_hash"]
    edit(dataset, lambda r: json.dumps({**r, "window": {**r["window"], "start_s": 0.0}}))
    card = judge_card(dataset, "av", tiny, tiny, summary, clips=1)  # one held-out clip for its reward audits
    assert "pairs edited since the build: the dataset hash is of the pairs as they are now" in card["flags"]
    assert card["dataset"]["dataset_hash"] == pairs_now(dataset)[0] != built
