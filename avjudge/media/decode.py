"""Decode a file once into a MediaClip: frames at native or requested fps and size, audio at
native or requested rate and channel count, over a time window [start, end), within a decode budget
(`avjudge.media.budget`) checked from the headers first."""

from __future__ import annotations

import math
from collections.abc import Iterator

import av
import numpy as np
from scipy.signal import resample_poly

from . import threads as ffmpeg_threads
from ._open import Encoded, media_name, open_media
from .budget import DecodeBudget, fit_pixels, fitted_size
from .clip import MediaClip, bytes_hash, file_hash
from .errors import MediaError
from .probe import container_duration, stream_end, stream_origin

# Frame intervals differing from the median by more than this fraction mean variable frame rate.
VFR_TOLERANCE = 0.05
# Decoded content may end this much before the declared duration before we call the file truncated.
TRUNCATION_TOLERANCE_S = 0.25

_ITU_SIDE = 1.0 / math.sqrt(2.0)
# Gains of each source channel into (left, right) for a stereo downmix (ITU-R BS.775 style; LFE dropped).
_STEREO_GAINS = {
    "FL": (1.0, 0.0),
    "FR": (0.0, 1.0),
    "FC": (_ITU_SIDE, _ITU_SIDE),
    "LFE": (0.0, 0.0),
    "BL": (_ITU_SIDE, 0.0),
    "BR": (0.0, _ITU_SIDE),
    "SL": (_ITU_SIDE, 0.0),
    "SR": (0.0, _ITU_SIDE),
    "BC": (0.5, 0.5),
    "FLC": (1.0, 0.0),
    "FRC": (0.0, 1.0),
    "TC": (0.5, 0.5),
}
_INT_SCALE = {np.dtype(np.int16): 32768.0, np.dtype(np.int32): 2147483648.0}


def _frame_samples(frame: av.AudioFrame) -> np.ndarray:
    """(C, n) float32 from any PyAV sample format."""
    arr = frame.to_ndarray()
    nch = frame.layout.nb_channels
    if not frame.format.is_planar:
        arr = arr.reshape(-1, nch).T
    if arr.dtype == np.uint8:
        return (arr.astype(np.float32) - 128.0) / 128.0
    if arr.dtype in _INT_SCALE:
        return arr.astype(np.float32) / _INT_SCALE[arr.dtype]
    return arr.astype(np.float32, copy=False)


def remix(audio: np.ndarray, channel_names: list[str], channels: int) -> np.ndarray:
    """Mix (C, N) audio to 1 or 2 channels; other counts only pass through unchanged."""
    have = audio.shape[0]
    if channels == have:
        return audio
    if channels not in (1, 2):
        raise ValueError(f"can only mix down to 1 or 2 channels, not {channels} (source has {have})")
    if have == 1:
        return np.repeat(audio, channels, axis=0)
    if have == 2:
        stereo = audio
    else:
        gains = np.array([_STEREO_GAINS.get(name, (0.5, 0.5)) for name in channel_names], np.float32)
        gains /= max(gains.sum(axis=0).max(), 1.0)  # keep a full-scale input from clipping
        stereo = gains.T @ audio
    return stereo if channels == 2 else stereo.mean(axis=0, keepdims=True)


