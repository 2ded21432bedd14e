import json
from pathlib import Path

import numpy as np
import pytest

from avjudge.media import MediaError, decode, encode_audio, encode_video, probe, replace_audio
from avjudge.media.clip import file_hash
from avjudge.world import WorldConfig
from avjudge.world.render import render_frames
from avjudge.world.scene import sample_scene
from avjudge.world.verify import detect_onsets

from .helpers import (
    click_track,
    colour_of_frame,
    coloured_frames,
    ffmpeg,
    ffmpeg_audio,
    ffmpeg_rgb_frames,
    remux_faststart,
    requires_ffmpeg,
    write_odd_size_video,
    write_vfr_video,
)

FPS, SR, DUR = 25, 16000, 2.0
ONSETS = [0.13, 0.5, 0.91, 1.37, 1.8]


@pytest.fixture(scope="module")
def clip_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("media") / "clip.mp4"
    encode_video(path, coloured_frames(int(DUR * FPS), 96, 64), FPS, click_track(ONSETS, DUR, SR), SR)
    return path


@pytest.mark.parametrize("ext", [".mp4", ".mkv", ".mov", ".webm"])
def test_frames_and_onsets_are_accurate_in_every_container(tmp_path, ext):
    path = tmp_path / f"clip{ext}"
    encode_video(path, coloured_frames(int(DUR * FPS), 96, 64), FPS, click_track(ONSETS, DUR, SR), SR)
    clip = decode(path)
    assert clip.num_frames == DUR * FPS
    # frame k has its known colour and its timestamp within one frame of k / fps
    for k, (frame, t) in enumerate(zip(clip.frames, clip.timestamps)):
        assert np.abs(frame.reshape(-1, 3).mean(0) - colour_of_frame(k)).max() < 6
        assert abs(t - k / FPS) < 1 / FPS
    found = detect_onsets(clip.audio[0], clip.sample_rate)
    assert len(found) == len(ONSETS)
    assert np.abs(found - ONSETS).max() < 0.005


def test_requested_fps_size_rate_channels_and_window(clip_path):
    clip = decode(clip_path, fps=10, size=(48, 32), sample_rate=8000, channels=2, start=0.5, end=1.5)
    assert clip.frames.shape == (10, 32, 48, 3)
    np.testing.assert_allclose(clip.timestamps, 0.5 + np.arange(10) / 10)
    # the frame on screen at t is frame floor(t * 25)
    for frame, t in zip(clip.frames, clip.timestamps):
        k = int(np.floor(t * FPS + 1e-6))
        assert np.abs(frame.reshape(-1, 3).mean(0) - colour_of_frame(k)).max() < 6
    assert clip.audio.shape == (2, 8000) and clip.sample_rate == 8000
    found = detect_onsets(clip.audio[0], 8000) + 0.5
    expected = [t for t in ONSETS if 0.5 <= t < 1.5]
    assert np.abs(found - expected).max() < 0.005


def test_streams_can_be_skipped_and_hash_is_of_the_file(clip_path):
    clip = decode(clip_path, audio=False)
    assert clip.audio is None and clip.frames is not None and clip.content_hash is None  # hashing is opt-in
    assert decode(clip_path, compute_hash=True).content_hash == file_hash(clip_path)
    audio_only = decode(clip_path, video=False)
    assert audio_only.frames is None and audio_only.audio.shape == (1, int(DUR * SR))


@pytest.mark.parametrize("rate", [8000, 11025, 22050, 44100, 48000, 96000])
def test_sample_rates_from_8k_to_96k(tmp_path, rate):
    path = tmp_path / "a.flac"
    encode_audio(path, click_track(ONSETS, DUR, rate), rate)
    clip = decode(path, video=False)
    assert clip.sample_rate == rate and clip.audio.shape == (1, int(DUR * rate))
    assert np.abs(detect_onsets(clip.audio[0], rate) - ONSETS).max() < 0.005
    at16k = decode(path, video=False, sample_rate=16000)
    assert at16k.audio.shape == (1, int(DUR * 16000))
    assert np.abs(detect_onsets(at16k.audio[0], 16000) - ONSETS).max() < 0.005


