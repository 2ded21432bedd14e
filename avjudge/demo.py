"""`avjudge demo`: the whole pipeline on built-in defaults, on a CPU.

make a synthetic world -> check it against its ground truth -> build AV, VT and AT pair
datasets with hard negatives -> score the held-out pairs with untrained tiny judges ->
train them -> score again -> a table of held-out balanced accuracy per negative type,
before and after, each of the demo's targets met or not, and learning curves along training,
written as JSON and a PNG chart.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from tqdm import tqdm

from .config import load_config
from .data import build_dataset, load_pairs, load_recipe
from .data.audit import text_leak
from .jsonl import read_jsonl, write_json
from .judges.judge import JudgeSettings, sampled_frames
from .judges.tiny import ALIGNED_ENCODERS, make_tiny_judges
from .media import MediaError, decode
from .prompts import task as judge_task
from .stats import format_statistic
from .train import TrainConfig, evaluation_table, learning_curves, run_training
from .world import MANIFEST, Scene, WorldConfig, make_world
from .world.decidability import ambience_gives_away, caption_edit_told, frame_times
from .world.speech import espeak_available
from .world.verify import verify_clip

ROOT = Path(__file__).resolve().parent.parent
RECIPE = ROOT / "data_recipes" / "world_demo.yaml"
TRAIN_CONFIGS = {task: ROOT / "train_configs" / f"tiny_world_{task}.yaml" for task in ("av", "vt", "at")}


@dataclasses.dataclass(frozen=True)
class DemoSize:
    clips: int = 240
    duration: float = 4.0
    frame_size: int = 192
    pairs: int = 2400  # per judge
    epochs: float = 3.0
    # judges trained longer than ``epochs``: the AV judge's random mismatches need more views than 3 epochs give
    # (docs/tiny_judges.md); the VT and AT judges gained nothing from more steps
    judge_epochs: dict[str, float] = dataclasses.field(default_factory=lambda: {"av": 6.0})
    # every clip has the ambience its place implies, as real recordings have room tone: one more audio-visual link
    # for random mismatches to break, and a zero-padded shift's silence stands out (docs/tiny_judges.md)
    ambience_prob: float = 1.0

    def epochs_of(self, task: str) -> float:
        return self.judge_epochs.get(task, self.epochs)

    def scaled(self, clips: int | None = None, pairs: int | None = None, epochs: float | None = None) -> DemoSize:
        """This size with the values given (None keeps one); ``epochs`` is then every judge's."""
        size = dataclasses.replace(self, **{k: v for k, v in (("clips", clips), ("pairs", pairs)) if v is not None})
        return size if epochs is None else dataclasses.replace(size, epochs=epochs, judge_epochs={})

    def world(self, seed: int = 0, clips: int | None = None) -> WorldConfig:
        """The world config of demo-sized clips (``clips`` of them, default the demo's)."""
        return WorldConfig(
            n=self.clips if clips is None else clips,
            seed=seed,
            duration=self.duration,
            width=self.frame_size,
            height=self.frame_size,
            ambience_prob=self.ambience_prob,
        )


QUICK = DemoSize(clips=8, duration=3.0, frame_size=192, pairs=48, epochs=1.0, judge_epochs={})


@dataclasses.dataclass(frozen=True)
class Target:
    """What the demo is meant to show: a trained judge's held-out balanced accuracy on one negative type reaches
    ``trained``, where the untrained judge sat within ``untrained`` (chance)."""

    judge: str
    negative_type: str
    what: str  # the negative in the target's words
    trained: float = 0.9
    untrained: tuple[float, float] = (0.4, 0.6)


# issue #5's targets, for the negative types that stand for them in the demo recipe
TARGETS = (
    Target("av", "random_mismatch", "another clip's audio"),
    Target("av", "time_shift_medium", "audio shifted by 1-3 s"),
    Target("vt", "appearance", "a colour, shape or size word swapped"),
    Target("vt", "counting", "a count changed"),
    Target("vt", "motion", "a motion changed"),
)


def shown_times(scene: Scene, fps: float) -> np.ndarray:
    """The moments (s) of the world frames a judge sampling at ``fps`` is shown (`sampled_frames`)."""
    times = frame_times(scene)
    return times[sampled_frames(times, 0.0, scene.duration, fps, JudgeSettings("vt").max_frames)[0]]


def caption_edits_told(records: list[dict], world: dict[str, dict], fps: float) -> list[tuple[str, str, bool]]:
    """(negative type, kind of edit, whether a judge shown the clip's frames at ``fps`` can tell it) for each
    negative of ``records`` (VT pairs made by the caption editor); ``world``: clip id -> its world record."""
    rows = []
    for record in records:
        if record["label"] == 0:
            entry = world[record["source_id"]]
            scene = Scene.from_dict(entry["scene"])
            kind, told = caption_edit_told(record, scene, entry["captions"]["video"], shown_times(scene, fps))
            rows.append((record["negative_type"], kind, told))
    return rows


