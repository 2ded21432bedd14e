"""The demo's world check, its held-out examples and its HTML page."""

import shutil

from avjudge.demo.run import verify_world, world_line
from avjudge.jsonl import read_jsonl
from avjudge.world import MANIFEST


def test_world_verification_checks_every_clip_in_parallel_and_names_the_one_that_fails(small_world, tmp_path):
    world = tmp_path / "world"
    shutil.copytree(small_world, world)
    records = list(read_jsonl(world / MANIFEST))
    (world / records[2]["video"]).write_bytes(b"not a video")
    checks = verify_world(world, progress=False, workers=2)
    assert checks == verify_world(world, progress=False, workers=1)
    assert checks["clips"] == len(records) and checks["clips_ok"] == len(records) - 1
    assert [e["id"] for e in checks["errors"]] == [records[2]["id"]]
    assert checks["visual_found"] == checks["visual_events"] > 0


def test_the_world_line_counts_speaking_clips_or_says_how_to_get_speech():
    summary, checks = {"clips": 240, "events": 925, "with_speech": 117}, {"clips": 240, "clips_ok": 239}
    with_tts = world_line(summary, checks, speech_available=True)
    assert "240 clips, 925 sound events, 117 with speech" in with_tts and "239/240 clips match" in with_tts
    without = world_line({**summary, "with_speech": 0}, checks, speech_available=False)
    assert "no speech" in without and "apt-get install -y espeak-ng" in without and "with speech" not in without