def resample(audio: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    """Zero-phase polyphase resampling of (C, N) audio; timing is preserved exactly."""
    if rate_in == rate_out:
        return audio
    g = math.gcd(rate_in, rate_out)
    return resample_poly(audio, rate_out // g, rate_in // g, axis=1).astype(np.float32)


def _rotate(rgb: np.ndarray, rotation: int) -> np.ndarray:
    # PyAV reports the display matrix rotation in degrees counter-clockwise.
    k = (rotation // 90) % 4
    return np.ascontiguousarray(np.rot90(rgb, k=k)) if k else rgb


class _FrameSampler:
    """Collects frames at native timestamps, or the frame on screen at each target time."""

    def __init__(
        self, path, start: float, stop: float, fps: float | None, size, nominal_fps, max_pixels=None, stored=None
    ):
        self.path, self.start, self.stop, self.fps, self.size = path, start, stop, fps, size
        self.max_pixels = max_pixels
        self.stored = stored  # (width, height) the headers declare: the budget was checked against it
        self.nominal_interval = 1.0 / nominal_fps if nominal_fps else None
        self.frames: list[np.ndarray] = []
        self.times: list[float] = []
        self.last_time: float | None = None
        self.last_frame: av.VideoFrame | None = None
        self.last_rgb: np.ndarray | None = None
        if fps is not None:
            n = max(int(math.ceil((stop - start) * fps - 1e-9)), 0)
            self.targets = start + np.arange(n) / fps
        self.next_target = 0

    def _rgb(self, frame: av.VideoFrame) -> np.ndarray:
        rotation = int(round(frame.rotation)) % 360
        if self.size is None:  # at its own size, or scaled down to the plan's pixels: the same function as in memory
            rgb = frame.to_ndarray(format="rgb24", threads=ffmpeg_threads.SCALER)
            return fit_pixels(_rotate(rgb, rotation), self.max_pixels)
        w, h = self.size
        if rotation in (90, 270):
            w, h = h, w
        scaled = frame.reformat(width=w, height=h, format="rgb24", interpolation="AREA", threads=ffmpeg_threads.SCALER)
        return _rotate(scaled.to_ndarray(), rotation)

    @property
    def done(self) -> bool:
        return self.last_time is not None and self.last_time >= self.stop

    def wants_before(self, t: float) -> bool:
        """Whether a frame shown before time ``t`` may still be needed: a sampled target not yet filled lies
        before it (native frames: always). A target at ``t`` itself is the frame shown at ``t``'s."""
        if self.fps is None:
            return True
        return self.next_target < len(self.targets) and self.targets[self.next_target] < t - 1e-6

    def push(self, frame: av.VideoFrame, t: float) -> None:
        if self.stored is not None and (frame.width, frame.height) != self.stored:  # what the budget did not see
            raise MediaError(
                self.path,
                f"a frame of {frame.width}x{frame.height} at {t:.2f} s where its headers declare "
                f"{self.stored[0]}x{self.stored[1]} (the size the decode budget was checked against): a stream that "
                "changes size is not read",
            )
        if self.fps is None:
            if self.start - 1e-6 <= t < self.stop - 1e-6:
                self.frames.append(self._rgb(frame))
                self.times.append(t)
        else:
            self._emit_until(t)
            self.last_frame, self.last_rgb = frame, None
        self.last_time = t

    def _emit_until(self, t: float) -> None:
        """Targets before time t are showing the previous frame."""
        while self.next_target < len(self.targets) and self.targets[self.next_target] < t - 1e-6:
            if self.last_frame is None:  # stream begins after the target: show its first frame
                return
            if self.last_rgb is None:
                self.last_rgb = self._rgb(self.last_frame)
            self.frames.append(self.last_rgb)
            self.times.append(float(self.targets[self.next_target]))
            self.next_target += 1

    def finish(self) -> tuple[np.ndarray, np.ndarray, float]:
        if self.fps is not None:
            self._emit_until(math.inf)
        if not self.frames:
            raise MediaError(self.path, f"no video frames in the window [{self.start:.3f}, {self.stop:.3f}) s")
        times = np.asarray(self.times, np.float64)
        fps = self.fps
        if fps is None:
            if len(times) > 1:
                deltas = np.diff(times)
                median = float(np.median(deltas))
                spread = np.abs(deltas - median).max()
                if median <= 0 or spread > VFR_TOLERANCE * median:
                    raise MediaError(
                        self.path,
                        f"variable frame rate (frame intervals from {deltas.min() * 1e3:.1f} to "
                        f"{deltas.max() * 1e3:.1f} ms); pass fps=... (CLI: --fps) to sample it at a constant rate",
                    )
                nominal = 1.0 / self.nominal_interval if self.nominal_interval else None
                # Keep the exact container rate (e.g. 30000/1001) when the intervals agree with it.
                fps = nominal if nominal and abs(median * nominal - 1.0) < 1e-3 else 1.0 / median
            else:
                fps = 1.0 / self.nominal_interval if self.nominal_interval else 1.0
        return np.stack(self.frames), times, float(fps)

    def content_end(self) -> float:
        if self.last_time is None:
            return self.start
        step = self.nominal_interval or (1.0 / self.fps if self.fps else 0.0)
        return self.last_time + step


class _KeyframeGate:
    """Decodes a video stream one group of pictures (a keyframe and the packets up to the next) at a time, and only
    the groups that can show a frame the sampler still needs; the others are demuxed and dropped undecoded.

    A group is settled when the next keyframe arrives: if a target before that keyframe's time is unfilled, the
    group is decoded up to the packet after which none is. The decoder is flushed before a group that follows a
    dropped one, and the frames it shows from before that group's keyframe (an open GOP's leading pictures, whose
    references were dropped) are discarded. Slice threads hold no frames back, so at 1 fps with a keyframe every
    second a group costs its keyframe and a picture or two after it.
    """

    def __init__(self, sampler: _FrameSampler, origin: float):
        self.sampler, self.origin = sampler, origin
        self.group: list[av.Packet] = []
        self.follows_decoded = True  # the decoder holds the state of the group before this one
        self.packets_end: float | None = None  # the end of the latest packet demuxed, decoded or not

    def _time(self, packet: av.Packet) -> float | None:
        return None if packet.pts is None else float(packet.pts * packet.time_base) - self.origin

    def push(self, packet: av.Packet) -> Iterator[av.VideoFrame]:
        t = self._time(packet)
        if t is not None:
            end = t + float((packet.duration or 0) * packet.time_base)
            self.packets_end = end if self.packets_end is None else max(self.packets_end, end)
        if packet.is_keyframe and t is not None and self.group:
            yield from self._settle(t)
        self.group.append(packet)

    def finish(self) -> Iterator[av.VideoFrame]:
        yield from self._settle(math.inf)

    def _settle(self, next_keyframe: float) -> Iterator[av.VideoFrame]:
        group, self.group = self.group, []
        if not self.sampler.wants_before(next_keyframe):
            self.follows_decoded = False
            return
        start = None  # after a dropped group: where this group's own pictures start
        if not self.follows_decoded:
            start = self._time(group[0])
            group[0].stream.codec_context.flush_buffers()
        self.follows_decoded = True
        for packet in group:
            if not self.sampler.wants_before(next_keyframe):  # the rest of the group shows nothing wanted
                self.follows_decoded = False
                return
            for frame in packet.decode():
                if start is None or frame.time is None or frame.time - self.origin >= start - 1e-6:
                    yield frame


class _AudioAssembler:
    """Places decoded audio frames at their timestamps in a buffer covering [start, stop), or to the last decoded
    sample where that is later and ``to_end`` is set."""

    def __init__(self, start: float, stop: float, to_end: bool = False):
        self.start, self.stop, self.to_end = start, stop, to_end
        self.chunks: list[tuple[int, np.ndarray]] = []
        self.rate: int | None = None
        self.channel_names: list[str] = []
        self.cursor: int | None = None  # next expected sample offset, for frames without pts
        self.end_time: float | None = None

    @property
    def done(self) -> bool:
        return not self.to_end and self.end_time is not None and self.end_time >= self.stop

    def push(self, frame: av.AudioFrame, t: float | None) -> None:
        if self.rate is None:
            self.rate = frame.sample_rate
            self.channel_names = [ch.name for ch in frame.layout.channels]
        samples = _frame_samples(frame)
        offset = round((t - self.start) * self.rate) if t is not None else (self.cursor or 0)
        self.chunks.append((offset, samples))
        self.cursor = offset + samples.shape[1]
        self.end_time = self.start + self.cursor / self.rate

    def finish(self, path, sample_rate: int | None, channels: int | None) -> tuple[np.ndarray, int]:
        if self.rate is None:
            raise MediaError(path, f"no audio samples in the window [{self.start:.3f}, {self.stop:.3f}) s")
        seconds = self.stop - self.start
        if self.to_end:
            seconds = max(seconds, self.cursor / self.rate)
        n = int(round(seconds * self.rate))
        nch = self.chunks[0][1].shape[0]
        buf = np.zeros((nch, n), np.float32)
        for offset, data in self.chunks:
            lo, hi = max(offset, 0), min(offset + data.shape[1], n)
            if hi > lo:
                buf[:, lo:hi] = data[:, lo - offset : hi - offset]
        if channels is not None:
            buf = remix(buf, self.channel_names, channels)
        rate = sample_rate or self.rate
        if rate != self.rate:
            want = int(round(seconds * rate))
            buf = resample(buf, self.rate, rate)
            buf = buf[:, :want] if buf.shape[1] >= want else np.pad(buf, ((0, 0), (0, want - buf.shape[1])))
        return np.ascontiguousarray(buf, dtype=np.float32), rate


def _check_args(fps, size, max_pixels, sample_rate, channels, start, end) -> None:
    if size is not None and max_pixels is not None:
        raise ValueError("give size (exact) or max_pixels (at most), not both")
    if max_pixels is not None and max_pixels < 1:
        raise ValueError(f"max_pixels must be positive, got {max_pixels}")
    if fps is not None and fps <= 0:
        raise ValueError(f"fps must be positive, got {fps}")
    if size is not None and (len(size) != 2 or min(size) <= 0):
        raise ValueError(f"size must be (width, height) with positive values, got {size}")
    if sample_rate is not None and sample_rate <= 0:
        raise ValueError(f"sample_rate must be positive, got {sample_rate}")
    if channels is not None and channels <= 0:
        raise ValueError(f"channels must be positive, got {channels}")
    if start < 0 or (end is not None and end <= start):
        raise ValueError(f"need 0 <= start < end, got start={start}, end={end}")


def decode(
    path: Encoded,
    *,
    video: bool = True,
    audio: bool = True,
    fps: float | None = None,
    size: tuple[int, int] | None = None,
    sample_rate: int | None = None,
    channels: int | None = None,
    start: float = 0.0,
    end: float | None = None,
    compute_hash: bool = False,
    skip_unneeded: bool = True,
    audio_to_end: bool = False,
    max_pixels: int | None = None,
    budget: DecodeBudget = DecodeBudget(),
    longest: float | None = None,
) -> MediaClip:
    """Decode ``path`` (a file, or its encoded bytes in memory) into a MediaClip in one demuxing pass.

    ``video`` / ``audio`` say which streams are required: a missing required stream is a
    MediaError. ``fps=None`` keeps native frames (and rejects variable frame rate);
    ``compute_hash`` reads the file once more for its sha256 (dedupe needs it, scoring does not);
    ``fps=f`` returns the frame on screen at ``start + k / f``: with ``skip_unneeded`` only the groups of pictures
    that hold those frames are decoded (`_KeyframeGate`; the same frames as decoding all). Rotation metadata is
    applied. The audio covers the window; with ``audio_to_end`` and a window to the file's end, also what the
    decoder gives past the declared duration (an AAC stream's last frame), as FFmpeg's command line writes it.
    ``max_pixels`` scales larger frames down to that many pixels as each is decoded (`avjudge.media.budget.fit_pixels`).
    The headers are checked against ``budget`` before anything is decoded, and decoding stops past its time;
    ``longest``: a window longer than this many seconds is refused from them too (what its reader would refuse once
    decoded: a judge's audio window).
    """
    if not (video or audio):
        raise ValueError("decode needs video=True or audio=True")
    _check_args(fps, size, max_pixels, sample_rate, channels, start, end)
    name = media_name(path)
    with open_media(path) as c:
        vs = c.streams.video[0] if c.streams.video else None
        aus = c.streams.audio[0] if c.streams.audio else None
        if video and vs is None:
            hint = "; decode with video=False to read its audio" if aus is not None else ""
            raise MediaError(name, f"has no video stream{hint}")
        if audio and aus is None:
            hint = "; decode with audio=False to read its frames" if vs is not None else ""
            raise MediaError(name, f"has no audio stream{hint}")
        origin = stream_origin(c)
        declared = container_duration(c)
        if declared is not None and start >= declared:
            raise MediaError(name, f"window starts at {start:.3f} s but the file lasts {declared:.3f} s")
        stop = end if declared is None else min(end or declared, declared)
        if stop is None:
            raise MediaError(name, "duration unknown; pass end=... to bound the window")
        if longest is not None and stop - start > longest + 1e-6:
            ends = {
                "picture": stream_end(vs, origin) if vs else None,
                "sound": stream_end(aus, origin) if aus else None,
            }
            raise MediaError(name, too_long(stop - start, longest, ends))
        _within(budget, name, stop - start, vs if video else None, fps, size, max_pixels, aus if audio else None)
        deadline = budget.deadline()
        sampler = assembler = gate = None
        streams = []
        if video:
            nominal = vs.average_rate or vs.guessed_rate
            stored = (vs.codec_context.width, vs.codec_context.height)
            stored = stored if min(stored) > 0 else None  # headers that declare no size: nothing to hold frames to
            sampler = _FrameSampler(
                name, start, stop, fps, size, float(nominal) if nominal else None, max_pixels, stored
            )
            gate = _KeyframeGate(sampler, origin) if fps is not None and skip_unneeded else None
            # frame threads hold frames back (a decoder of N threads shows the first after N packets), which would
            # make the gate decode most of every group it opens; slice threads hold none back
            vs.thread_type = "SLICE" if gate is not None else "AUTO"
            vs.thread_count = ffmpeg_threads.decoder
            streams.append(vs)
        if audio:
            assembler = _AudioAssembler(start, stop, audio_to_end and (end is None or end >= (declared or math.inf)))
            streams.append(aus)
        if start > 0:
            c.seek(int((start + origin) * av.time_base), backward=True)
        last_t = start
        try:
            for packet in c.demux(*streams):
                budget.check_time(name, deadline, last_t)
                gated = gate is not None and packet.stream is vs
                for frame in gate.push(packet) if gated else packet.decode():
                    last_t = _take(name, frame, origin, sampler, assembler, last_t)
                    budget.check_time(name, deadline, last_t)  # a group of pictures decodes many frames at once
                # a gated stream is demuxed to its end even when no frame is wanted any more: packets are cheap to
                # read, and a file cut short must still be named so
                if (sampler is None or sampler.done) and (assembler is None or assembler.done):
                    break
            for frame in gate.finish() if gate is not None else ():
                last_t = _take(name, frame, origin, sampler, assembler, last_t)
                budget.check_time(name, deadline, last_t)
        except av.error.FFmpegError as err:
            raise MediaError(name, f"corrupt data near {last_t:.2f} s ({err.strerror or err})") from err
        frames = timestamps = samples = None
        out_fps = rate = None
        if sampler is not None:
            frames, timestamps, out_fps = sampler.finish()
            content_end = sampler.content_end()
            if gate is not None and gate.packets_end is not None:  # frames it dropped undecoded still showed
                content_end = max(content_end, gate.packets_end)
            _check_truncation(name, "video", content_end, stop, stream_end(vs, origin))
        if assembler is not None:
            _check_truncation(name, "audio", assembler.end_time or start, stop, stream_end(aus, origin))
            samples, rate = assembler.finish(name, sample_rate, channels)
    return MediaClip(
        frames=frames,
        fps=out_fps,
        timestamps=timestamps,
        audio=samples,
        sample_rate=rate,
        duration=float(stop - start),
        start=float(start),
        source=name,
        content_hash=(bytes_hash(path) if isinstance(path, bytes) else file_hash(path)) if compute_hash else None,
    )


def too_long(seconds: float, longest: float, ends: dict[str, float | None] | None = None) -> str:
    """Why a clip of ``seconds`` is refused by readers that take at most ``longest`` seconds of it; ``ends``: where
    each stream ends, as its headers say (picture, sound), named where they differ."""
    known = {kind: end for kind, end in (ends or {}).items() if end is not None}
    streams = ""
    if len(known) > 1 and max(known.values()) - min(known.values()) > 0.5:
        streams = " (" + ", ".join(f"{kind} {end:.1f} s" for kind, end in known.items()) + ")"
    return (
        f"the clip lasts {seconds:.1f} s{streams}, longer than the judge's {longest:.0f} s window (refused from its "
        "headers); set long_audio=head to score its beginning, or cut the clip"
    )


def _within(budget: DecodeBudget, name: str, seconds: float, vs, fps, size, max_pixels, aus) -> None:
    """Refuse what the headers say would take more than ``budget``: the window's length, the frames as stored (each
    is decoded whole) and what is kept of them (at the rate and size asked), the sound at its own rate."""
    stored = kept = rate = None
    if vs is not None:
        stored = vs.codec_context.width, vs.codec_context.height
        kept = size or fitted_size(*stored, max_pixels)
        nominal = vs.average_rate or vs.guessed_rate
        rate = fps or (float(nominal) if nominal else None)
    sound = None if aus is None else (aus.codec_context.sample_rate, aus.codec_context.channels)
    budget.check(name, seconds, stored, kept, rate, sound)


def _take(name, frame, origin: float, sampler, assembler, last_t: float) -> float:
    """Hand a decoded frame to the video sampler or the audio assembler; the latest time seen."""
    t = None if frame.time is None else frame.time - origin
    if isinstance(frame, av.VideoFrame):
        if t is None:
            raise MediaError(name, "video frame without a timestamp")
        sampler.push(frame, t)
    else:
        assembler.push(frame, t)
    return t if t is not None else last_t


def _check_truncation(path, kind: str, content_end: float, stop: float, declared_end: float | None) -> None:
    """A stream is cut short when it ends before what its own headers declare (or, where they declare nothing, the
    file's length), within the window: a sound that outlasts its picture, or the reverse, is a file as generators
    write them (picture and sound made apart, then muxed), not a truncated one."""
    end = stop if declared_end is None else min(stop, declared_end)
    if content_end < end - TRUNCATION_TOLERANCE_S:
        declares = "the file declares" if declared_end is None else "its header declares"
        raise MediaError(
            path,
            f"truncated: the {kind} stream ends at {content_end:.2f} s but {declares} {end:.2f} s; re-encode or "
            "re-download it",
        )
