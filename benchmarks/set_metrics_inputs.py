"""How av-benchmark's set metrics move with the form a clip's sound reaches them in, through `avjudge metrics compare`
on the same world clips in one run: the MP4 files themselves (decoded as the FFmpeg command line writes them), their
sound extracted as FFmpeg writes a `.wav` by default (16-bit PCM: every sample rounded to 1/32768), and extracted as
float WAV (`-c:a pcm_f32le`, which should change nothing). Prints each key's relative change against the MP4s.

The checkpoints are `avjudge checkpoints make-random`'s (PANNs, VGGish, PaSST-S at real size): the figures mean
nothing, and a trained network's sensitivity to the rounding may differ; the change is what is measured.

Usage: python benchmarks/set_metrics_inputs.py [--clips 20] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from avjudge.metrics.random_checkpoints import make_random_checkpoints
from avjudge.metrics.sets import SET_METRICS
from avjudge.scoring.set_compare import compare_sets
from avjudge.world import WorldConfig, make_world

FORMS = {"wav_s16": ["-c:a", "pcm_s16le"], "wav_f32": ["-c:a", "pcm_f32le"]}


def sets(work: Path, clips: int) -> tuple[Path, Path]:
    """A generated and a reference folder of MP4 clips, ``clips`` paired by name (different clips in each pair)."""
    make_world(WorldConfig(n=clips + 1, seed=7, duration=4.0, max_duration=4.0), work / "world", progress=False)
    files = sorted((work / "world" / "clips").glob("*.mp4"))
    generated, reference = work / "mp4" / "generated", work / "mp4" / "reference"
    for folder, chosen in ((generated, files[:clips]), (reference, files[1:])):
        folder.mkdir(parents=True)
        for k, clip in enumerate(chosen):
            shutil.copy(clip, folder / f"clip{k:02d}.mp4")
    return generated, reference


def extracted(folder: Path, out: Path, options: list[str]) -> Path:
    """Each clip's sound as ``ffmpeg -i clip.mp4 [options] clip.wav`` writes it."""
    out.mkdir(parents=True)
    for clip in sorted(folder.glob("*.mp4")):
        command = ["ffmpeg", "-v", "error", "-i", str(clip), "-vn", *options, str(out / f"{clip.stem}.wav")]
        subprocess.run(command, check=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clips", type=int, default=20, help="clips in each set, all paired (at least 10)")
    parser.add_argument("--out", type=Path, help="write the figures and changes here (JSON)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        root = work / "checkpoints"
        make_random_checkpoints(root, only=["panns", "vggish", "passt"])
        generated, reference = sets(work, args.clips)
        inputs = {"mp4": (generated, reference)}
        for form, options in FORMS.items():
            inputs[form] = tuple(extracted(f, work / form / f.name, options) for f in (generated, reference))
        figures = {}
        for form, (gen, ref) in inputs.items():
            report = compare_sets(gen, ref, list(SET_METRICS), work / f"{form}.json", cache=work / "cache" / form,
                                  root=root, progress=False)  # fmt: skip
            figures[form] = report["av_benchmark"]
    base = figures["mp4"]
    changes = {form: {k: v / base[k] - 1 for k, v in f.items()} for form, f in figures.items() if form != "mp4"}
    print(f"{'key':18}" + "".join(f"{form:>14}" for form in changes))
    for key in base:
        print(f"{key:18}" + "".join(f"{changes[form][key]:>14.2e}" for form in changes))
    if args.out:
        args.out.write_text(json.dumps({"clips": args.clips, "figures": figures, "relative_change": changes}, indent=2))


if __name__ == "__main__":
    main()