def test_mono_stereo_and_51_layouts(tmp_path):
    n = int(DUR * SR)
    t = np.arange(n) / SR
    # 5.1 with a distinct tone per channel: FL FR FC LFE BL BR
    freqs = [300, 500, 700, 60, 900, 1100]
    six = np.stack([0.1 * np.sin(2 * np.pi * f * t) for f in freqs]).astype(np.float32)
    encode_audio(tmp_path / "six.wav", six, SR)
    native = decode(tmp_path / "six.wav", video=False)
    assert native.channels == 6
    stereo = decode(tmp_path / "six.wav", video=False, channels=2)
    spectrum_l = np.abs(np.fft.rfft(stereo.audio[0]))
    spectrum_r = np.abs(np.fft.rfft(stereo.audio[1]))
    bin_of = lambda f: int(round(f * DUR))  # noqa: E731
    # left has FL and BL, not FR or BR; the centre goes to both; LFE is dropped
    assert spectrum_l[bin_of(300)] > 50 * spectrum_l[bin_of(500)]
    assert spectrum_l[bin_of(900)] > 50 * spectrum_l[bin_of(1100)]
    assert spectrum_r[bin_of(1100)] > 50 * spectrum_r[bin_of(900)]
    assert spectrum_l[bin_of(700)] > 0.3 * spectrum_l[bin_of(300)]
    assert spectrum_l[bin_of(60)] < 0.01 * spectrum_l[bin_of(300)]
    mono = decode(tmp_path / "six.wav", video=False, channels=1)
    np.testing.assert_allclose(mono.audio[0], stereo.audio.mean(0), atol=1e-6)
    encode_audio(tmp_path / "mono.wav", six[:1], SR)
    up = decode(tmp_path / "mono.wav", video=False, channels=2)
    np.testing.assert_array_equal(up.audio[0], up.audio[1])


def test_variable_frame_rate_needs_fps(tmp_path):
    path = tmp_path / "vfr.mp4"
    intervals = [40, 80] * 10
    write_vfr_video(path, intervals)
    with pytest.raises(MediaError, match="variable frame rate.*fps") as err:
        decode(path, audio=False)
    assert str(path) in str(err.value)
    clip = decode(path, audio=False, fps=25)
    starts = np.cumsum([0] + intervals[:-1]) / 1000
    for frame, t in zip(clip.frames, clip.timestamps):
        k = int(np.searchsorted(starts, t + 1e-6) - 1)
        assert np.abs(frame.reshape(-1, 3).mean(0) - colour_of_frame(k)).max() < 6


def test_odd_sizes_decode_and_resize(tmp_path):
    path = tmp_path / "odd.mkv"
    write_odd_size_video(path, 67, 45)
    clip = decode(path, audio=False)
    assert clip.size == (67, 45)
    assert decode(path, audio=False, size=(33, 21)).size == (33, 21)
    with pytest.raises(ValueError, match="even width and height"):
        encode_video(tmp_path / "bad.mp4", np.zeros((2, 45, 67, 3), np.uint8), 25)


@requires_ffmpeg
@pytest.mark.parametrize("rotation", [90, 180, 270])
def test_rotation_metadata_is_applied_like_ffmpeg(tmp_path, rotation):
    frames = np.zeros((5, 48, 80, 3), np.uint8)
    frames[:, :16, :16] = (250, 20, 20)  # a red top-left corner fixes the orientation
    encode_video(tmp_path / "plain.mp4", frames, 25)
    path = tmp_path / "rot.mp4"
    ffmpeg("-i", str(tmp_path / "plain.mp4"), "-c", "copy", "-metadata:s:v", f"rotate={rotation}", str(path))
    reference = ffmpeg_rgb_frames(path)
    clip = decode(path, audio=False)
    assert clip.frames.shape == reference.shape
    assert np.abs(clip.frames.astype(int) - reference).mean() < 2
    info = probe(path)
    assert (info.video.width, info.video.height) == (clip.size if rotation != 180 else (80, 48))
    resized = decode(path, audio=False, size=(24, 40) if rotation != 180 else (40, 24))
    assert resized.size == ((24, 40) if rotation != 180 else (40, 24))


def test_missing_streams_are_named(tmp_path, clip_path):
    encode_audio(tmp_path / "a.wav", click_track(ONSETS, DUR, SR), SR)
    with pytest.raises(MediaError, match="has no video stream; decode with video=False") as err:
        decode(tmp_path / "a.wav")
    assert "a.wav" in str(err.value)
    encode_video(tmp_path / "silent.mp4", coloured_frames(10, 32, 32), 25)
    with pytest.raises(MediaError, match="has no audio stream; decode with audio=False"):
        decode(tmp_path / "silent.mp4")
    assert probe(tmp_path / "silent.mp4").audio is None


@pytest.fixture(scope="module")
def noisy_faststart_path(tmp_path_factory):
    """Random frames (large picture packets) with the index at the front: cuts and corruption hit data."""
    folder = tmp_path_factory.mktemp("noisy")
    frames = np.random.default_rng(1).integers(0, 255, (100, 64, 96, 3), dtype=np.uint8)
    encode_video(folder / "plain.mp4", frames, FPS, click_track(ONSETS, 4.0, SR), SR)
    remux_faststart(folder / "plain.mp4", folder / "fast.mp4")
    return folder / "fast.mp4"


