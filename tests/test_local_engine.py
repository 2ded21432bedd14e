"""The local engine runs a `ClipJob`'s decoding of the next chunk while the current chunk scores."""

from __future__ import annotations

import threading

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