def caption_edit_ceilings(out: Path, fps: float) -> dict[str, float]:
    """Per VT negative type of the demo's held-out pairs, the best balanced accuracy a judge shown the world's
    frames at ``fps`` can reach: it accepts every positive and turns away exactly the edits its frames contradict."""
    world = {record["id"]: record for record in read_jsonl(out / "world" / MANIFEST)}
    told = defaultdict(list)
    for negative_type, _, can_tell in caption_edits_told(load_pairs(out / "pairs", "vt", "test"), world, fps):
        told[negative_type].append(can_tell)
    return {negative_type: (1 + float(np.mean(values))) / 2 for negative_type, values in told.items()}


def random_mismatch_reading(out: Path, scores: dict[str, float | None]) -> dict:
    """What the demo's held-out random mismatches give away by their ambience alone, and what a judge reads of them:
    the share whose sound brings an ambience the picture's place cannot have (`ambience_gives_away`), the balanced
    accuracy that reading alone reaches (every positive accepted, exactly those turned away), and the share of those
    and of the rest that the judge whose pair scores are ``scores`` (pair id -> score) turns away at 0.5."""
    scenes = {record["id"]: record["scene"] for record in read_jsonl(out / "world" / MANIFEST)}
    scored = defaultdict(list)
    for record in load_pairs(out / "pairs", "av", "test"):
        if record["strategy"] == "random_mismatch" and record["id"] in scores:
            given_away = ambience_gives_away(scenes[record["source_id"]], scenes[record["params"]["source"]])
            scored[given_away].append(scores[record["id"]])
    share = len(scored[True]) / max(len(scored[True]) + len(scored[False]), 1)

    def turned_away(values: list) -> float | None:
        values = [v for v in values if v is not None]  # a pair that failed to score is no answer
        return float(np.mean(np.array(values) < 0.5)) if values else None

    return {
        "given_away": share,
        "ambience_alone": (1 + share) / 2,
        "turned_away_given_away": turned_away(scored[True]),
        "turned_away_rest": turned_away(scored[False]),
    }


def random_mismatch_why(reading: dict) -> str:
    """`random_mismatch_reading` in words (a group the held-out pairs lack is left out)."""
    turned = [
        f"{share:.0%} of {which}"
        for share, which in (
            (reading["turned_away_given_away"], "those"),
            (reading["turned_away_rest"], "the rest, which only the objects' sounds tell"),
        )
        if share is not None
    ]
    return (
        f"{reading['given_away']:.0%} of them bring an ambience their picture's place cannot have, so reading "
        f"that alone reaches {reading['ambience_alone']:.2f}; the judge turns away {' and '.join(turned)}"
    )


def caption_reading_why(text_alone: float | None, judge: float | None) -> str:
    """A caption edit's target, missed: how well the caption's words alone (`text_leak`) and the trained judge rank
    its held-out pairs; a judge below the words has learned neither to look nor the text's own tells."""
    return (
        f"the caption's words alone rank these pairs at AUROC {format_statistic(text_alone, 2)}, "
        f"the trained judge at {format_statistic(judge, 2)}"
    )


def check_targets(
    results: dict, ceilings: dict[tuple[str, str], float] | None = None, why: dict[tuple[str, str], str] | None = None
) -> list[dict]:
    """Each target of a judge in ``results`` (task -> {"eval_before", "eval_after", optionally "curves"}), with its
    figures and learning curve; a type the held-out pairs lack has figures None and is not met. ``ceilings``:
    (judge, negative type) -> the best balanced accuracy what the judge is shown allows, where known; ``why``:
    (judge, negative type) -> what the run shows of why a target is where it is, said where it is not met."""
    rows = []
    for target in TARGETS:
        if target.judge not in results:
            continue
        before, after = (
            results[target.judge][key]["per_type"].get(target.negative_type, {}).get("balanced_accuracy")
            for key in ("eval_before", "eval_after")
        )
        low, high = target.untrained
        rows.append(
            {
                **dataclasses.asdict(target),
                "before": before,
                "after": after,
                "untrained_at_chance": before is not None and low <= before <= high,
                "met": after is not None and after >= target.trained,
                "ceiling": (ceilings or {}).get((target.judge, target.negative_type)),
                "why": (why or {}).get((target.judge, target.negative_type)),
                "curve": results[target.judge].get("curves", {}).get(target.negative_type),
            }
        )
    return rows


