"""The flags the commands that score clips share (the registry and the flags every command shares are in
`avjudge.commands`): ``--judge TASK=DIR`` wherever a command loads a judge (and ``--served-url [TASK=]URL`` where a
server runs its model), ``--batch-size``, ``--workers``, ``--device`` on every command that scores clips, and
``--engine`` where a batch job may run on Ray.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..commands import count, non_negative_float, positive_int


def add_judge(p: argparse.ArgumentParser, help: str, repeatable: bool = True) -> None:
    """``--judge TASK=DIR``: a judge checkpoint by task; ``args.judge`` is a list of the strings given."""
    p.add_argument(
        "--judge",
        action="append",
        metavar="TASK=DIR",
        help=help + (" (repeatable)" if repeatable else ""),
    )


def judge_dirs(specs: list[str] | None, defaults: bool = True) -> dict[str, Path]:
    """``--judge``'s ``["av=ckpt/av", "vt=ckpt/vt"]`` -> {task: folder}; with ``defaults``, the judges not given
    come from the default folder (``$AVJUDGE_CHECKPOINTS/judges/TASK``)."""
    from ..config import ConfigError
    from ..prompts import task as get_task

    dirs = {}
    if defaults:
        from ..scoring.clip_scorer import default_judge_dirs  # the checkpoint manifest's root: metrics code

        dirs = default_judge_dirs()
    given: dict[str, str] = {}
    for spec in specs or []:
        task, sep, path = spec.partition("=")
        if not sep or not path:
            raise ConfigError(f"--judge takes TASK=DIR (e.g. av=runs/av/final), got {spec!r}")
        name = get_task(task.strip()).name
        if name in given:  # the later one would silently win
            raise ConfigError(f"--judge gives the {name} judge twice ({given[name]!r}, {spec!r}): give it once")
        given[name] = spec
        dirs[name] = Path(path.strip()).expanduser()
    return dirs


def one_judge(specs: list[str] | None) -> tuple[str, Path]:
    """The one ``--judge TASK=DIR`` a command takes: (task, folder)."""
    from ..config import ConfigError

    dirs = judge_dirs(specs, defaults=False)
    if len(dirs) != 1:
        raise ConfigError("give one judge as --judge TASK=DIR, e.g. --judge av=runs/av/final")
    return next(iter(dirs.items()))


def add_runtime_arguments(
    p: argparse.ArgumentParser, batch_size: int = 8, workers: int = 2, model: bool = True
) -> None:
    """What every command that scores clips shares: batch size, decoding threads, where models run, progress."""
    p.add_argument("--batch-size", type=positive_int, default=batch_size, help="clips scored together")
    p.add_argument(
        "--workers",
        type=positive_int,
        default=workers,
        help="threads that decode and prepare clips while models score; on a GPU machine give it more",
    )
    p.add_argument("--device", default="auto", help="auto: CUDA when there is one, else CPU")
    if model:
        p.add_argument(
            "--dtype",
            default="auto",
            choices=["auto", "float32", "bfloat16", "float16"],
            help="judges' weights: auto is bfloat16 on a GPU, float32 on CPU",
        )
        p.add_argument(
            "--attention",
            default="auto",
            help="auto: packed window attention in the Omni encoders; or a transformers "
            "implementation: sdpa, eager, flash_attention_2 (needs flash-attn)",
        )
        p.add_argument(
            "--align-widths",
            type=count,
            default=0,
            metavar="N",
            help="pad judges' MLP widths with zeros to a multiple of N (0: as released): the same scores up to "
            "rounding; 8 puts Qwen2.5-Omni's 3,420-wide vision MLPs on the rows Hopper GPUs' matrix kernels need",
        )
        p.add_argument(
            "--compile",
            action="store_true",
            help="torch.compile the judges' repeated blocks (norms, rotary and activations fuse); the first "
            "batches take tens of seconds longer",
        )
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def add_engine_arguments(p: argparse.ArgumentParser) -> None:
    """Where a batch job's chunks run: this process, or a pool of Ray actors across a cluster."""
    g = p.add_argument_group("engine", "run on a Ray cluster; the output, its resume and its errors are the same")
    g.add_argument(
        "--engine", choices=["local", "ray"], default="local", help="local: this process; ray: a pool of Ray actors"
    )
    g.add_argument(
        "--address", help="with --engine ray: local (a cluster on this machine, the default), auto, ray://HOST:10001"
    )
    g.add_argument(
        "--actors", type=positive_int, help="with --engine ray: actors, each with its models (default: one per GPU)"
    )
    g.add_argument(
        "--gpus-per-actor", type=non_negative_float, help="with --engine ray: default 1 where the cluster has GPUs"
    )


def add_served_arguments(p: argparse.ArgumentParser) -> None:
    """Judges scored through an OpenAI-compatible server (vLLM, SGLang) serving their checkpoints."""
    g = p.add_argument_group(
        "served judges",
        "score a judge through an OpenAI-compatible server (vLLM, SGLang) serving its merged checkpoint; the --judge "
        "folder still gives its tokenizer, processor settings and calibration",
    )
    g.add_argument(
        "--served-url",
        action="append",
        metavar="[TASK=]URL",
        help="the server's OpenAI base URL, e.g. http://127.0.0.1:8000/v1; TASK= names the judge it serves where "
        "there are several (repeatable)",
    )
    g.add_argument(
        "--served-model",
        action="append",
        metavar="[TASK=]NAME",
        help="the model name a server serves (default: the judge's checkpoint folder name; repeatable)",
    )
    g.add_argument("--served-token-file", type=Path, help="a file holding the servers' bearer token")