def _corrupt(data: bytes, lo: int, hi: int) -> bytes:
    out = bytearray(data)
    out[lo:hi] = np.random.default_rng(0).integers(0, 256, hi - lo, dtype=np.uint8).tobytes()
    return bytes(out)


@pytest.mark.parametrize(
    "case",
    ["empty", "text", "missing", "directory", "truncated_index", "truncated_data", "corrupt_header", "corrupt_data"],
)
def test_bad_files_raise_media_error_naming_the_file(tmp_path, clip_path, noisy_faststart_path, case):
    path = tmp_path / "bad.mp4"
    data = clip_path.read_bytes()
    fast = noisy_faststart_path.read_bytes()
    problem = {
        "empty": "empty",
        "text": "not a readable",
        "missing": "no such file",
        "directory": "directory",
        "truncated_index": "not a readable",
        "truncated_data": "truncated",
        "corrupt_header": "not a readable",
        "corrupt_data": "corrupt data near",
    }[case]
    if case == "empty":
        path.write_bytes(b"")
    elif case == "text":
        path.write_text("this is not a video, just text renamed to .mp4\n" * 20)
    elif case == "directory":
        path.mkdir()
    elif case == "truncated_index":  # the index sits at the end of the file and is cut off
        path.write_bytes(data[: len(data) // 2])
    elif case == "truncated_data":  # the index survives, the second half of the data does not
        path.write_bytes(fast[: len(fast) // 2])
    elif case == "corrupt_header":
        path.write_bytes(b"\x00" * 64 + data[64:])
    elif case == "corrupt_data":
        start = fast.find(b"mdat")
        third = (len(fast) - start) // 3
        path.write_bytes(_corrupt(fast, start + third, start + 2 * third))
    for fps in (None, 1.0):  # native frames, and a judge's rate that decodes only the groups of pictures it needs
        # at 1 fps slice threads decode the cut-off last packet and name it as corrupt data, not as a short stream
        expected = problem if fps is None or case != "truncated_data" else f"{problem}|corrupt data near"
        with pytest.raises(MediaError, match=expected) as err:
            decode(path, fps=fps)
        assert str(path) in str(err.value)
    if case not in ("truncated_data", "corrupt_data"):  # probe reads headers only
        with pytest.raises(MediaError):
            probe(path)


def test_replace_audio_keeps_picture_packets(tmp_path, clip_path):
    new_onsets = [0.25, 1.25]
    out = replace_audio(clip_path, click_track(new_onsets, DUR, SR), SR, tmp_path / "swapped.mp4")
    import av

    def video_packets(p):
        with av.open(str(p)) as c:
            return [bytes(pk) for pk in c.demux(c.streams.video[0]) if pk.dts is not None]

    assert video_packets(out) == video_packets(clip_path)
    clip = decode(out)
    assert np.abs(detect_onsets(clip.audio[0], SR) - new_onsets).max() < 0.005


def test_probe_reports_streams(clip_path):
    info = probe(clip_path)
    assert info.video.width == 96 and info.video.height == 64 and info.video.fps == 25
    assert info.audio.sample_rate == SR and info.audio.channels == 1
    assert abs(info.duration - DUR) < 0.05
    json.dumps(info.to_dict())


@pytest.mark.parametrize("ext", [".mp4", ".mov", ".mkv"])
def test_the_same_frames_encode_to_the_same_pictures_and_mp4_bytes(tmp_path, ext):
    # a world clip (x264's macroblock tree gave a different picture one encode in two on these frames); Matroska
    # writes the time of muxing, so only its pictures repeat, while the world's mp4s repeat byte for byte
    scene = sample_scene(WorldConfig(seed=0, duration=4.0, width=192, height=192, ambience_prob=1.0), 7)
    frames = np.stack(list(render_frames(scene)))
    paths = [encode_video(tmp_path / f"{i}{ext}", frames, scene.fps) for i in range(4)]
    first = decode(paths[0], audio=False).frames
    assert all(np.array_equal(decode(p, audio=False).frames, first) for p in paths[1:])
    if ext != ".mkv":
        assert len({file_hash(p) for p in paths}) == 1


def test_media_written_is_as_readable_as_any_file_the_user_writes(tmp_path):
    """A temporary file renamed into place kept mkstemp's 0600: world clips, WAVs and negatives were readable by
    their owner alone, beside JSON the umask made 0644."""
    import stat

    from avjudge.media import encode_audio

    video = encode_video(tmp_path / "x.mp4", coloured_frames(3, 32, 32), 25)
    audio = encode_audio(tmp_path / "x.wav", np.zeros((1, 160), np.float32), SR)
    (tmp_path / "x.json").write_text("{}")
    expected = stat.S_IMODE((tmp_path / "x.json").stat().st_mode)
    assert expected & 0o044  # the umask under test lets others read
    for path in (video, audio):
        assert stat.S_IMODE(Path(path).stat().st_mode) == expected


def test_encode_is_atomic_on_failure(tmp_path):
    target = tmp_path / "x.mp4"
    with pytest.raises(ValueError):
        encode_video(target, coloured_frames(3, 32, 32), 25, np.full((1, 100), np.nan, np.float32), SR)
    assert list(tmp_path.iterdir()) == []


def _write_gop_video(path, keyint: int, bframes: int, open_gop: bool, frames: int = 60, fps: int = 24):
    """Distinct noisy frames (every picture differs, so a wrong one shows) with a keyframe every ``keyint``."""
    import av

    rng = np.random.default_rng(keyint)
    base = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        stream.options = {
            "x264-params": f"keyint={keyint}:min-keyint={keyint}:scenecut=0:bframes={bframes}"
            + (":open-gop=1" if open_gop else "")
        }
        for i in range(frames):
            picture = np.roll(base, 3 * i, axis=1) // 2 + np.asarray(colour_of_frame(i), np.uint8) // 2
            frame = av.VideoFrame.from_ndarray(picture.astype(np.uint8), format="rgb24")
            frame.pts = i
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return path


@pytest.mark.parametrize(
    "keyint, bframes, open_gop", [(1, 0, False), (5, 2, False), (12, 3, True), (24, 3, False), (250, 3, False)]
)
@pytest.mark.parametrize("fps, start, end", [(1.0, 0.0, None), (2.0, 0.3, None), (0.5, 0.0, None), (3.0, 0.5, 2.0)])
def test_sampled_frames_decode_only_the_groups_they_need(
    tmp_path, monkeypatch, keyint, bframes, open_gop, fps, start, end
):
    import importlib

    decode_module = importlib.import_module("avjudge.media.decode")

    path = _write_gop_video(tmp_path / "gop.mp4", keyint, bframes, open_gop)
    settled = []

    class CountingGate(decode_module._KeyframeGate):
        def _settle(self, next_keyframe):
            decoded = self.sampler.wants_before(next_keyframe)
            settled.append(decoded)
            yield from super()._settle(next_keyframe)

    monkeypatch.setattr(decode_module, "_KeyframeGate", CountingGate)
    every = decode(path, video=True, audio=False, fps=fps, start=start, end=end, skip_unneeded=False)
    gated = decode(path, video=True, audio=False, fps=fps, start=start, end=end)
    np.testing.assert_array_equal(gated.timestamps, every.timestamps)
    np.testing.assert_array_equal(gated.frames, every.frames)
    if keyint <= 12 and fps <= 1.0:  # groups shorter than the step between sampled frames: some are never decoded
        assert not all(settled)


@requires_ffmpeg
def test_audio_to_the_streams_end_is_every_sample_ffmpegs_command_line_writes(clip_path):
    from avjudge.media import DecodeNeeds, load_clip, merge_needs

    expected, rate = ffmpeg_audio(clip_path)
    assert rate == SR
    assert expected.shape[1] > DUR * SR  # the AAC stream's last frame runs past the declared 2 s
    cut = decode(clip_path, video=False)
    assert cut.audio.shape == (1, int(DUR * SR))
    whole = decode(clip_path, video=False, audio_to_end=True)
    np.testing.assert_allclose(whole.audio, expected, atol=1e-6)
    np.testing.assert_array_equal(whole.audio[:, : cut.audio.shape[1]], cut.audio)
    doubled = decode(clip_path, video=False, audio_to_end=True, sample_rate=2 * SR)
    assert doubled.audio.shape[1] == 2 * expected.shape[1]
    assert decode(clip_path, video=False, audio_to_end=True, end=1.0).audio.shape[1] == SR  # a window: cut
    # a plan reads to the end only where every consumer of the sound does
    to_end = DecodeNeeds(audio=True, audio_to_end=True)
    assert load_clip(str(clip_path), merge_needs([to_end, to_end])).audio.shape == expected.shape
    assert load_clip(str(clip_path), merge_needs([to_end, DecodeNeeds(audio=True)])).audio.shape == cut.audio.shape
