"""`avjudge serve`: judges and metrics behind an HTTP reward server."""

from __future__ import annotations

import argparse
import ipaddress
from pathlib import Path

from ..commands import alias, non_negative_float, positive_float, positive_int, register
from ..serve.service import SERVER_BUDGET
from .grammar import (
    add_decode_processes,
    add_engine_arguments,
    add_judge,
    add_runtime_arguments,
    add_served_arguments,
    engine_of,
    judge_dirs,
    model_options,
    served_endpoints,
)


def port_number(text: str) -> int:
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"a port from 1 to 65535, not {text!r}")
    return value


def _serve_args(p: argparse.ArgumentParser) -> None:
    add_judge(p, "a judge to serve: av=DIR, vt=DIR or at=DIR")
    p.add_argument("--metric", action="append", default=[], metavar="NAME", help="a metric to serve (repeatable)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (loopback unless a --token-file is given)")
    p.add_argument("--port", type=port_number, default=8000)
    p.add_argument(
        "--max-batch-size", type=positive_int, default=16, help="items of concurrent requests scored together"
    )
    p.add_argument(
        "--max-wait-ms", type=non_negative_float, default=10.0, help="how long the first item waits for a batch to fill"
    )
    p.add_argument("--max-queue", type=positive_int, default=1024, help="items that may wait; beyond, requests get 503")
    p.add_argument(
        "--max-body-mb", type=positive_float, default=64.0, help="largest request body, uploads included (413)"
    )
    p.add_argument("--token-file", type=Path, help="a file holding the bearer token every request must carry")
    p.add_argument(
        "--media-root",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder item paths must lie in (repeatable; none: any file the server can read)",
    )
    g = p.add_argument_group("/get_reward", "OpenRLHF's remote reward: what it rewards with and how it reads queries")
    g.add_argument(
        "--reward-judge",
        help="what /get_reward rewards with: a judge or metric served, or weighted ones (av=2,vt=1); default: the "
        "one served",
    )
    g.add_argument(
        "--on-failure",
        default="neutral",
        help="the reward of a clip that cannot be scored: neutral (its terms' mean over the request's good clips, "
        "else their running mean, else their midpoint) or a finite number; never a silent 0 (no null or NaN: "
        "OpenRLHF makes a tensor of every reward)",
    )
    alias(g, "--failed-reward", "--on-failure NUMBER", dest="on_failure")
    g.add_argument(
        "--reward-mode",
        choices=["pointwise", "win_rate"],
        default="pointwise",
        help="pointwise: each query's own reward; win_rate: its expected win rate against the other queries of its "
        "prompt (GRPO's group), from one scoring each",
    )
    g.add_argument(
        "--clip-from",
        default="query",
        choices=["query", "label", "prompt_json"],
        help="where each clip is: the query's response (a path), the label, or the prompt as JSON {video, text}",
    )
    g.add_argument(
        "--text-from",
        default="prompt",
        choices=["prompt", "response", "label"],
        help="the text a vt / at judge checks: the prompt, the response (the query minus its prompt), the label",
    )
    b = p.add_argument_group(
        "decode budget",
        "what one clip may cost to decode, checked from its headers before decoding; a clip past it is that item's "
        "error, and frames are scaled down as they are decoded to the size the judges read",
    )
    b.add_argument(
        "--max-clip-seconds", type=positive_float, default=SERVER_BUDGET.max_seconds, help="the longest clip"
    )
    b.add_argument(
        "--max-frame-size",
        type=_frame_size,
        default=SERVER_BUDGET.max_frame_pixels,
        metavar="WxH",
        help="the largest frame as stored, in pixels (default: 3840x2160)",
    )
    b.add_argument(
        "--max-decoded-mb",
        type=positive_float,
        default=SERVER_BUDGET.max_decoded_mb,
        help="frames and samples one clip may hold once decoded, estimated before decoding",
    )
    b.add_argument(
        "--decode-timeout",
        type=positive_float,
        default=SERVER_BUDGET.timeout_s,
        help="seconds decoding one clip may take",
    )
    add_served_arguments(p)
    add_runtime_arguments(p, batch_size=16, workers=2)
    add_decode_processes(p)
    add_engine_arguments(p)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from ..config import ConfigError
    from ..judges.served import load_judge
    from ..media import DecodeBudget
    from ..metrics import load_metrics
    from ..metrics.base import METRICS
    from ..serve.app import ServerSettings, create_app, reward_terms
    from ..serve.service import ScoreService

    if args.token_file and not args.token_file.is_file():
        raise ConfigError(f"--token-file {args.token_file}: no such file; write the bearer token into a file")
    token = args.token_file.read_text().strip() if args.token_file else None
    if args.token_file and not token:
        raise ConfigError(f"--token-file {args.token_file} is empty: write the bearer token into it")
    if not _loopback(args.host) and not token:
        raise ConfigError(
            f"--host {args.host} is reachable from other machines: give a --token-file, or serve on 127.0.0.1"
        )
    # checked before any judge loads: its media roots exist, its reward reads
    settings = ServerSettings(
        max_batch_size=args.max_batch_size,
        max_wait_ms=args.max_wait_ms,
        max_queue=args.max_queue,
        max_body_mb=args.max_body_mb,
        token=token,
        media_roots=tuple(args.media_root),
        reward_judge=args.reward_judge,
        on_failure=args.on_failure,
        reward_mode=args.reward_mode,
        clip_from=args.clip_from,
        text_from=args.text_from,
    )
    engine = engine_of(args)
    dirs = judge_dirs(args.judge, defaults=False)
    if args.reward_judge:
        unserved = sorted(set(reward_terms(args.reward_judge)) - set(dirs) - set(args.metric))
        if unserved:
            raise ConfigError(
                f"--reward-judge names {unserved}, which this server does not serve; it serves "
                f"{sorted(set(dirs) | set(args.metric))}"
            )
    endpoints = served_endpoints(args, dirs)
    # every name and folder checked before the first judge loads: a mistake costs no load and prints no address
    for name in args.metric:
        METRICS.lookup(name)
    for task, folder in dirs.items():
        if task not in endpoints and not folder.is_dir():
            raise ConfigError(f"--judge {task}={folder}: no such folder (a trained judge's final/ folder)")
    judges = {
        task: load_judge(task, folder, endpoints.get(task), **model_options(args, engine))
        for task, folder in dirs.items()
    }
    metrics = {m.name: m for m in load_metrics(args.metric, args.device)}
    if not judges and not metrics:
        raise ConfigError("nothing to serve: give --judge TASK=DIR or --metric NAME")
    # the scoring core decodes each batch's clips, in --workers threads (the judges get clips already decoded)
    budget = DecodeBudget(args.max_clip_seconds, args.max_frame_size, args.max_decoded_mb, args.decode_timeout)
    service = ScoreService(judges, metrics, args.workers, args.decode_processes, budget)
    if engine.name == "ray":
        from ..serve.ray_serve import serve_on_ray

        serve_on_ray(engine, service, settings, args.host, args.port)
        return 0
    print(f"serving {service.names()} on http://{args.host}:{args.port} (POST /v1/score, /get_reward)", flush=True)
    uvicorn.run(
        create_app(service, settings),
        host=args.host,
        port=args.port,
        log_level="warning",
        timeout_graceful_shutdown=30,
        access_log=False,  # a token may ride in a request's path: paths are never logged
    )
    return 0


