"""`avjudge demo`: the whole pipeline on built-in defaults, on a CPU, as a tutorial.

make a synthetic world -> check it against its ground truth -> build AV, VT and AT pair
datasets with hard negatives -> score the held-out pairs with untrained tiny judges ->
train them -> score again -> held-out balanced accuracy and AUROC per negative type before and after,
learning curves, and a handful of held-out pairs with their scores (written as JSON, a PNG
chart and an HTML page).
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from tqdm import tqdm

from ..config import load_config, to_dict
from ..data import build_dataset, load_manifest, load_pairs, load_recipe, pair_clip
from ..jsonl import read_jsonl, write_json
from ..judges.tiny import ALIGNED_ENCODERS, SYNC_ENCODERS, make_tiny_judges
from ..media import MediaError, decode, encode_video
from ..perturb import SourcePool
from ..perturb.sources import espeak_available
from ..prompts import task as judge_task
from ..rewards.card import card_of_run
from ..stats import printed
from ..train import TrainConfig, evaluation_table, learning_curves, run_training
from ..train.train_config import named_sampling_wins
from ..world import MANIFEST, make_world
from ..world.verify import verify_clip
from .generators import benchmark_generators
from .page import write_page
from .size import FULL, RECIPE, TRAIN_CONFIGS, DemoSize


def build_demo_pairs(
    world: Path, out: Path, pairs: int, seed: int = 0, tasks=("av", "vt", "at"), progress: bool = False
) -> dict:
    """The demo recipe's pairs for ``tasks`` (``pairs`` per judge) from the world in ``world``; returns the stats."""
    recipe, source = load_recipe(RECIPE, [f"source={(world / MANIFEST).resolve()}", f"seed={seed}"])
    recipe = dataclasses.replace(recipe, judges={t: dataclasses.replace(recipe.judges[t], pairs=pairs) for t in tasks})
    return build_dataset(recipe, source, out, progress=progress)


def _verify_record(job: tuple[Path, dict]):
    """One clip's check (a worker's job): its `verify_clip` result, or the error that kept it from decoding."""
    world, record = job
    try:
        return verify_clip(decode(world / record["video"]), record)
    except MediaError as err:
        return str(err)


def world_line(summary: dict, checks: dict, speech_available: bool) -> str:
    """The report's line on the world: its size, how many clips speak, and its check against the ground truth. A
    world made without espeak-ng has no speech, and its judges' figures differ from the README's: the line says so
    and how to install it."""
    speech = (
        f"{summary['with_speech']} with speech"
        if speech_available
        else "no speech (espeak-ng is not installed: apt-get install -y espeak-ng)"
    )
    return (
        f"world: {summary['clips']} clips, {summary['events']} sound events, {speech}; decoded back, "
        f"{checks['clips_ok']}/{checks['clips']} clips match their ground truth exactly"
    )


def verify_world(world: Path, progress: bool, workers: int | None = None) -> dict:
    """Every clip of ``world`` decoded and checked against its ground truth, in ``workers`` processes (default:
    one per core; decoding is most of the demo's world time)."""
    checks = {
        "clips": 0,
        "clips_ok": 0,
        "visual_events": 0,
        "visual_found": 0,
        "onsets": 0,
        "onsets_found": 0,
        "errors": [],
    }
    records = list(read_jsonl(world / MANIFEST))
    workers = max(1, min(workers or os.cpu_count() or 1, len(records)))
    with ProcessPoolExecutor(workers) as pool:
        results = pool.map(_verify_record, [(world, r) for r in records], chunksize=4)
        for record, result in tqdm(zip(records, results), total=len(records), desc="verify", disable=not progress):
            checks["clips"] += 1
            if isinstance(result, str):
                checks["errors"].append({"id": record["id"], "error": result})
                continue
            checks["clips_ok"] += result.ok
            checks["visual_events"] += result.visual_expected
            checks["visual_found"] += result.visual_found
            checks["onsets"] += result.onsets_expected
            checks["onsets_found"] += result.onsets_found
            if not result.ok:
                checks["errors"].append({"id": record["id"], "error": "; ".join(result.problems)})
    return checks


