"""PANNs sound-event tags: windows, the four groups at the top of AudioSet's ontology, shares that add up to 1, and
the metric end to end with random Cnn14 weights and a scripted tagger."""

from __future__ import annotations

import json

import numpy as np
import pytest

from avjudge.media import from_arrays
from avjudge.metrics import MetricError, get_metric
from avjudge.metrics.checkpoints import pin
from avjudge.metrics.panns_tags import GROUPS, group_indices, window_groups, windows_of

torch = pytest.importorskip("torch")

SPEECH, MUSIC, SILENCE = 0, 137, 500  # their rows in AudioSet's class_labels_indices.csv


def write_labels(path, names: dict[int, str] | None = None, count: int = 527) -> None:
    names = names or {SPEECH: "Speech", MUSIC: "Music", SILENCE: "Silence"}
    rows = ["index,mid,display_name"] + [f'{k},/m/{k},"{names.get(k, f"class {k}")}"' for k in range(count)]
    path.write_text("\n".join(rows) + "\n")


def test_windows_leave_out_a_short_tail_and_keep_a_short_clip_whole():
    assert [len(w) for w in windows_of(np.arange(34.0), 10)] == [10, 10, 10]  # a tail under half a window goes
    assert [len(w) for w in windows_of(np.arange(35.0), 10)] == [10, 10, 10, 5]  # half a window is one
    assert [len(w) for w in windows_of(np.arange(7.0), 10)] == [7]
    np.testing.assert_array_equal(windows_of(np.arange(35.0), 10)[1], np.arange(10, 20))


def test_each_window_goes_to_the_largest_of_speech_music_other_sound_and_silence(tmp_path):
    write_labels(tmp_path / "labels.csv")
    indices = group_indices(tmp_path / "labels.csv")
    assert indices == {"speech": SPEECH, "music": MUSIC, "silence": SILENCE}
    p = np.full((4, 527), 0.01)
    p[0, SPEECH] = 0.9  # speech
    p[1, MUSIC], p[1, 300] = 0.6, 0.5  # music over another sound
    p[2, 300], p[2, MUSIC] = 0.7, 0.6  # another sound (noise) over music
    p[3, SILENCE] = 0.4
    assert [GROUPS[g] for g in window_groups(p, indices)] == ["speech", "music", "noise", "silence"]
    write_labels(tmp_path / "bad.csv", {SPEECH: "Speech", MUSIC: "Music"})
    with pytest.raises(MetricError, match=r"has no class \['Silence'\]"):
        group_indices(tmp_path / "bad.csv")
    write_labels(tmp_path / "short.csv", count=10)
    with pytest.raises(MetricError, match="names 10 classes"):
        group_indices(tmp_path / "short.csv")


class LoudnessTagger:
    """Scripted tags: a silent window is Silence, a tone Music, white noise another sound (its spectral flatness
    tells the tone from the noise)."""

    def features(self, windows):
        out = []
        for w in windows:
            logits = np.full(527, -8.0, np.float32)
            spectrum = np.abs(np.fft.rfft(w)) + 1e-12
            flatness = np.exp(np.log(spectrum).mean()) / spectrum.mean()
            if np.sqrt(np.mean(w**2)) < 1e-3:
                logits[SILENCE] = 4.0
            elif flatness < 0.1:
                logits[MUSIC] = 4.0
            else:
                logits[300] = 4.0
            out.append({"logits": logits})
        return out


@pytest.fixture
def tags_checkpoints(tmp_path, monkeypatch):
    from avjudge.metrics.panns import build_cnn14

    torch.manual_seed(0)
    root = tmp_path / "ckpt"
    (root / "panns").mkdir(parents=True)
    torch.save({"model": build_cnn14().state_dict()}, root / "panns" / "Cnn14_16k_mAP=0.438.pth")
    (root / "audioset").mkdir()
    write_labels(root / "audioset" / "class_labels_indices.csv")
    pin("panns_cnn14_16k", root)
    pin("audioset_labels", root)
    monkeypatch.setenv("AVJUDGE_CHECKPOINTS", str(root))
    return root


def test_shares_of_a_clip_of_silence_a_tone_and_noise(tags_checkpoints, tmp_path):
    rate = 16000
    rng = np.random.default_rng(0)
    t = np.arange(2 * rate) / rate
    audio = np.concatenate(
        [
            np.zeros(rate),
            0.5 * np.sin(2 * np.pi * 440 * t),
            np.clip(0.3 * rng.standard_normal(rate), -1, 1),
            np.zeros(rate // 4),
        ]
    ).astype(np.float32)  # 1 s silence, 2 s tone, 1 s noise, a 0.25 s tail left out
    metric = get_metric("panns_tags", device="cpu")
    real = metric.compute(from_arrays(None, None, audio[None], rate))  # random Cnn14: shares, not their values
    assert real["panns_windows"] == 4 and sum(real[f"panns_{g}_share"] for g in GROUPS) == pytest.approx(1.0)
    metric.features = LoudnessTagger()
    shares = metric.compute(from_arrays(None, None, np.stack([audio, audio]), rate))  # stereo: averaged first
    assert shares == {"panns_speech_share": 0.0, "panns_music_share": 0.5, "panns_noise_share": 0.25,
                      "panns_silence_share": 0.25, "panns_windows": 4.0}  # fmt: skip
    with pytest.raises(MetricError, match="too short for panns_tags"):
        metric.compute(from_arrays(None, None, audio[None, :4000], rate))

    from avjudge.media import encode_video
    from avjudge.scoring.jobs import run_metrics

    encode_video(tmp_path / "clip.mp4", np.zeros((50, 32, 32, 3), np.uint8), 25.0, audio[None, : 2 * rate], rate)
    run_metrics(["panns_tags"], [str(tmp_path / "clip.mp4")], tmp_path / "tags.jsonl", progress=False)
    (row,) = [json.loads(line) for line in (tmp_path / "tags.jsonl").read_text().splitlines()]
    assert row["panns_windows"] == 2 and sum(row[f"panns_{g}_share"] for g in GROUPS) == pytest.approx(1.0)

    from avjudge.filter import parse_rules, run_filter
    from avjudge.jsonl import read_jsonl
    from avjudge.scoring.clip_scorer import ClipScorer
    from avjudge.scoring.dimensions import parse_dimensions

    manifest = tmp_path / "clips.jsonl"
    manifest.write_text(json.dumps({"id": "clip", "video": str(tmp_path / "clip.mp4")}) + "\n")
    rules = parse_rules("speech_share<=1,silence_share>=0")
    run_filter(manifest, rules, tmp_path / "filter", ClipScorer(parse_dimensions("speech_share,silence_share"), {}),
               progress=False)  # fmt: skip
    (kept,) = read_jsonl(tmp_path / "filter" / "kept.jsonl")
    assert kept["scores"] == {"speech_share": row["panns_speech_share"], "silence_share": row["panns_silence_share"]}
