"""`avjudge metrics compare` on world clips: a generated set against a reference set of the same size, with the
feature cache cold, then warm (every feature read back), in one run; each extractor's clips per second; and the
clips per second of the per-clip generation metrics (``desync``) through ``metrics run``.

Usage: python benchmarks/metric_pack.py [--clips 100] [--metrics fd_panns,kl_panns,is_panns,fd_vggish]
       [--per-clip desync] [--per-clip-clips 4] [--device cpu] [--checkpoints DIR]
Without --checkpoints, real-size random PANNs Cnn14, VGGish, PaSST and Synchformer weights are built in a temporary
folder (the real weights cannot be downloaded here; their cost is the real one, their scores mean nothing).
"""

import argparse
import os
import tempfile
import time
from pathlib import Path

from avjudge.jsonl import read_jsonl
from avjudge.metrics.checkpoints import ENV
from avjudge.metrics.random_checkpoints import make_random_checkpoints
from avjudge.metrics.sets import SET_METRICS
from avjudge.scoring.jobs import run_metrics
from avjudge.scoring.set_compare import compare_sets
from avjudge.world import WorldConfig, make_world


def random_checkpoints(root: Path) -> Path:
    """Real-size random PANNs, VGGish, PaSST and Synchformer weights, pinned (`avjudge checkpoints make-random`)."""
    make_random_checkpoints(root, ["panns", "vggish", "passt", "synchformer"])
    return root


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clips", type=int, default=100, help="clips in each set")
    p.add_argument("--metrics", default=",".join(SET_METRICS))
    p.add_argument("--device", default="cpu")
    p.add_argument("--duration", type=float, default=8.0, help="seconds of each world clip (the extractors read 8)")
    p.add_argument("--per-clip", default="desync", help="per-clip metrics timed through metrics run ('' for none)")
    p.add_argument(
        "--per-clip-clips", type=int, default=4, help="generated clips they score (Synchformer is slow on CPUs)"
    )
    p.add_argument("--checkpoints", type=Path, help="a folder with the extractors' weights (default: random ones)")
    args = p.parse_args()
    names = args.metrics.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        root = args.checkpoints or random_checkpoints(tmp / "checkpoints")
        for side, seed in (("generated", 1), ("reference", 2)):
            make_world(WorldConfig(n=args.clips, seed=seed, duration=args.duration), tmp / side, progress=False)
        # the reference clips under the generated clips' names, so that KL pairs them
        paired = tmp / "paired_reference"
        paired.mkdir()
        generated = sorted((tmp / "generated" / "clips").glob("*.mp4"))
        for mine, theirs in zip(generated, sorted((tmp / "reference" / "clips").glob("*.mp4"))):
            (paired / mine.name).symlink_to(theirs)
        times = {}
        for run in ("cold", "warm"):
            start = time.perf_counter()
            report = compare_sets(tmp / "generated" / "clips", paired, names,
                                  tmp / f"{run}.json", cache=tmp / "cache", root=root, device=args.device,
                                  progress=False)  # fmt: skip
            times[run] = time.perf_counter() - start
        clips = 2 * args.clips
        print(f"{args.clips} generated vs {args.clips} reference world clips of {args.duration:g} s, {names}, "
              f"device {args.device}")  # fmt: skip
        print(f"cold cache: {times['cold']:.1f} s ({clips / times['cold']:.1f} clips/s, every extractor)")
        print(f"warm cache: {times['warm']:.1f} s ({times['cold'] / times['warm']:.1f}x faster)")
        print(f"report: {report['metrics']}, not computed: {report['errors'] or 'none'}")
        for extractor in sorted({SET_METRICS.lookup(n).extractor for n in names}):
            only = [n for n in names if SET_METRICS.lookup(n).extractor == extractor]
            start = time.perf_counter()
            compare_sets(tmp / "generated" / "clips", paired, only, tmp / f"{extractor}.json",
                         cache=tmp / f"cache_{extractor}", root=root, device=args.device, progress=False)  # fmt: skip
            print(f"{extractor}: {clips / (time.perf_counter() - start):.1f} clips/s (decode and extract, cold)")
        for name in filter(None, args.per_clip.split(",")):
            subset = generated[: args.per_clip_clips]
            os.environ[ENV] = str(root)
            start = time.perf_counter()
            run_metrics([name], [str(c) for c in subset], tmp / f"{name}.jsonl",
                         device=args.device, progress=False)  # fmt: skip
            seconds = time.perf_counter() - start
            failed = sum(1 for r in read_jsonl(tmp / f"{name}.jsonl") if r["errors"])
            print(f"{name}: {len(subset) / seconds:.3f} clips/s ({seconds / len(subset):.1f} s a clip, model load "
                  f"included; {failed} failed)")  # fmt: skip


if __name__ == "__main__":
    main()
