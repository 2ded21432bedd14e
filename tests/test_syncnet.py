"""SyncNet lip sync: offset/confidence arithmetic, face tracking, the pipeline's frame/audio alignment with
an oracle encoder on talking heads whose audio delay is known, and the real network with random weights."""

import json

import numpy as np
import pytest

from avjudge.media import MediaClip, encode_video
from avjudge.metrics import CheckpointMissing, MetricError, get_metric
from avjudge.metrics.checkpoints import pin
from avjudge.metrics.faces import FaceTrack, HaarDetector, TrackOptions, crop_track, link_tracks
from avjudge.metrics.syncnet import MFCC_PER_FRAME, WINDOW, build_network, lip_sync, sync_distances, sync_result
from avjudge.perturb.sources import synthesize
from avjudge.scoring.jobs import run_metrics
from avjudge.world.talking_head import MOUTH, talking_head

from .helpers import requires_espeak

pytest.importorskip("cv2")
SENTENCE = "the quick brown fox jumps over the lazy dog and then it runs far away into the dark forest"


def test_offset_and_confidence_from_embeddings_with_a_known_shift():
    rng = np.random.default_rng(0)
    content = rng.standard_normal((80, 16))
    for lag in (0, 4, -7):
        lips = content[20:60]
        audio = content[20 - lag : 60 - lag] + 0.1 * rng.standard_normal((40, 16))  # audio[i + lag] ~ lips[i]
        result = sync_result(sync_distances(lips, audio, vshift=15), vshift=15)
        assert result.offset == -lag  # audio lagging the picture gives a negative offset
        assert result.confidence > 2.0 and result.windows == 40
    # distances worked by hand: offsets -1, 0, +1 of two 1-d windows
    dists = sync_distances(np.array([[0.0], [1.0]]), np.array([[1.0], [3.0]]), vshift=1)
    # lip 0 vs audio (pad, 0, 1) -> |0-0|, |0-1|, |0-3|; lip 1 vs audio (0, 1, pad) -> |1-1|, |1-3|, |1-0|
    assert dists.tolist() == [[0.0, 1.0, 3.0], [0.0, 2.0, 1.0]]
    result = sync_result(dists, vshift=1)  # mean per offset: 0, 1.5, 2
    assert (result.offset, result.min_dist, result.confidence) == (1, 0.0, 1.5)


def test_tracks_bridge_short_gaps_split_long_ones_and_drop_short_ones():
    box = np.array([[10.0, 10.0, 60.0, 60.0]])
    none = np.zeros((0, 4))
    options = TrackOptions(max_gap=5, min_frames=4)
    detections = [box] * 10 + [none] * 3 + [box + 2] * 10 + [none] * 8 + [box] * 6 + [none] * 10 + [box] * 3
    tracks = link_tracks(detections, options)
    assert [(t.frames[0], t.frames[-1]) for t in tracks] == [(0, 22), (31, 36)]  # last 3 frames: too short
    assert np.allclose(tracks[0].boxes[11], box[0] + 1)  # gap interpolated between box and box + 2
    # two faces far apart in one frame stay two tracks
    two = [np.array([[0.0, 0.0, 50.0, 50.0], [200.0, 0.0, 250.0, 50.0]])] * 6
    assert len(link_tracks(two, options)) == 2


def test_crop_is_square_and_reaches_below_the_face():
    frames = np.zeros((1, 200, 200, 3), np.uint8)
    frames[0, 118:128, 90:110] = 255  # a bright patch just below the face box (y 50..110)
    track = FaceTrack(np.array([0]), np.array([[70.0, 50.0, 130.0, 110.0]]))
    crop = crop_track(frames, track, TrackOptions(crop_size=64, smooth=1))
    assert crop.shape == (1, 64, 64, 3)
    rows = np.nonzero(crop[0, :, :, 0].max(axis=1) > 128)[0]
    # the crop spans y 80 - 30 .. 80 + 30 * 1.8 = 50..134 (84 px -> 64): the patch sits at rows 52..60
    assert crop.shape == (1, 64, 64, 3) and rows.min() >= 51 and rows.max() <= 61


