"""Batch jobs (`avjudge.runtime.jobs`) writing Parquet: the same records as JSONL, resumable, every id once."""

from __future__ import annotations

import numpy as np
import pytest

from avjudge.jsonl import read_jsonl
from avjudge.runtime import read_records, records_log, run_job

pytest.importorskip("pyarrow")


def _measure(chunk: list[dict]) -> list[dict]:
    """Records of the shapes jobs write: nested scores and errors, a failed clip with an error and no score."""
    records = []
    for item in chunk:
        if item["x"] % 5 == 0:
            records.append({"id": item["id"], "score": None, "error": f"clip {item['id']} cannot be read"})
        else:
            scores = {"av": item["x"] / 10} | ({"dnsmos": 3.0} if item["x"] % 2 else {})
            records.append({"id": item["id"], "score": item["x"] / 10, "scores": scores, "errors": {}})
    return records


def _without_nulls(value):
    """A record as JSON holds it: a table has a null where a record lacks a column or a nested key, or where every
    record's object is empty."""
    if isinstance(value, dict):
        kept = {k: _without_nulls(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v is not None and v != {}}
    return value


def test_a_parquet_output_holds_the_records_a_jsonl_one_does_and_resumes_after_a_kill(tmp_path):
    items = [{"id": f"c{i:02d}", "x": i} for i in range(12)]
    run_job(items, tmp_path / "out.jsonl", _measure, chunk_size=4, progress=False)

    def dies_after_two_chunks(chunk):
        if chunk[0]["x"] >= 8:
            raise KeyboardInterrupt  # a run stopped: what it wrote stays
        return _measure(chunk)

    out = tmp_path / "out.parquet"
    with pytest.raises(KeyboardInterrupt):
        run_job(items, out, dies_after_two_chunks, chunk_size=4, progress=False)
    assert not out.exists()  # an incomplete job writes no table
    assert [r["id"] for r in read_jsonl(records_log(out))] == [f"c{i:02d}" for i in range(8)]

    summary = run_job(items, out, _measure, chunk_size=4, progress=False)
    assert summary["resumed_from"] == 8 and summary["errors"] == 3 and summary["output"] == str(out)
    assert not records_log(out).exists()  # the table is complete: its log is gone
    rows = list(read_records(out))
    assert [_without_nulls(r) for r in rows] == [_without_nulls(r) for r in read_jsonl(tmp_path / "out.jsonl")]
    assert rows[0]["error"] == "clip c00 cannot be read" and rows[0]["scores"] is None  # a failed clip: no scores
    assert rows[1]["error"] is None and rows[1]["scores"] == {"av": 0.1, "dnsmos": 3.0}

    more = items + [{"id": "c12", "x": 12}]
    assert run_job(more, out, _measure, chunk_size=4, progress=False)["resumed_from"] == 12
    assert [r["id"] for r in read_records(out)] == [item["id"] for item in more]


def test_records_that_do_not_fit_one_table_keep_their_log_and_name_the_file(tmp_path):
    def mixed(chunk):
        return [{"id": item["id"], "score": 0.5 if item["id"] == "a" else "high"} for item in chunk]

    out = tmp_path / "out.parquet"
    with pytest.raises(ValueError, match=r"out\.parquet: the records do not fit one table"):
        run_job([{"id": "a"}, {"id": "b"}], out, mixed, progress=False)
    assert [r["id"] for r in read_jsonl(records_log(out))] == ["a", "b"]  # nothing scored is lost


def test_a_jobs_progress_moves_per_clip_and_ends_at_the_total(tmp_path, monkeypatch):
    """A metric scores one clip at a time: the bar moves after each clip of a chunk (not once per chunk), and ends
    exactly at the number of items."""
    import avjudge.runtime.jobs as jobs
    from avjudge.media import DecodeNeeds, from_arrays
    from avjudge.scoring import FunctionScorer, Scoring
    from avjudge.scoring.jobs import scoring_job

    moves = []

    class Bar:
        def __init__(self, total, initial, **kwargs):
            self.n = initial

        def update(self, n):
            self.n += n
            moves.append(n)

        def set_postfix_str(self, text, refresh=True):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(jobs, "tqdm", Bar)
    needs = DecodeNeeds(audio=True, sample_rate=8000, channels=1)
    scoring = Scoring([FunctionScorer(name, lambda clip: 1.0, needs) for name in ("a", "b")], workers=1)
    clip = from_arrays(None, None, np.zeros((1, 8000), np.float32), 8000)
    items = [{"id": str(k), "media": clip} for k in range(6)]
    job = scoring_job(scoring, lambda item, scored: {"id": item["id"]})
    run_job(items, tmp_path / "out.jsonl", job, chunk_size=3, progress=True)
    assert moves[:6] == [0.5] * 6  # two scorers, a half-clip each, within the first chunk of 3
    assert sum(moves) == pytest.approx(6)


def _sizes(chunk: list[dict]) -> list[dict]:
    return [{"id": item["id"], "bytes": len(open(item["video"], "rb").read())} for item in chunk]


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_rerun_rescores_what_changed_and_keeps_what_did_not(tmp_path, suffix):
    """A record carries what it was computed from (the file's size and time, the scorers): a file rewritten in place
    or another scorer is scored again, once; what did not change is kept."""
    from avjudge.runtime import media_identity

    items = []
    for name in "abc":
        (tmp_path / f"{name}.mp4").write_bytes(b"x" * 10)
        items.append({"id": name, "video": str(tmp_path / f"{name}.mp4")})
    out = tmp_path / f"scores{suffix}"
    first = run_job(items, out, _sizes, progress=False, identity=media_identity("sizes v1"))
    assert first["rescored_as_changed"] == 0 and first["resumed_from"] == 0
    (tmp_path / "b.mp4").write_bytes(b"garbage, longer than before")
    again = run_job(items, out, _sizes, progress=False, identity=media_identity("sizes v1"))
    assert again["rescored_as_changed"] == 1 and again["resumed_from"] == 2
    records = {r["id"]: r for r in read_records(out)}
    assert len(list(read_records(out))) == 3 and records["b"]["bytes"] == 27 and records["a"]["bytes"] == 10
    other = run_job(items, out, _sizes, progress=False, identity=media_identity("sizes v2"))  # another scorer
    assert other["rescored_as_changed"] == 3 and other["resumed_from"] == 0 and len(list(read_records(out))) == 3


def test_one_writer_per_output(tmp_path, small_world, capsys):
    from avjudge.cli import main
    from avjudge.jsonl import OutputBusy, output_lock

    out = tmp_path / "scores.jsonl"
    with output_lock(out):
        with pytest.raises(OutputBusy, match="being written by another run"):
            run_job([{"id": "a", "x": 1}], out, _measure, progress=False)
        folder = tmp_path / "pairs"
        with output_lock(folder):  # a second `data build` on one folder: exit 2, naming it
            argv = ["data", "build", "--recipe", "world_demo", "--input", str(small_world / "world.jsonl")]
            assert main([*argv, "--out", str(folder), "--no-progress"]) == 2
            assert "pairs is being written by another run (pid" in capsys.readouterr().err
    assert run_job([{"id": "a", "x": 1}], out, _measure, progress=False)["done"] == 1  # released: it runs