def plot(results: dict, path: Path) -> None:
    """Per judge: balanced accuracy per negative type before and after (top), and along training (bottom)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(results), figsize=(5 * len(results), 8), squeeze=False)
    for col, (task, res) in enumerate(results.items()):
        ax = axes[0][col]
        kinds = sorted(res["eval_after"]["per_type"])
        before = [res["eval_before"]["per_type"].get(k, {}).get("balanced_accuracy", 0) for k in kinds]
        after = [res["eval_after"]["per_type"][k]["balanced_accuracy"] for k in kinds]
        xs = range(len(kinds))
        ax.bar([x - 0.2 for x in xs], before, 0.4, label="untrained")
        ax.bar([x + 0.2 for x in xs], after, 0.4, label="trained")
        ax.axhline(0.5, color="grey", linewidth=0.8, linestyle="--")
        ax.set_xticks(list(xs), kinds, rotation=40, ha="right", fontsize=8)
        ax.set_ylim(0, 1)
        ax.set_title(f"{task.upper()} judge: held-out balanced accuracy")
        ax.legend(fontsize=8)
        ax = axes[1][col]
        for kind, points in res["curves"].items():
            ax.plot([p[0] for p in points], [p[1] for p in points], marker=".", label=kind)
        ax.axhline(0.5, color="grey", linewidth=0.8, linestyle="--")
        ax.set_ylim(0, 1)
        ax.set_xlabel("optimiser step")
        ax.set_title(f"{task.upper()} judge: learning curves")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def held_out_examples(out: Path, task: str, result: dict) -> list[dict]:
    """A handful of the held-out pairs of ``task`` with their scores before and after training: the first positive,
    then the first negative of each type (types in name order). An AV pair's clip (the window of its source it shows,
    with the negative's sound) is written to OUT/examples/av/ so it can be watched; VT and AT pairs show their text."""
    pool = SourcePool(load_manifest(out / "world" / MANIFEST))
    before = (result["eval_before"] or {}).get("scores", {})
    after = result["eval_after"]["scores"]
    chosen: dict[str, dict] = {}
    for record in load_pairs(out / "pairs", task, "test"):
        kind = "positive" if record["label"] else record["negative_type"]
        if kind not in chosen and after.get(record["id"]) is not None:
            chosen[kind] = record
    examples = []
    for kind, record in sorted(chosen.items(), key=lambda item: (item[0] != "positive", item[0])):
        source = pool.records[record["source_id"]]
        media = Path(source["video"])
        if task == "av" and (record["label"] == 0 or record.get("window")):  # what the judge saw: its window, its sound
            clip = pair_clip(record, pool)
            media = encode_video(
                out / "examples" / "av" / f"{record['id'].replace('/', '_')}.mp4",
                clip.frames,
                clip.fps,
                clip.audio,
                clip.sample_rate,
            )
        examples.append(
            {
                "judge": task,
                "id": record["id"],
                "kind": kind,
                "label": record["label"],
                "params": record.get("params") or {},
                "text": record.get("text"),
                "media": str(media.relative_to(out)),
                "before": before.get(record["id"]),
                "after": after[record["id"]],
            }
        )
    return examples


def say(line: str) -> None:
    """A line of the demo's own between its stages' progress bars (stderr, as the bars)."""
    print(f"demo: {line}", file=sys.stderr, flush=True)


def path_only_lines(size: DemoSize, results: dict) -> list[str]:
    """A sentence for each judge trained only to show the path works, instead of its flat learning curve."""
    return [
        f"the {task.upper()} judge trained {results[task]['steps']} steps only, to show its path works: the tiny "
        f"{task.upper()} judge learns nothing in the demo's budget (every type stays at 0.50 after "
        f"{FULL.epochs_of(task):g} epochs, avjudge demo --full)"
        for task in size.path_only
        if task in results
    ]


def card_lines(results: dict) -> list[str]:
    """Each judge card's flags in a line or two: what the judge may have learnt instead of its task."""
    lines = []
    for task, result in results.items():
        flags = result["card"]["flags"]
        lines.append(f"{task} judge card: {len(flags)} flag(s)" + (": " + "; ".join(flags) if flags else ""))
    return lines


def generator_lines(generators: dict | None) -> list[str]:
    """The generator benchmark in a few lines: each generator's mean AV score, untrained and trained."""
    if not generators:
        return []
    lines = [
        f"the synthetic generators benchmarked by the AV judge (mean S on {generators['clips']} clips none of "
        "the judges saw, untrained -> trained):"
    ]
    for model, means in generators["mean_av"].items():
        lines.append(
            f"  {model:<12}{printed(means.get('untrained'), 3, 'n/a'):>8} -> {printed(means.get('trained'), 3, 'n/a')}"
        )
    return lines


def demo_config(
    task: str,
    checkpoints: dict[str, Path],
    dataset: Path,
    output_dir: Path,
    size: DemoSize = DemoSize(),
    seed: int = 0,
    overrides: list[str] | tuple[str, ...] = (),
) -> TrainConfig:
    """How the demo trains ``task``'s judge: its tiny config from the tiny judge of its family (``checkpoints``, as
    `make_tiny_judges` gives them) on ``dataset`` into ``output_dir``, for the size's epochs."""
    return named_sampling_wins(
        load_config(
            TrainConfig,
            TRAIN_CONFIGS[task],
            [
                f"model={checkpoints[judge_task(task).family]}",
                f"dataset={dataset}",
                f"output_dir={output_dir}",
                f"num_train_epochs={size.epochs_of(task)}",
                f"seed={seed}",
                *overrides,
            ],
        ),
        overrides,
    )


