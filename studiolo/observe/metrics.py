"""`Metrics`: the service's Prometheus metrics, through `prometheus_client`, one registry per app.

Names follow the Prometheus conventions (`_total` for counters, `_seconds` for durations,
base units). Every label takes a bounded set of values: a route *template* (never a path),
a known HTTP method (else `OTHER`), a status code, a reason code, an outcome, a state.

With `serve --workers N` the metrics are kept in memory-mapped files shared by the workers
(`multiprocess.enable`, called by the supervisor before it forks): any worker answers
`GET /metrics` with the sums of all of them, those of workers that died included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

__all__ = ["CONTENT_TYPE", "METHODS", "Metrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Request and completion latencies: 1 ms to 10 s (a completion on PostgreSQL is a few ms).
_SECONDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_WAITS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0)  # queueing before a batch
_LAG = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)  # commit → git
_CHECKS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)  # submission → receipt
_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)  # writes in one batch or group
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class Metrics:
    """The metrics of one app. `multiprocess_dir`: the directory `multiprocess.enable` set up,
    whose files `render` sums (None: this process's values only)."""

    def __init__(self, multiprocess_dir: Path | None = None, *, enabled: bool = True) -> None:
        self.registry = r = CollectorRegistry()
        self._dir = multiprocess_dir
        self.enabled = enabled  # False: nothing is counted (`STUDIOLO_METRICS=0`)
        self._series: dict[tuple[str, str, int], tuple[Any, Any]] = {}  # a request's two series
        self.requests = Counter(
            "studiolo_http_requests", "HTTP requests by method, route template and status.",
            ["method", "route", "status"], registry=r,
        )  # fmt: skip
        self.request_seconds = Histogram(
            "studiolo_http_request_duration_seconds",
            "HTTP request latency, first byte in to last byte out, by method, route template and status.",
            ["method", "route", "status"], buckets=_SECONDS, registry=r,
        )  # fmt: skip
        self.completions = Counter(
            "studiolo_completions",
            "Completion requests by outcome (accepted, replayed, rejected) and reason.",
            ["outcome", "reason"], registry=r,
        )  # fmt: skip
        self.completion_seconds = Histogram(
            "studiolo_completion_duration_seconds",
            "Completion latency at the door (stage=door: the transaction and its retries) and end to end "
            "(stage=request: the HTTP request, queueing and authentication included), by outcome.",
            ["stage", "outcome"], buckets=_SECONDS, registry=r,
        )  # fmt: skip
        self.heartbeat_batch = Histogram(
            "studiolo_heartbeat_batch_size", "Heartbeats written in one transaction by the lease lane.",
            buckets=_SIZES, registry=r,
        )  # fmt: skip
        self.heartbeat_wait = Histogram(
            "studiolo_heartbeat_wait_seconds", "Time a heartbeat waited in the lease lane before its batch.",
            buckets=_WAITS, registry=r,
        )  # fmt: skip
        self.group_size = Histogram(
            "studiolo_group_commit_size", "Writes committed in one group commit (SQLite).",
            buckets=_SIZES, registry=r,
        )  # fmt: skip
        self.group_wait = Histogram(
            "studiolo_group_commit_wait_seconds",
            "Time a write waited in the group-commit queue before its group.",
            buckets=_WAITS, registry=r,
        )  # fmt: skip
        self.delegations = Counter(
            "studiolo_a2a_delegation_transitions",
            "A2A delegations entering a state: inbound (delegated, refused), outbound (remote states).",
            ["direction", "state"], registry=r,
        )  # fmt: skip
        self.receipts = Counter(
            "studiolo_receipts", "Verifier receipts recorded, by result.", ["result"], registry=r,
        )  # fmt: skip
        self.git_lag = Histogram(
            "studiolo_git_publication_lag_seconds",
            "Time from a commit to its publication in the git projection.",
            buckets=_LAG, registry=r,
        )  # fmt: skip
        self.checks = Histogram(
            "studiolo_verifier_check_duration_seconds",
            "Time from a candidate's submission to a verifier's receipt for it (queueing and the "
            "check, on the authority clock), by result.",
            ["result"], buckets=_CHECKS, registry=r,
        )  # fmt: skip
        self.queue = _QueueDepth()
        r.register(self.queue)
        self.retries = Counter(
            "studiolo_db_serialization_retries", "Transactions retried after a serialization failure.",
            registry=r,
        )  # fmt: skip

    # the HTTP face ------------------------------------------------------------
    def request(self, method: str, route: str, status: int, seconds: float) -> None:
        if not self.enabled:
            return
        labels = (method if method in METHODS else "OTHER", route, status)
        series = self._series.get(labels)
        if series is None:  # bounded: the labels take bounded values (module docstring)
            text = (labels[0], route, str(status))
            series = self._series[labels] = (self.requests.labels(*text), self.request_seconds.labels(*text))
        series[0].inc()
        series[1].observe(seconds)

    def completion(self, outcome: str, reason: str, seconds: float) -> None:
        """One completion answered by the door: `outcome` accepted, replayed or rejected."""
        if not self.enabled:
            return
        self.completions.labels(outcome, reason).inc()
        self.completion_seconds.labels("door", outcome).observe(seconds)

    def completion_request(self, outcome: str, seconds: float) -> None:
        if not self.enabled:
            return
        self.completion_seconds.labels("request", outcome).observe(seconds)

    # the ledger and the workers behind the door ------------------------------------
    def heartbeats(self, size: int, waited: float) -> None:
        if not self.enabled:
            return
        self.heartbeat_batch.observe(size)
        self.heartbeat_wait.observe(waited)

    def group_committed(self, size: int, waited: float) -> None:
        if not self.enabled:
            return
        self.group_size.observe(size)
        self.group_wait.observe(waited)

    def serialization_retry(self) -> None:
        if not self.enabled:
            return
        self.retries.inc()

    def delegation(self, direction: str, state: str) -> None:
        if not self.enabled:
            return
        self.delegations.labels(direction, state).inc()

    def receipt(self, result: str, checked_after: float | None = None) -> None:
        """A receipt recorded; `checked_after`: seconds since its candidate was submitted."""
        if not self.enabled:
            return
        self.receipts.labels(result).inc()
        if checked_after is not None:
            self.checks.labels(result).observe(max(0.0, checked_after))

    def watch_queue(self, depth: Callable[[], int]) -> None:
        """Read the verifier queue's depth (a ledger read) at each scrape."""
        if self.enabled:
            self.queue.depth = depth

    def published(self, lag_seconds: float) -> None:
        if not self.enabled:
            return
        self.git_lag.observe(max(0.0, lag_seconds))

    # exposition -----------------------------------------------------------------
    def render(self) -> bytes:
        """The text exposition format: this registry, or every worker's files summed."""
        if self._dir is None:
            return generate_latest(self.registry)
        merged = CollectorRegistry()
        MultiProcessCollector(merged, path=str(self._dir))  # type: ignore[no-untyped-call]
        merged.register(self.queue)  # read from the ledger: the same in every worker
        return generate_latest(merged)


class _QueueDepth(Collector):
    """`studiolo_verifier_queue_depth`, a gauge read from the ledger when scraped: candidates
    of the tasks' current attempts that no verifier has answered yet (every project)."""

    def __init__(self) -> None:
        self.depth: Callable[[], int] | None = None

    def collect(self) -> Iterator[GaugeMetricFamily]:
        try:
            value = self.depth() if self.depth is not None else 0
        except Exception:  # the ledger is unreachable: the scrape still answers, without it
            return
        yield GaugeMetricFamily(
            "studiolo_verifier_queue_depth",
            "Candidates of current attempts that no verifier has answered yet (read at scrape).",
            value=value,
        )