def _target_lines(rows: list[dict]) -> list[str]:
    if not rows:  # no judge with a target was run
        return []
    met = sum(row["met"] for row in rows)
    lines = [
        f"targets (held-out balanced accuracy, untrained -> trained): {met} of {len(rows)} met"
        + ("" if met == len(rows) else "; docs/tiny_judges.md shows why the others are not")
    ]
    for row in rows:
        if row["after"] is None:
            verdict = "not met: no held-out negatives of this type"
        else:
            verdict = f">= {row['trained']:.2f} met" if row["met"] else f"< {row['trained']:.2f} not met"
        chance = ", untrained not at chance" if row["before"] is not None and not row["untrained_at_chance"] else ""
        ceiling = (
            f"; its frames allow at most {row['ceiling']:.2f}"
            if row["ceiling"] is not None and row["ceiling"] < row["trained"]
            else ""
        )
        lines.append(
            f"  {row['judge']:<4}{row['negative_type']:<20}{format_statistic(row['before']):>6} -> "
            f"{format_statistic(row['after']):<6} {verdict}{chance}  ({row['what']}{ceiling})"
        )
        if not row["met"] and row["why"]:
            lines.append(f"{'':<8}{row['why']}")
        if not row["met"] and row["curve"]:
            lines.append(
                f"{'':<8}its learning curve (step: held-out balanced accuracy): "
                + " ".join(f"{step}:{format_statistic(value, 2)}" for step, value in row["curve"])
            )
    return lines


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


def run_demo(
    out: str | Path,
    size: DemoSize = DemoSize(),
    seed: int = 0,
    progress: bool = True,
    cache: Path | None = None,
    tasks: tuple[str, ...] = ("av", "vt", "at"),
    overrides: list[str] | tuple[str, ...] = (),
    encoders: str | Path = ALIGNED_ENCODERS,
) -> dict:
    """The demo's whole run into ``out``; ``encoders``: the weights the tiny Qwen2.5-Omni thinker's encoders start
    from (`make_tiny_judges`). Returns the report, its text under "text"."""
    out = Path(out)
    checkpoints = make_tiny_judges(cache, encoders=encoders)  # first: a bad encoders file fails before any work
    timings = {}
    start = time.perf_counter()
    summary = make_world(size.world(seed), out / "world", progress=progress)
    checks = verify_world(out / "world", progress)
    timings["world"] = time.perf_counter() - start
    stats = build_demo_pairs(out / "world", out / "pairs", size.pairs, seed, tasks, progress)
    timings["pairs"] = time.perf_counter() - start - timings["world"]
    results, ceilings, why = {}, {}, {}
    for task in tasks:
        t0 = time.perf_counter()
        config = load_config(
            TrainConfig,
            TRAIN_CONFIGS[task],
            [
                f"model={checkpoints[judge_task(task).family]}",
                f"dataset={out / 'pairs'}",
                f"output_dir={out / 'train' / task}",
                f"epochs={size.epochs_of(task)}",
                f"seed={seed}",
                *overrides,
            ],
        )
        results[task] = {**run_training(config), "curves": learning_curves(Path(config.output_dir))}
        timings[f"train_{task}"] = time.perf_counter() - t0
        if task == "vt":  # what the VT judge's frames allow on each caption edit
            fps = JudgeSettings("vt", fps=config.fps).resolved().fps
            ceilings |= {("vt", kind): value for kind, value in caption_edit_ceilings(out, fps).items()}
            text_alone, trained = text_leak(out / "pairs", "vt")["per_type"], results[task]["eval_after"]["per_type"]
            why |= {
                ("vt", t.negative_type): caption_reading_why(
                    text_alone.get(t.negative_type), trained.get(t.negative_type, {}).get("auroc")
                )
                for t in TARGETS
                if t.judge == "vt"
            }
        if task == "av":  # what the AV judge reads of random mismatches: the ambience against the place, or more
            why[task, "random_mismatch"] = random_mismatch_why(
                random_mismatch_reading(out, results[task]["eval_after"]["scores"])
            )
    targets = check_targets(results, ceilings, why)
    lines = [
        world_line(summary, checks, espeak_available()),
        "pairs: "
        + "; ".join(
            f"{t} {stats['judges'][t]['pairs']} ({stats['judges'][t]['rejected']} text rejections)" for t in tasks
        ),
        *evaluation_table(results),
        *_target_lines(targets),
        "seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in timings.items()),
        f"report: {out / 'demo_report.json'}, chart: {out / 'demo_report.png'}",
    ]
    plot(results, out / "demo_report.png")
    report = {
        "world": summary,
        "verification": checks,
        "pairs": stats,
        "seconds": timings,
        "targets": targets,
        "judges": {
            t: {
                "eval_before": r["eval_before"],
                "eval_after": r["eval_after"],
                "loss_history": r["loss_history"],
                "curves": r["curves"],
                "checkpoint": str(out / "train" / t / "final"),
            }
            for t, r in results.items()
        },
        "text": "\n".join(lines),
    }
    write_json(out / "demo_report.json", report)
    return report