def run_demo(
    out: str | Path,
    size: DemoSize = DemoSize(),
    seed: int = 0,
    progress: bool = True,
    cache: Path | None = None,
    tasks: tuple[str, ...] = ("av", "vt", "at"),
    overrides: list[str] | tuple[str, ...] = (),
    encoders: str | Path = ALIGNED_ENCODERS,
    av_encoders: str | Path = SYNC_ENCODERS,
) -> dict:
    """The demo's whole run into ``out``; ``encoders``: the weights the tiny Qwen2.5-Omni thinker's encoders start
    from (`make_tiny_judges`), ``av_encoders`` those of the AV judge's (the shipped ones keep time: each moment's
    picture was aligned with the sound of the same moment). Writes OUT/demo_report.json, .png and .html; returns the
    report, its printed summary under "text"."""
    out = Path(out)
    checkpoints = make_tiny_judges(cache, encoders=encoders)  # first: a bad encoders file fails before any work
    starts = {task: checkpoints for task in tasks}
    if "av" in tasks:
        starts["av"] = make_tiny_judges(cache, encoders=av_encoders)
    timings = {}
    start = time.perf_counter()
    summary = make_world(size.world(seed), out / "world", progress=progress)
    checks = verify_world(out / "world", progress)
    timings["world"] = time.perf_counter() - start
    expected = size.expected_seconds(timings["world"])
    if progress and expected is not None and set(tasks) == {"av", "vt", "at"}:
        say(
            f"the world took {timings['world']:.0f} s here ({size.pace[0]:.0f} s on the project's 2-core machine, "
            f"where the whole demo takes {size.pace[1] / 60:.0f} min): this run will take about "
            f"{expected / 60:.0f} min in all"
        )
    stats = build_demo_pairs(out / "world", out / "pairs", size.pairs, seed, tasks, progress)
    timings["pairs"] = time.perf_counter() - start - timings["world"]
    results, configs = {}, {}
    for number, task in enumerate(tasks, start=1):
        t0 = time.perf_counter()
        if progress:
            say(f"training the {task.upper()} judge ({number} of {len(tasks)}, {size.epochs_of(task):g} epochs)")
        configs[task] = demo_config(task, starts[task], out / "pairs", out / "train" / task, size, seed, overrides)
        results[task] = {**run_training(configs[task]), "curves": learning_curves(Path(configs[task].output_dir))}
        timings[f"train_{task}"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        results[task]["card"] = card_of_run(configs[task], results[task])
        timings[f"card_{task}"] = time.perf_counter() - t0
    examples = [example for task in tasks for example in held_out_examples(out, task, results[task])]
    generators = None
    if "av" in tasks:  # what a user does next: benchmark generators with the judge, untrained and trained
        t0 = time.perf_counter()
        generators = benchmark_generators(
            out / "bench",
            size.world(seed + 1, clips=size.bench_clips),
            {"untrained": starts["av"][judge_task("av").family], "trained": out / "train" / "av" / "final"},
            seed,
            progress,
        )
        timings["bench"] = time.perf_counter() - t0
    world = world_line(summary, checks, espeak_available())
    report = {
        "world": summary,
        "world_line": world,
        "verification": checks,
        "pairs": stats,
        "seconds": timings,
        "judges": {
            t: {
                "eval_before": r["eval_before"],
                "eval_after": r["eval_after"],
                "loss_history": r["loss_history"],
                "curves": r["curves"],
                "card": r["card"],
                "config": to_dict(configs[t]),
                "checkpoint": str(out / "train" / t / "final"),
            }
            for t, r in results.items()
        },
        "examples": examples,
        "generators": generators,
        "path_only": path_only_lines(size, results),
    }
    plot(results, out / "demo_report.png")
    write_json(out / "demo_report.json", report)
    write_page(report, out / "demo_report.png", out / "demo_report.html")
    lines = [
        world,
        "pairs: "
        + "; ".join(
            f"{t} {stats['judges'][t]['pairs']} ({stats['judges'][t]['rejected']} text rejections)" for t in tasks
        ),
        *evaluation_table(results),
        *path_only_lines(size, results),
        *card_lines(results),
        *generator_lines(generators),
        "seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in timings.items()),
        f"open {out / 'demo_report.html'} for the learning curves and {len(examples)} held-out pairs with their "
        f"scores; the trained judges are in {out / 'train'}/<judge>/final (load them with avjudge score)",
    ]
    return {**report, "text": "\n".join(lines)}