def served_endpoints(args: argparse.Namespace, dirs: dict[str, Path]) -> dict:
    """{task: `avjudge.judges.served.ServedEndpoint`} of the judges ``add_served_arguments``'s flags serve."""
    from ..config import ConfigError
    from ..judges.served import ServedEndpoint

    urls = _per_judge(args.served_url, dirs, "--served-url")
    models = _per_judge(args.served_model, dirs, "--served-model")
    unserved = sorted(set(models) - set(urls))
    if unserved:
        raise ConfigError(f"--served-model {unserved[0]}=...: the {unserved[0]} judge has no --served-url")
    token = args.served_token_file.read_text().strip() if args.served_token_file else None
    return {task: ServedEndpoint(url, models.get(task, dirs[task].name), token) for task, url in urls.items()}


def _per_judge(values: list[str] | None, dirs: dict[str, Path], flag: str) -> dict[str, str]:
    """``TASK=VALUE`` or, where one judge is loaded, ``VALUE``, by task."""
    from ..config import ConfigError
    from ..prompts import TASKS

    given = {}
    for value in values or []:
        task, sep, rest = value.partition("=")
        if sep and task.strip() in TASKS:
            given[task.strip()] = rest.strip()
        elif len(dirs) == 1:
            given[next(iter(dirs))] = value
        else:
            raise ConfigError(f"{flag} {value}: say which judge, e.g. {flag} av={value}")
    for task in given:
        if task not in dirs:
            raise ConfigError(f"{flag} {task}=...: no {task} judge is loaded (give --judge {task}=DIR)")
    return given


def add_decode_processes(p: argparse.ArgumentParser) -> None:
    """``--decode-processes``, for the commands whose jobs decode through the scoring core."""
    from ..media.processes import decoding_processes

    p.add_argument(
        "--decode-processes",
        type=lambda value: decoding_processes(count(value)),  # more than the cores: capped, with a warning
        help="processes that decode clips while the model scores (default: where a judge runs on a GPU, one per core "
        f"the model's process leaves, {decoding_processes()} here; else 0: threads of the model's process decode). "
        "Decoding needs Python's lock, which a model on a GPU holds while it launches work; at most one per core",
    )


def engine_of(args: argparse.Namespace):
    """The engine ``add_engine_arguments``'s flags name."""
    from ..runtime import make_engine

    return make_engine(
        args.engine,
        address=args.address,
        actors=args.actors,
        gpus_per_actor=args.gpus_per_actor,
        decode_processes=getattr(args, "decode_processes", None),  # where the command has the flag
    )


def model_options(args: argparse.Namespace, engine=None) -> dict:
    """The judge-loading options of ``add_runtime_arguments`` as `Judge.load` takes them; for a job that ``engine``
    runs elsewhere, the judges load their weights there (``defer_weights``), not here."""
    options = {
        "batch_size": args.batch_size,
        "workers": args.workers,
        "device": args.device,
        "dtype": args.dtype,
        "attention": args.attention,
        "align_widths": args.align_widths,
        "compile": args.compile,
    }
    return options | ({"defer_weights": True} if engine is not None and not engine.scores_here else {})


def add_scorer_arguments(p: argparse.ArgumentParser) -> None:
    """What scores clips on benchmark dimensions (`bench run`, `filter`): judges, served judges, runtime options."""
    add_judge(p, "a judge checkpoint, e.g. av=runs/av/final (default: $AVJUDGE_CHECKPOINTS/judges/TASK)")
    add_served_arguments(p)
    add_runtime_arguments(p)
    add_decode_processes(p)


def clip_scorer(args: argparse.Namespace, dimensions, engine):
    """The `avjudge.scoring.clip_scorer.ClipScorer` of ``dimensions`` that `add_scorer_arguments`'s flags ask for; the
    dimensions that cannot run here are said, with why."""
    from ..scoring.clip_scorer import ClipScorer

    options = model_options(args, engine)
    dirs = judge_dirs(args.judge)
    scorer = ClipScorer(dimensions, dirs, options, options.pop("workers"), served_endpoints(args, dirs))
    for name, reason in scorer.skipped.items():
        print(f"skipping {name}: {reason}")
    return scorer


def job_exit(summary: dict, what: str = "clips") -> int:
    """A batch job's exit status: 0, or 1 where every item it has failed (said on stderr, with the first reason)."""
    done, errors = summary.get("done", 0), summary.get("errors", 0)
    if done and errors == done:
        reasons = summary.get("error_reasons") or []
        print(
            f"avjudge: every one of the {done} {what} failed{f' (e.g. {reasons[0]})' if reasons else ''}; "
            f"each reason is in {summary.get('output')}",
            file=sys.stderr,
        )
        return 1
    return 0
