"""avjudge's NISQA vs the official NISQA package, on the same WAV files, in one run.

The official implementation is the `nisqa` package from PyPI (gabrielmittag/NISQA), installed
without its pinned dependencies: `pip install --no-deps nisqa==2.0.post2` (`make install` does).
Files: espeak-ng speech (or, without espeak-ng, a voiced synthetic signal) at 16, 22.05 and 48 kHz,
clean and with white noise at 20, 10 and 0 dB SNR, one stereo file.

Usage: python benchmarks/nisqa_parity.py [--checkpoints DIR] [--json]
Prints, per checkpoint, the largest absolute difference of every output over all files.
"""

import argparse
import contextlib
import io
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from avjudge.media import decode, encode_audio
from avjudge.metrics import get_metric, resolve

OFFICIAL_COLUMNS = {"nisqa": ["mos_pred", "noi_pred", "dis_pred", "col_pred", "loud_pred"], "nisqa_tts": ["mos_pred"]}
SENTENCES = [
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "Please bring me two red apples and a glass of cold water.",
]


def speech(text: str, rate: int, folder: Path) -> np.ndarray:
    if shutil.which("espeak-ng"):
        wav = folder / "espeak.wav"
        wav.write_bytes(subprocess.run(["espeak-ng", "--stdout", text], check=True, capture_output=True).stdout)
        return decode(wav, video=False, sample_rate=rate, channels=1).audio[0]
    t = np.arange(int(3.0 * rate)) / rate  # a voiced buzz with a moving formant and pauses
    f0 = 120 + 30 * np.sin(2 * np.pi * 0.7 * t)
    buzz = np.sign(np.sin(2 * np.pi * np.cumsum(f0) / rate)) * (np.sin(2 * np.pi * 1.5 * t) > -0.3)
    return (0.2 * buzz * (0.6 + 0.4 * np.sin(2 * np.pi * 4 * t))).astype(np.float32)


def make_files(folder: Path) -> list[Path]:
    rng = np.random.default_rng(0)
    files = []
    for i, text in enumerate(SENTENCES):
        for rate in (16000, 22050, 48000):
            clean = speech(text, rate, folder)
            for snr in (None, 20, 10, 0):
                audio = (
                    clean
                    if snr is None
                    else clean
                    + rng.standard_normal(len(clean)).astype(np.float32)
                    * (np.sqrt(np.mean(clean**2) / 10 ** (snr / 10)))
                )
                path = folder / f"s{i}_{rate}_{'clean' if snr is None else f'snr{snr}'}.wav"
                encode_audio(path, np.clip(audio, -1, 1), rate)
                files.append(path)
    stereo = speech(SENTENCES[0], 16000, folder)
    encode_audio(folder / "stereo.wav", np.stack([stereo, 0.5 * np.roll(stereo, 800)]), 16000)
    return files + [folder / "stereo.wav"]


def official(checkpoint: Path, wav: Path) -> list[float]:
    from nisqa.NISQA_model import nisqaModel

    args = {
        "mode": "predict_file",
        "pretrained_model": str(checkpoint),
        "deg": str(wav),
        "output_dir": None,
        "ms_channel": None,
        "tr_bs_val": 1,
        "tr_num_workers": 0,
    }
    with contextlib.redirect_stdout(io.StringIO()):
        model = nisqaModel(args)
        df = model.predict()
    return [float(df[c].iloc[0]) for c in OFFICIAL_COLUMNS["nisqa" if model.args["dim"] else "nisqa_tts"]]


def compare(root: Path | None) -> dict:
    report = {}
    with tempfile.TemporaryDirectory() as tmp:
        files = make_files(Path(tmp))
        for name in ("nisqa", "nisqa_tts"):
            ours_metric = get_metric(name, root=root)
            (checkpoint,) = resolve(name, root).values()
            diffs, rows = [], []
            for wav in files:
                ref = official(checkpoint, wav)
                clip = decode(wav, video=False)
                ours = list(ours_metric.compute(clip).values())
                diffs.append(np.abs(np.array(ours) - np.array(ref)))
                rows.append({"file": wav.name, "official": ref, "avjudge": ours})
            outputs = ours_metric.outputs
            report[name] = {
                "files": len(files),
                "max_abs_diff": dict(zip(outputs, np.max(diffs, axis=0).tolist())),
                "official_range": [min(min(r["official"]) for r in rows), max(max(r["official"]) for r in rows)],
                "rows": rows,
            }
    return report


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--checkpoints",
        type=Path,
        default=None,
        help="checkpoint root (default: $AVJUDGE_CHECKPOINTS, else ../shared/checkpoints if present)",
    )
    p.add_argument("--json", action="store_true", help="print the whole report as JSON")
    args = p.parse_args()
    root = args.checkpoints
    if root is None and "AVJUDGE_CHECKPOINTS" not in os.environ and Path("../shared/checkpoints/nisqa").is_dir():
        root = Path("../shared/checkpoints")
    report = compare(root)
    if args.json:
        print(json.dumps(report))
        return
    for name, r in report.items():
        worst = ", ".join(f"{k} {v:.5f}" for k, v in r["max_abs_diff"].items())
        print(
            f"{name}: {r['files']} files, official predictions "
            f"{r['official_range'][0]:.2f}..{r['official_range'][1]:.2f}; "
            f"largest |avjudge - official|: {worst}"
        )


if __name__ == "__main__":
    main()
