"""`avjudge serve --engine ray`: the reward server's app as a Ray Serve deployment, replicas across a cluster.

Each replica is the app `avjudge serve` runs alone (`create_app`): its own judges and metrics (they travel to
the replica as what loads them and load there, on its GPU where it has one), its own batcher, the same endpoints
and status codes. Ray Serve's proxy spreads requests over the replicas; each replica takes up to ``max_queue``
of them at once, so concurrent requests still share its forward passes and a full queue is still a 503.
"""

from __future__ import annotations

import signal
import threading

from ..config import ConfigError
from ..runtime.ray_engine import RayEngine
from .app import ServerSettings, create_app
from .service import ScoreService

APP_NAME = "avjudge"


class _Replica:
    def __init__(self, service: ScoreService, settings: ServerSettings):
        self.asgi = create_app(service, settings)  # not "app": the Serve wrapper has a property of that name

    def __serve_build_asgi_app__(self):
        return self.asgi


NO_ACCESS_LOG = {"enable_access_log": False}  # a token may ride in a request's path: paths are never logged


def serve_on_ray(engine: RayEngine, service: ScoreService, settings: ServerSettings, host: str, port: int) -> None:
    """Serve on Ray until SIGINT or SIGTERM, then shut the deployment down."""
    ray = engine.connect()
    try:
        from ray import serve
    except ImportError as err:
        raise ConfigError("--engine ray serves through Ray Serve: pip install 'avjudge[ray]'") from err

    replicas, gpus = engine.pool(ray)
    deployment = serve.deployment(
        serve.ingress()(_Replica),
        name=APP_NAME,
        num_replicas=replicas,
        ray_actor_options={"num_cpus": engine.cpus_per_actor, "num_gpus": gpus},
        max_ongoing_requests=settings.max_queue,  # the replica's own batcher bounds its queue (503 beyond)
        logging_config=NO_ACCESS_LOG,
    )
    serve.start(http_options={"host": host, "port": port}, logging_config=NO_ACCESS_LOG)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        serve.run(deployment.bind(service, settings), name=APP_NAME, route_prefix="/")
        print(f"serving {service.names()} on http://{host}:{port} with {replicas} Ray Serve replica(s)", flush=True)
        stop.wait()
    finally:
        serve.shutdown()
