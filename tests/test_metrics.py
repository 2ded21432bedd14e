import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from avjudge.media import MediaClip, encode_audio
from avjudge.metrics import CheckpointMissing, MetricError, get_metric, resolve, verify_all
from avjudge.metrics.checkpoints import load_manifest
from avjudge.perturb.sources import synthesize
from avjudge.scoring.jobs import run_metrics
from avjudge.world import MANIFEST

from .helpers import requires_espeak

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "checkpoints"


@pytest.mark.skipif(not (SHARED / "nisqa" / "nisqa.tar").exists(), reason="needs ../shared/checkpoints (NISQA weights)")
def test_manifest_verifies_the_real_nisqa_weights(tmp_path, monkeypatch):
    assert resolve("nisqa", SHARED)["nisqa.tar"] == SHARED / "nisqa" / "nisqa.tar"
    status = verify_all(SHARED)
    assert status["nisqa"] == status["nisqa_tts"] == "ok"
    assert "syncnet_v2.model is missing" in status["syncnet"]  # entries with no files here say what to get
    # a wrong file under the right name is refused, and the message says how to replace it
    fake = tmp_path / "nisqa"
    fake.mkdir()
    data = bytearray((SHARED / "nisqa" / "nisqa.tar").read_bytes())
    data[100] ^= 0xFF
    (fake / "nisqa.tar").write_bytes(bytes(data))
    with pytest.raises(CheckpointMissing, match="not the expected file.*download weights/nisqa.tar"):
        resolve("nisqa", tmp_path)
    monkeypatch.setenv("AVJUDGE_CHECKPOINTS", str(tmp_path / "empty"))
    with pytest.raises(CheckpointMissing, match=r"empty/nisqa/nisqa.tar is missing.*licence: CC BY-NC-SA"):
        resolve("nisqa")
    assert set(load_manifest()) >= {"nisqa", "nisqa_tts"}


@requires_espeak
def test_dnsmos_real_weights_prefer_clean_speech():
    speech = synthesize("the quick brown fox jumps over the lazy dog and runs away into the forest", "male", 16000)
    speech = np.tile(speech, 2)[: 16000 * 6].astype(np.float32)
    dnsmos = get_metric("dnsmos")
    clean = dnsmos.compute(MediaClip(audio=speech[None], sample_rate=16000, duration=6.0))
    noise = np.random.default_rng(0).standard_normal(len(speech)).astype(np.float32)
    noisy_audio = speech + noise * np.sqrt(np.mean(speech**2) / np.mean(noise**2))  # 0 dB SNR
    noisy_audio *= 0.9 / np.abs(noisy_audio).max()
    noisy = dnsmos.compute(MediaClip(audio=noisy_audio[None], sample_rate=16000, duration=6.0))
    assert set(clean) == {"dnsmos_sig", "dnsmos_bak", "dnsmos_ovrl", "dnsmos_p808"}
    assert all(1.0 <= v <= 5.0 for v in clean.values())
    assert clean["dnsmos_bak"] > noisy["dnsmos_bak"] + 0.5 and clean["dnsmos_ovrl"] > noisy["dnsmos_ovrl"]
    # 48 kHz input is resampled to the metric's 16 kHz from the shared clip
    at48 = dnsmos.compute(MediaClip(audio=np.repeat(speech, 3)[None], sample_rate=48000, duration=6.0))
    assert abs(at48["dnsmos_ovrl"] - clean["dnsmos_ovrl"]) < 0.3
    with pytest.raises(MetricError, match="too short"):
        dnsmos.compute(MediaClip(audio=speech[None, :4000], sample_rate=16000, duration=0.25))


