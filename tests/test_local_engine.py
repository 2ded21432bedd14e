"""The local engine runs a `ClipJob`'s decoding of the next chunk while the current chunk scores."""

from __future__ import annotations

import threading
import time

import pytest

from avjudge.jsonl import read_jsonl
from avjudge.runtime import run_job
from avjudge.runtime.chunks import ClipJob


class Recorder:
    """The two stages of a clip job of items ``"0"``, ``"1"``...: decoding marks each item (and raises for the ids in
    ``broken``); scoring a chunk waits, up to 10 s, for the next chunk's decoding to begin, and notes whether it
    did."""

    def __init__(self, count: int, chunk_size: int, broken: frozenset = frozenset()):
        self.began = {str(i): threading.Event() for i in range(count)}
        self.chunk_size, self.broken, self.overlapped = chunk_size, broken, []

    def decode(self, chunk):
        self.began[chunk[0]["id"]].set()
        if any(item["id"] in self.broken for item in chunk):
            raise ValueError("this clip breaks the decoder")
        return [item | {"clip": "decoded"} for item in chunk]

    def score(self, chunk):
        following = str(int(chunk[0]["id"]) + self.chunk_size)
        if following in self.began and not self.broken:
            self.overlapped.append(self.began[following].wait(timeout=10))
        return [{"id": item["id"], "decoded": item["clip"] == "decoded"} for item in chunk]


def test_the_next_chunk_decodes_while_this_one_scores(tmp_path):
    job = Recorder(count=6, chunk_size=2)
    summary = run_job([{"id": str(i)} for i in range(6)], tmp_path / "out.jsonl", ClipJob(job.decode, job.score),
                      chunk_size=2, progress=False)  # fmt: skip
    # every chunk but the last found the next one's decoding begun; run one after the other, each would wait 10 s
    assert job.overlapped == [True, True]
    assert summary["done"] == 6 and all(r["decoded"] for r in read_jsonl(tmp_path / "out.jsonl"))


def test_a_chunk_whose_decoding_raises_is_redone_item_by_item(tmp_path):
    job = Recorder(count=6, chunk_size=2, broken=frozenset({"3"}))
    run_job([{"id": str(i)} for i in range(6)], tmp_path / "out.jsonl", ClipJob(job.decode, job.score), chunk_size=2,
            progress=False)  # fmt: skip
    records = {r["id"]: r for r in read_jsonl(tmp_path / "out.jsonl")}
    assert "breaks the decoder" in records["3"]["error"]
    assert all(records[i]["decoded"] for i in ("0", "1", "2", "4", "5"))  # its chunk-mate "2" too


def _sleeping_job(decode_s: float, score_s: float) -> ClipJob:
    """A clip job whose stages sleep (as a GPU's forward pass leaves the CPU free) for the given seconds a chunk."""

    def decode(chunk):
        time.sleep(decode_s)
        return chunk

    def score(chunk):
        time.sleep(score_s)
        return [{"id": item["id"]} for item in chunk]

    return ClipJob(decode, score)


@pytest.mark.parametrize(("decode_s", "score_s", "bound_by"), [(0.1, 0.3, "score"), (0.3, 0.1, "decode")])
def test_the_summary_says_each_stages_busy_time_and_which_bounds_the_run(tmp_path, decode_s, score_s, bound_by):
    chunks = 6
    items = [{"id": str(i)} for i in range(2 * chunks)]
    summary = run_job(items, tmp_path / "out.jsonl", _sleeping_job(decode_s, score_s), chunk_size=2, progress=False)
    stages = summary["stages"]
    assert stages["bound_by"] == bound_by
    assert stages["decode_busy_s"] == pytest.approx(chunks * decode_s, abs=0.1)
    assert stages["score_busy_s"] == pytest.approx(chunks * score_s, abs=0.1)
    # the stages overlap: the run takes about the busier stage plus one chunk of the other, not their sum
    wall = summary["seconds_this_run"]
    assert wall < stages["decode_busy_s"] + stages["score_busy_s"] - 0.3
    # a process that is not a clip job has no stages to time
    plain = run_job(items, tmp_path / "plain.jsonl", lambda chunk: [{"id": i["id"]} for i in chunk], progress=False)
    assert "stages" not in plain


def test_the_progress_bar_names_the_stage_that_bounds_the_run(tmp_path, capsys):
    items = [{"id": str(i)} for i in range(4)]
    run_job(items, tmp_path / "out.jsonl", _sleeping_job(0.0, 0.2), chunk_size=2, progress=True)
    assert "decode 0s, score 0s*" in capsys.readouterr().err
