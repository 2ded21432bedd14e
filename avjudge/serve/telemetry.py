"""The server's counters and histograms, exposed as Prometheus text (`GET /metrics`) without a client library."""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import Counter

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)  # seconds
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)


class Histogram:
    def __init__(self, buckets: tuple[float, ...]):
        self.buckets, self.counts, self.sum, self.n = buckets, [0] * (len(buckets) + 1), 0.0, 0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.buckets, value)] += 1
        self.sum += value
        self.n += 1

    def lines(self, name: str) -> list[str]:
        lines, running = [], 0
        for bound, count in zip((*self.buckets, "+Inf"), self.counts):
            running += count
            lines.append(f'{name}_bucket{{le="{bound}"}} {running}')
        return [*lines, f"{name}_sum {self.sum}", f"{name}_count {self.n}"]


class Telemetry:
    """What the server did: requests by endpoint and status, item errors and refusals by kind, batch sizes,
    request latencies, and the queue's depth now."""

    def __init__(self):
        self.lock = threading.Lock()
        self.requests: Counter = Counter()  # (endpoint, status)
        self.errors: Counter = Counter()  # kind
        self.batch_sizes = Histogram(BATCH_BUCKETS)
        self.latency = Histogram(LATENCY_BUCKETS)
        self.queue_depth = 0

    def request(self, endpoint: str, status: int, seconds: float) -> None:
        with self.lock:
            self.requests[(endpoint, status)] += 1
            self.latency.observe(seconds)

    def error(self, kind: str, count: int = 1) -> None:
        with self.lock:
            self.errors[kind] += count

    def batch(self, size: int) -> None:
        with self.lock:
            self.batch_sizes.observe(size)

    def render(self) -> str:
        with self.lock:
            lines = [
                "# TYPE avjudge_queue_depth gauge",
                f"avjudge_queue_depth {self.queue_depth}",
                "# TYPE avjudge_requests_total counter",
                *(
                    f'avjudge_requests_total{{endpoint="{e}",status="{s}"}} {n}'
                    for (e, s), n in sorted(self.requests.items())
                ),
                "# TYPE avjudge_errors_total counter",
                *(f'avjudge_errors_total{{kind="{k}"}} {n}' for k, n in sorted(self.errors.items())),
                "# TYPE avjudge_batch_size histogram",
                *self.batch_sizes.lines("avjudge_batch_size"),
                "# TYPE avjudge_request_seconds histogram",
                *self.latency.lines("avjudge_request_seconds"),
            ]
        return "\n".join(lines) + "\n"