class OracleEncoder:
    """Embeddings a perfect SyncNet could give: the mouth's opening over a window, and the audio's energy."""

    @staticmethod
    def unit(x):
        x = x - x.mean(axis=1, keepdims=True)
        return x / (np.linalg.norm(x, axis=1, keepdims=True) + 1e-9)

    def embed_lips(self, crops, n):
        mouth = (np.abs(crops.astype(int) - MOUTH).sum(-1) < 60).mean(axis=(1, 2))
        return self.unit(np.stack([mouth[i : i + WINDOW] for i in range(n)]))

    def embed_audio(self, mfcc, n):
        energy = mfcc[0, : mfcc.shape[1] // MFCC_PER_FRAME * MFCC_PER_FRAME].reshape(-1, MFCC_PER_FRAME).mean(axis=1)
        return self.unit(np.stack([energy[i : i + WINDOW] for i in range(n)]))


@requires_espeak
def test_pipeline_recovers_a_known_audio_delay_with_an_oracle_encoder():
    speech = synthesize(SENTENCE, "male", 16000)
    for delay in (0, 3, -5):
        frames, audio = talking_head(speech, 16000, delay_frames=delay)
        (result,) = lip_sync(frames, audio, OracleEncoder(), HaarDetector())
        assert result.offset == -delay and result.confidence > 0.2
    # a face that starts 1 s into the clip: its track's audio is taken from its own first frame
    frames, audio = talking_head(speech, 16000, delay_frames=2)
    frames[:25] = frames[0, 0, 0]
    (result,) = lip_sync(frames, audio, OracleEncoder(), HaarDetector())
    assert result.offset == -2


@pytest.fixture
def random_syncnet(tmp_path):
    import torch

    torch.manual_seed(0)
    folder = tmp_path / "ckpt" / "syncnet"
    folder.mkdir(parents=True)
    torch.save(build_network().state_dict(), folder / "syncnet_v2.model")
    return tmp_path / "ckpt"


def test_syncnet_checkpoint_must_be_pinned_and_stay_the_same(random_syncnet, capsys):
    from avjudge.cli import main

    with pytest.raises(CheckpointMissing, match="no sha256.*avjudge checkpoints pin syncnet"):
        get_metric("syncnet", root=random_syncnet)
    assert main(["checkpoints", "pin", "syncnet", "--root", str(random_syncnet)]) == 0
    size = (random_syncnet / "syncnet" / "syncnet_v2.model").stat().st_size
    assert f"syncnet/syncnet_v2.model: {size:,} bytes" in capsys.readouterr().out
    get_metric("syncnet", root=random_syncnet)
    assert main(["checkpoints", "pin", "nisqa", "--root", str(random_syncnet)]) == 2  # pinned by the manifest
    assert "nothing to record" in capsys.readouterr().err
    with open(random_syncnet / "syncnet" / "syncnet_v2.model", "ab") as f:
        f.write(b"\0")
    with pytest.raises(CheckpointMissing, match="not the expected file.*pinned in"):
        get_metric("syncnet", root=random_syncnet)


def test_syncnet_refuses_a_pickled_model(random_syncnet):
    import torch

    torch.save(torch.nn.Linear(2, 2), random_syncnet / "syncnet" / "syncnet_v2.model")  # a module: pickled code
    pin("syncnet", random_syncnet)
    with pytest.raises(MetricError, match="not a plain state dict"):
        get_metric("syncnet", root=random_syncnet)
    state = build_network().state_dict()
    del state["netfclip.3.bias"]  # a network of another shape
    torch.save(state, random_syncnet / "syncnet" / "syncnet_v2.model")
    pin("syncnet", random_syncnet)
    with pytest.raises(MetricError, match=r"(?si)not a SyncNet v2 state dict.*missing.*netfclip.3.bias"):
        get_metric("syncnet", root=random_syncnet)


@requires_espeak
def test_syncnet_random_weights_score_a_face_and_report_no_face(random_syncnet, small_world, tmp_path, monkeypatch):
    monkeypatch.setenv("AVJUDGE_CHECKPOINTS", str(random_syncnet))
    pin("syncnet")
    speech = synthesize("hello there my friend how are you today", "female", 16000)
    frames, audio = talking_head(speech, 16000, fps=30.0)  # a 30 fps file: the metric samples it at 25
    clips = tmp_path / "clips"
    clips.mkdir()
    encode_video(clips / "head.mp4", frames, 30.0, audio[None], 16000)
    world_clip = sorted((small_world / "clips").iterdir())[0]
    (clips / "shapes.mp4").write_bytes(world_clip.read_bytes())
    run_metrics(["syncnet"], clips, tmp_path / "sync.jsonl", progress=False)
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "sync.jsonl").read_text().splitlines())}
    head = rows["head.mp4"]
    assert set(head) >= {"syncnet_confidence", "syncnet_min_dist", "syncnet_offset", "syncnet_faces"}
    assert head["syncnet_faces"] == 1 and -15 <= head["syncnet_offset"] <= 15 and head["syncnet_confidence"] >= 0
    assert "no face found" in rows["shapes.mp4"]["errors"]["syncnet"] and "syncnet_confidence" not in rows["shapes.mp4"]
    with pytest.raises(MetricError, match="no audio"):
        get_metric("syncnet").compute(
            MediaClip(frames=frames[:10], fps=25.0, timestamps=np.arange(10) / 25.0, duration=0.4)
        )
