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


def ffmpeg_audio(path: Path) -> tuple[np.ndarray, int]:
    """A file's sound as the ffmpeg CLI writes it (every decoded sample, float32 at its own rate), (channels, n),
    and its rate: an independent reference, and what av-benchmark reads of a clip's sound extracted so."""
    channels, rate = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "a:0", "-show_entries", "stream=channels,sample_rate", "-of",
         "csv=p=0", str(path)], capture_output=True, text=True, check=True,
    ).stdout.strip().split(",")[::-1]  # fmt: skip
    pcm = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", str(path), "-vn", "-f", "f32le", "-acodec", "pcm_f32le", "-"],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    return np.frombuffer(pcm, np.float32).reshape(-1, int(channels)).T, int(rate)


def kaldi_banks_by_the_book(mels, n_fft, sample_rate, fmin, fmax):
    """Kaldi's ``MelBanks`` (feat/mel-computations.cc) bin by bin: ``mels`` triangles equally spaced on
    1127 ln(1 + f / 700) between ``fmin`` and ``fmax``, over the FFT bins below Nyquist."""
    import math

    import torch

    def mel(f):
        return 1127.0 * math.log(1.0 + f / 700.0)

    low, high = mel(fmin), mel(fmax)
    delta = (high - low) / (mels + 1)
    banks = np.zeros((mels, n_fft // 2))
    for m in range(mels):
        left, centre, right = low + m * delta, low + (m + 1) * delta, low + (m + 2) * delta
        for k in range(n_fft // 2):
            f = mel(sample_rate / n_fft * k)
            if left < f < right:
                banks[m, k] = (f - left) / (centre - left) if f <= centre else (right - f) / (right - centre)
    return torch.from_numpy(banks).float(), None


def panns_inference_cnn14():
    """``panns_inference.models.Cnn14`` (0.1.1, installed by make install without its dependencies) at 16 kHz as
    av-benchmark configures it, imported without the package's ``__init__``, which downloads AudioSet's label list."""
    import importlib.util
    import os
    import sys
    import types

    spec = importlib.util.find_spec("panns_inference")
    if spec is None:
        pytest.skip("panns_inference is not installed (make install adds it)")
    package = types.ModuleType("panns_inference")
    package.__path__ = list(spec.submodule_search_locations)
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(sys.modules, "panns_inference", package)
        mp.setitem(os.environ, "MPLBACKEND", "Agg")
        from panns_inference.models import Cnn14

    return Cnn14(sample_rate=16000, window_size=512, hop_size=160, mel_bins=64, fmin=50, fmax=8000, classes_num=527)


@contextmanager
def hear21passt_modules():
    """``hear21passt.models.passt`` and ``hear21passt.models.preprocess`` (0.0.26, installed by make install without
    its dependencies), imported without the package's ``__init__``; timm's download helper (its only use of timm,
    for pretrained weights) left empty, and the front end's torchaudio (absent here) giving identities for its
    training-only masking and Kaldi's mel banks as `kaldi_banks_by_the_book` writes them."""
    import importlib.util
    import sys
    import types

    import torch

    spec = importlib.util.find_spec("hear21passt")
    if spec is None:
        pytest.skip("hear21passt is not installed (make install adds it)")
    root = spec.submodule_search_locations[0]
    with pytest.MonkeyPatch.context() as mp:
        for name, path in (("hear21passt", root), ("hear21passt.models", f"{root}/models")):
            package = types.ModuleType(name)
            package.__path__ = [path]
            mp.setitem(sys.modules, name, package)
        hub = types.ModuleType("timm.models._hub")
        hub.download_cached_file = None
        for name, module in (("timm", types.ModuleType("timm")), ("timm.models", types.ModuleType("timm.models")),
                             ("timm.models._hub", hub)):  # fmt: skip
            mp.setitem(sys.modules, name, module)
        torchaudio = types.ModuleType("torchaudio")
        torchaudio.transforms = types.SimpleNamespace(
            FrequencyMasking=lambda *a, **k: torch.nn.Identity(), TimeMasking=lambda *a, **k: torch.nn.Identity()
        )
        torchaudio.compliance = types.SimpleNamespace(
            kaldi=types.SimpleNamespace(
                get_mel_banks=lambda mels, n_fft, sr, fmin, fmax, **vtln: kaldi_banks_by_the_book(
                    mels, n_fft, sr, fmin, fmax
                )
            )
        )
        mp.setitem(sys.modules, "torchaudio", torchaudio)
        from hear21passt.models import passt, preprocess

        yield passt, preprocess


def hear21passt_front_end(preprocess):
    """``get_basic_model``'s front end (hear21passt/base.py): its ``AugmentMelSTFT``, in eval mode."""
    options = {"htk": False, "fmin": 0.0, "fmax": None, "norm": 1, "fmin_aug_range": 10, "fmax_aug_range": 2000}
    return preprocess.AugmentMelSTFT(n_mels=128, sr=32000, win_length=800, hopsize=320, n_fft=1024, freqm=48,
                                     timem=192, **options).eval()  # fmt: skip


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


# av-benchmark's statistics (hkchengrex/av-benchmark @ 050a5cdb, after audioldm_eval), as it writes them


def av_benchmark_fd(generated: np.ndarray, reference: np.ndarray) -> float:
    """``av_bench/metrics/fad.py``: ``np.cov`` of each set and scipy's ``sqrtm`` of their product (its epsilon retry
    where that is not finite, its real part where complex)."""
    from scipy import linalg

    mu_g, mu_r = generated.mean(axis=0), reference.mean(axis=0)
    s_g, s_r = np.cov(generated, rowvar=False), np.cov(reference, rowvar=False)
    root, _ = linalg.sqrtm(s_g.dot(s_r), disp=False)
    if not np.isfinite(root).all():
        offset = np.eye(len(s_g)) * 1e-6
        root = linalg.sqrtm((s_g + offset).dot(s_r + offset))
    diff = mu_g - mu_r
    return float(diff.dot(diff) + np.trace(s_g) + np.trace(s_r) - 2 * np.trace(root.real))


def av_benchmark_kl(generated_logits, reference_logits) -> float:
    """``av_bench/metrics/kl.py``'s ``kl_softmax``: KL(reference || generated) of paired rows, summed, per pair."""
    import torch
    import torch.nn.functional as F

    g, r = torch.as_tensor(generated_logits), torch.as_tensor(reference_logits)
    return float(F.kl_div(F.log_softmax(g, dim=1), F.log_softmax(r, dim=1), reduction="sum", log_target=True) / len(g))


def av_benchmark_isc(logits, splits: int = 10, seed: int = 2020) -> tuple[float, float]:
    """``av_bench/metrics/isc.py``: rows shuffled with ``seed``, per split ``exp(mean KL(p || mean p))``."""
    import torch

    features = torch.as_tensor(logits)
    n = len(features)
    features = features[np.random.RandomState(seed).permutation(n), :].double()
    p, log_p, scores = features.softmax(dim=1), features.log_softmax(dim=1), []
    for i in range(splits):
        part = slice(i * n // splits, (i + 1) * n // splits)
        q = p[part].mean(dim=0, keepdim=True)
        scores.append((p[part] * (log_p[part] - q.log())).sum(dim=1).mean().exp().item())
    return float(np.mean(scores)), float(np.std(scores))


def float32_group_tolerance(group) -> float:
    """How far from 0 float32 group normalisation, (r - mean) / (std + eps), may leave an advantage that is 0 in exact
    arithmetic (a failed rollout given its group's mean): a few float32 roundings of the group's largest |reward|
    (each about eps · |r|), over the group's spread. From the arithmetic, not from one machine's result."""
    r = np.asarray(group, np.float64)
    return 8 * float(np.finfo(np.float32).eps) * float(np.abs(r).max()) / (float(r.std(ddof=1)) + 1e-8)


def refused(argv, capsys) -> str:
    """What ``argv`` said on the way to exit 2: one error line, no traceback."""
    from avjudge.cli import main

    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own refusal of an option
        code = exit_.code
    assert code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err