def test_metrics_run_decodes_once_records_errors_and_resumes(small_world, tmp_path):
    clips = tmp_path / "clips"
    clips.mkdir()
    for path in sorted((small_world / "clips").iterdir())[:3]:
        shutil.copy(path, clips / path.name)
    (clips / "broken.mp4").write_text("not a video")
    encode_audio(clips / "blip.wav", np.zeros((1, 2000), np.float32), 16000)
    out = tmp_path / "quality.jsonl"
    summary = run_metrics(["dnsmos"], clips, out, progress=False)
    rows = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert summary["total"] == 5 and summary["errors"] == 1  # the broken file; the short one is a metric error
    assert "not a readable" in rows["broken.mp4"]["error"] and "dnsmos_ovrl" not in rows["broken.mp4"]
    assert "too short" in rows["blip.wav"]["errors"]["dnsmos"] and "dnsmos_ovrl" not in rows["blip.wav"]
    scored = [r for r in rows.values() if "dnsmos_ovrl" in r]
    assert len(scored) == 3 and all(1 <= r["dnsmos_ovrl"] <= 5 for r in scored)
    assert run_metrics(["dnsmos"], clips, out, progress=False)["resumed_from"] == 5
    assert len(out.read_text().splitlines()) == 5
    manifest_rows = run_metrics(["dnsmos"], small_world / MANIFEST, tmp_path / "m.jsonl", progress=False)
    assert manifest_rows["total"] == 6 and manifest_rows["errors"] == 0
    with pytest.raises(MetricError, match="unknown metric"):
        get_metric("vmaf")


needs_nisqa_weights = pytest.mark.skipif(
    not (SHARED / "nisqa" / "nisqa.tar").exists(), reason="needs ../shared/checkpoints (NISQA weights)"
)


@needs_nisqa_weights
@pytest.mark.skipif(
    importlib.util.find_spec("nisqa") is None,
    reason="needs the official NISQA package (pip install --no-deps nisqa==2.0.post2)",
)
def test_nisqa_matches_the_official_implementation():
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "nisqa_parity.py"
    out = subprocess.run(
        [sys.executable, str(script), "--checkpoints", str(SHARED), "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    ).stdout
    report = json.loads(out)
    assert report["nisqa"]["files"] == 25 and set(report["nisqa"]["max_abs_diff"]) == {
        "mos",
        "noi",
        "dis",
        "col",
        "loud",
    }
    assert set(report["nisqa_tts"]["max_abs_diff"]) == {"mos"}
    for name in ("nisqa", "nisqa_tts"):
        # measured: about 1e-6 on every output; a wrong padding mode moves them by about 0.004
        assert all(diff < 1e-4 for diff in report[name]["max_abs_diff"].values()), report[name]["max_abs_diff"]
        low, high = report[name]["official_range"]
        assert high - low > 0.5  # the files span a real range of quality, not one value


@needs_nisqa_weights
@requires_espeak
def test_nisqa_real_weights_rank_noise_and_refuse_short_audio():
    nisqa, tts = get_metric("nisqa", root=SHARED), get_metric("nisqa_tts", root=SHARED)
    assert nisqa.audio.sample_rate is None  # scored at the clip's own rate, never resampled first
    speech = synthesize("the quick brown fox jumps over the lazy dog and runs away into the forest", "female", 22050)
    rng = np.random.default_rng(1)
    results = []
    for snr in (None, 20, 10, 0):
        noise = rng.standard_normal(len(speech)).astype(np.float32)
        audio = speech if snr is None else speech + noise * np.sqrt(np.mean(speech**2) / 10 ** (snr / 10))
        clip = MediaClip(audio=audio[None].astype(np.float32), sample_rate=22050, duration=len(speech) / 22050)
        results.append(nisqa.compute(clip))
    mos = [r["nisqa_mos"] for r in results]
    noisiness = [r["nisqa_noi"] for r in results]
    # espeak's digital silence between words reads as discontinuity, so its clean MOS is low (measured
    # 1.4); from a noise floor of 20 dB SNR down, more noise gives a lower MOS, and any noise a lower
    # noisiness score than none
    assert mos[1] > mos[2] > mos[3] and noisiness[0] > max(noisiness[1:])
    assert set(results[0]) == {"nisqa_mos", "nisqa_noi", "nisqa_dis", "nisqa_col", "nisqa_loud"}
    assert 1.0 <= tts.compute(MediaClip(audio=speech[None], sample_rate=22050, duration=1.0))["nisqa_tts_mos"] <= 5.0
    with pytest.raises(MetricError, match="too short for nisqa"):
        nisqa.compute(MediaClip(audio=speech[None, :2000], sample_rate=22050, duration=0.09))


def test_nisqa_refuses_checkpoints_it_does_not_implement():
    from avjudge.metrics.nisqa import build_network

    with pytest.raises(MetricError, match="td='transformer'"):
        build_network(
            {
                "cnn_model": "adapt",
                "td": "transformer",
                "td_2": "skip",
                "pool": "att",
                "ms_sr": None,
                "double_ended": False,
            }
        )
