"""Make a synthetic world: clips with exact ground truth, written resumably to a folder."""

from __future__ import annotations

import os
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from tqdm import tqdm

from ..ahead import map_ahead
from ..config import ConfigError, dump_yaml, load_yaml, to_dict
from ..jsonl import JsonlWriter, read_jsonl, write_json
from ..media import encode_video
from ..perturb import sources as tts
from .captions import captions
from .render import render_frames
from .scene import Scene, sample_scene, scene_id
from .sound import render_audio
from .world_config import WorldConfig

MANIFEST = "world.jsonl"
CONFIG_FILE = "world_config.yaml"
SUMMARY = "world_summary.json"


def world_manifest(path: str | Path) -> Path:
    """The manifest of a world: ``path`` itself, or ``path/world.jsonl`` for a folder `avjudge world make` wrote."""
    path = Path(path)
    manifest = path / MANIFEST if path.is_dir() else path
    if not manifest.is_file():
        raise ConfigError(f"{path}: no world here; give a folder made by `avjudge world make` or its {MANIFEST}")
    return manifest


def world_record(scene: Scene, video: str) -> dict:
    """One line of world.jsonl: a source-manifest record plus the full ground truth."""
    return {
        "id": scene.id,
        "video": video,
        "duration": scene.duration,
        "captions": captions(scene),
        "meta": {
            "background": scene.background,
            "ambience": scene.ambience,
            "n_objects": len(scene.objects),
            "n_events": len(scene.events),
            "has_speech": scene.speech is not None,
            "speaker": scene.speech.voice if scene.speech else None,
        },
        "scene": scene.to_dict(),
        "onsets": scene.onsets(),
    }


def render_clip(cfg: WorldConfig, index: int, out_dir: Path) -> dict:
    scene = sample_scene(cfg, index)
    voice = tts.synthesize(scene.speech.text, scene.speech.voice, scene.sample_rate) if scene.speech else None
    rel = f"clips/{scene.id}.mp4"
    encode_video(out_dir / rel, render_frames(scene), scene.fps, render_audio(scene, voice), scene.sample_rate)
    return world_record(scene, rel)


def _render_job(args) -> dict:
    return render_clip(*args)


def _check_same_config(out_dir: Path, cfg: WorldConfig) -> None:
    saved = out_dir / CONFIG_FILE
    if saved.exists():
        previous = load_yaml(saved.read_text()) or {}
        previous.pop("n", None)
        current = to_dict(cfg)
        current.pop("n", None)
        if previous != current:
            raise ConfigError(
                f"{out_dir} holds a world made with a different configuration ({saved}); "
                "use another --out, or delete the folder to start over"
            )


def make_world(cfg: WorldConfig, out_dir: str | Path, workers: int | None = None, progress: bool = True) -> dict:
    """Write ``cfg.n`` clips and ``world.jsonl`` into ``out_dir``; rerunning resumes where it stopped."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _check_same_config(out, cfg)
    (out / CONFIG_FILE).write_text(dump_yaml(cfg))
    for leftover in (out / "clips").glob(".*.mp4"):  # temp files of a killed run (one writer per folder)
        leftover.unlink()
    done = {r["id"] for r in read_jsonl(out / MANIFEST) if (out / r["video"]).exists()}
    # the clips to make, drawn as they are made: a world of 1e8 clips holds no list of them in memory
    jobs = ((cfg, i, out) for i in range(cfg.n) if scene_id(cfg.seed, i) not in done)
    workers = max(1, min(workers or os.cpu_count() or 1, cfg.n - len(done) or 1))
    with (
        JsonlWriter(out / MANIFEST) as writer,
        tqdm(total=cfg.n, initial=len(done), disable=not progress, desc="world clips", unit="clip") as bar,
    ):
        if workers == 1:
            _write_all(writer, map(_render_job, jobs), bar)
        else:
            with ProcessPoolExecutor(workers) as pool:
                _write_all(writer, map_ahead(_render_job, jobs, ahead=2 * workers, executor=pool), bar)
    summary = summarize(out)
    write_json(out / SUMMARY, summary)
    return summary


def _write_all(writer: JsonlWriter, results, bar) -> None:
    for record in results:
        writer.write(record)
        bar.update(1)


def summarize(out_dir: str | Path) -> dict:
    records = list(read_jsonl(Path(out_dir) / MANIFEST))
    keys = ("shape", "colour", "size", "motion", "event_kind")
    counts = {key: Counter() for key in (*keys, "timbre")}
    for r in records:
        for obj in r["scene"]["objects"]:
            for key in keys:
                counts[key][obj[key]] += 1
            if obj["sound"]:
                counts["timbre"][obj["sound"]["timbre"]] += 1
    return {
        "clips": len(records),
        "total_duration_s": round(sum(r["duration"] for r in records), 3),
        "events": sum(r["meta"]["n_events"] for r in records),
        "with_speech": sum(r["meta"]["has_speech"] for r in records),
        "backgrounds": dict(Counter(r["meta"]["background"] for r in records)),
        "ambiences": dict(Counter(r["meta"]["ambience"] for r in records)),
        "objects_per_clip": dict(Counter(r["meta"]["n_objects"] for r in records)),
        "per_object": {key: dict(c) for key, c in counts.items()},
    }