def _frame_size(text: str) -> int:
    """Pixels of a frame size given as WxH (3840x2160)."""
    width, _, height = text.lower().partition("x")
    try:
        pixels = int(width) * int(height)
    except ValueError:
        pixels = 0
    if pixels <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a frame size as WIDTHxHEIGHT, e.g. 3840x2160")
    return pixels


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


register(
    "serve",
    "a reward server: judges and metrics over HTTP, concurrent requests batched together",
    _serve_args,
    _serve,
    "Serve judges (and metrics) to RL trainers and pipelines: POST /v1/score takes\n"
    '{"items": [{"id", "judge", "video", "audio"?, "text"?}]} and answers each item\'s score, delta,\n'
    "P(Yes), P(No) or error; POST /get_reward speaks OpenRLHF's remote reward protocol; GET /health,\n"
    "/v1/models and /metrics (Prometheus). Items of concurrent requests share forward passes\n"
    "(--max-batch-size, --max-wait-ms); a full queue answers 503 with Retry-After. Listens on\n"
    "loopback unless a --token-file is given.\n\n"
    "examples:\n"
    "  avjudge serve --judge av=runs/av/final --port 8000\n"
    '  curl -s localhost:8000/v1/score -d \'{"items": [{"id": "1", "judge": "av", "video": "/data/clip.mp4"}]}\'\n'
    "  (a path as the server reads it: absolute, or relative to the first --media-root)\n"
    "  avjudge serve --judge av=runs/av/final --host 0.0.0.0 --token-file token.txt --media-root /data/rollouts\n"
    "  avjudge serve --judge av=runs/av/final --engine ray --address auto   (Ray Serve: a replica per GPU)\n"
    "  avjudge serve --judge av=runs/av/final --served-url http://127.0.0.1:8001/v1   (vLLM runs the judge's model)",
)
