"""Fixture builders and skip markers shared by the tests."""

import json
import shutil
import subprocess
import time
from contextlib import contextmanager
from fractions import Fraction
from html.parser import HTMLParser
from pathlib import Path

import av
import numpy as np
import pytest

requires_ffmpeg = pytest.mark.skipif(
    shutil.which("ffmpeg") is None, reason="needs the ffmpeg binary (apt-get install ffmpeg)"
)
requires_espeak = pytest.mark.skipif(
    shutil.which("espeak-ng") is None, reason="needs espeak-ng (apt-get install espeak-ng)"
)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
requires_chromium = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")


def rendered_dom(page: Path, profile: Path) -> str:
    """The page's DOM after headless Chromium loaded it and ran its scripts."""
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout


def table_rows(dom: str) -> dict[str, list[int]]:
    """Rows of each table (named by its id, else its class), one count per table of that name, in page order."""

    class Tables(HTMLParser):
        def __init__(self):
            super().__init__()
            self.stack, self.rows = [], {}

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag == "table":
                name = attrs.get("id") or attrs.get("class")
                self.rows.setdefault(name, []).append(0)
                self.stack.append(name)
            elif tag == "tr" and self.stack:
                self.rows[self.stack[-1]][-1] += 1

        def handle_endtag(self, tag):
            if tag == "table":
                self.stack.pop()

    parser = Tables()
    parser.feed(dom)
    return parser.rows


def colour_of_frame(k: int) -> tuple[int, int, int]:
    """A distinct, codec-friendly colour per frame index."""
    return ((37 * k) % 200 + 28, (91 * k) % 200 + 28, (53 * k) % 200 + 28)


def coloured_frames(n: int, width: int, height: int) -> np.ndarray:
    frames = np.zeros((n, height, width, 3), np.uint8)
    for k in range(n):
        frames[k] = colour_of_frame(k)
    return frames


def click_track(onsets, duration: float, sample_rate: int, channels: int = 1) -> np.ndarray:
    """Silence with a 10 ms 1 kHz burst starting at each onset."""
    audio = np.zeros((channels, int(round(duration * sample_rate))), np.float32)
    burst = 0.6 * np.sin(2 * np.pi * 1000 * np.arange(int(0.01 * sample_rate)) / sample_rate)
    for t in onsets:
        i = int(round(t * sample_rate))
        audio[:, i : i + len(burst)] = burst
    return audio


def write_vfr_video(path: Path, intervals_ms, size=(64, 48)) -> None:
    """H.264 in mp4 whose frame intervals are the given milliseconds."""
    with av.open(str(path), "w") as c:
        s = c.add_stream("libx264", rate=25)
        s.width, s.height, s.pix_fmt = size[0], size[1], "yuv420p"
        s.time_base = Fraction(1, 1000)
        s.codec_context.time_base = Fraction(1, 1000)
        pts = 0
        for k, dt in enumerate(intervals_ms):
            frame = av.VideoFrame.from_ndarray(
                np.full((size[1], size[0], 3), colour_of_frame(k), np.uint8), format="rgb24"
            )
            frame.pts = pts
            frame.time_base = Fraction(1, 1000)
            pts += dt
            for p in s.encode(frame):
                c.mux(p)
        for p in s.encode(None):
            c.mux(p)


def write_odd_size_video(path: Path, width: int, height: int, n: int = 10) -> None:
    """H.264 4:4:4 allows odd sizes (4:2:0, which encode_video writes, does not)."""
    with av.open(str(path), "w") as c:
        s = c.add_stream("libx264", rate=25)
        s.width, s.height, s.pix_fmt = width, height, "yuv444p"
        for k in range(n):
            frame = av.VideoFrame.from_ndarray(
                np.full((height, width, 3), colour_of_frame(k), np.uint8), format="rgb24"
            )
            for p in s.encode(frame):
                c.mux(p)
        for p in s.encode(None):
            c.mux(p)


def ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-y", "-loglevel", "error", *args], check=True)


def ffmpeg_rgb_frames(path: Path) -> np.ndarray:
    """Frames as the ffmpeg CLI displays them (autorotation applied): an independent reference."""
    info = subprocess.run(
        [
            "ffprobe",
            "-v",
            "error",
            "-select_streams",
            "v:0",
            "-show_entries",
            "stream=width,height:stream_side_data=rotation",
            "-of",
            "default=nw=1",
            str(path),
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    fields = dict(line.split("=", 1) for line in info.split() if "=" in line)
    w, h = int(fields["width"]), int(fields["height"])
    if int(float(fields.get("rotation", 0))) % 180:
        w, h = h, w
    raw = subprocess.run(
        ["ffmpeg", "-loglevel", "error", "-i", str(path), "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
        check=True,
        capture_output=True,
    ).stdout
    return np.frombuffer(raw, np.uint8).reshape(-1, h, w, 3)


def remux_faststart(src: Path, dst: Path) -> None:
    """Copy every packet into an mp4 whose index (moov) precedes the data, as streaming files do."""
    with av.open(str(src)) as inp, av.open(str(dst), "w", options={"movflags": "faststart"}) as out:
        streams = {s.index: out.add_stream_from_template(s) for s in inp.streams}
        for packet in inp.demux():
            if packet.dts is None:
                continue
            packet.stream = streams[packet.stream.index]
            out.mux(packet)


class ScriptedServer:
    """A loopback HTTP server that answers each POST with ``respond(body) -> (status, headers, payload)`` and keeps
    every request's JSON body (``bodies``), headers (``headers``) and the status it answered (``statuses``)."""

    def __init__(self, respond):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        bodies, statuses, headers_seen = self.bodies, self.statuses, self.headers = [], [], []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                bodies.append(body)
                headers_seen.append(dict(self.headers))
                status, headers, payload = respond(body)
                statuses.append(status)
                data = json.dumps(payload).encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def close(self):
        self.server.shutdown()


class RecordingServer(ScriptedServer):
    """A scripted OpenAI-compatible endpoint (``url`` ends in /v1) that answers ``reply(body)`` ("A" by default)."""

    def __init__(self, reply=lambda body: "A"):
        super().__init__(lambda body: (200, {}, {"choices": [{"message": {"content": reply(body)}}]}))
        self.url += "/v1"


@contextmanager
def live_app(app):
    """``app`` under uvicorn on a free loopback port, as `avjudge serve` runs it; yields its URL."""
    import socket
    import threading

    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def swap_two(state: dict, skip: tuple[str, ...] = ()) -> tuple[dict, tuple[str, str]]:
    """A state dict with two of its tensors of one shape swapped (the first such pair whose values differ; names
    holding a word of ``skip`` left alone): the mutation a parity test must catch."""
    seen: dict = {}
    for name, value in state.items():
        if not value.is_floating_point() or value.numel() < 2 or any(word in name for word in skip):
            continue
        other = seen.get(tuple(value.shape))
        if other is not None and not bool((state[other] == value).all()):
            return {**state, name: state[other], other: value}, (other, name)
        seen.setdefault(tuple(value.shape), name)
    raise AssertionError("no two tensors of one shape to swap")
