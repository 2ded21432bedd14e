import os
from collections import Counter

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "offline")


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    if not _has_cuda():
        skip = pytest.mark.skip(reason="needs a CUDA GPU")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


def skip_reason(report) -> str:
    """Why a test was skipped, as its skip marker or call said it (without pytest's "Skipped: ")."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


def pytest_terminal_summary(terminalreporter):
    """The run's skips counted by reason, so "18 skipped" reads as what is missing for each."""
    reasons = Counter(skip_reason(report) for report in terminalreporter.stats.get("skipped", []))
    if reasons:
        terminalreporter.write_line("skipped, by reason:")
        for reason, count in reasons.most_common():
            terminalreporter.write_line(f"  {count:>3}  {reason}")


@pytest.fixture(scope="session")
def tiny_judges(tmp_path_factory):
    from avjudge.judges.tiny import make_tiny_judges

    return make_tiny_judges(tmp_path_factory.mktemp("tiny_judges"))


@pytest.fixture(scope="session")
def small_world(tmp_path_factory):
    from avjudge.world import WorldConfig, make_world

    out = tmp_path_factory.mktemp("small_world")
    make_world(WorldConfig(n=6, seed=21, duration=3.0, max_duration=5.0), out, progress=False)
    return out


@pytest.fixture(scope="session")
def pairs(small_world, tmp_path_factory):
    """A pair dataset of the small world for training tests: 32 AV, 24 VT, 24 AT pairs, half held out."""
    from avjudge.data import build_dataset, load_recipe
    from avjudge.world import MANIFEST

    recipe, source = load_recipe(
        "world_demo",
        [
            f"source={small_world / MANIFEST}",
            "judges.av.pairs=32",
            "judges.vt.pairs=24",
            "judges.at.pairs=24",
            "splits={train: 0.5, test: 0.5}",
        ],
    )
    out = tmp_path_factory.mktemp("pairs")
    build_dataset(recipe, source, out, progress=False)
    return out


@pytest.fixture(scope="session")
def world_records(small_world):
    """The small world's first three records, each video an absolute path."""
    import json

    from avjudge.world import MANIFEST

    records = [json.loads(line) for line in (small_world / MANIFEST).read_text().splitlines()][:3]
    return [{**r, "video": str(small_world / r["video"])} for r in records]


@pytest.fixture(scope="session")
def av_vt_judges(tiny_judges):
    """The tiny Qwen2.5-Omni's AV and VT judges, one preparation thread each."""
    from avjudge.judges import Judge

    path = tiny_judges["qwen2_5_omni"]
    return {"av": Judge.load("av", path, workers=1), "vt": Judge.load("vt", path, workers=1)}


@pytest.fixture
def corrupt(tmp_path):
    """A file named .mp4 that is not media."""
    path = tmp_path / "corrupt.mp4"
    path.write_bytes(b"not a video")
    return str(path)
