"""`install`: the metrics, logs and request ids of one app, hooked in at one place."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import IO

from opentelemetry import trace
from starlette.applications import Starlette

from studiolo.core.enums import ReceiptResult
from studiolo.core.model import Event
from studiolo.core.remote import RemoteState
from studiolo.observe import multiprocess
from studiolo.observe.context import REQUEST_ID
from studiolo.observe.http import Observed
from studiolo.observe.logs import JsonLog
from studiolo.observe.metrics import Metrics
from studiolo.settings import Settings
from studiolo.store import Store
from studiolo.store.hooks import StoreHooks

__all__ = ["StoreWatch", "install", "metrics_for"]


class StoreWatch(StoreHooks):
    """The store's reports, as metrics and event log lines."""

    def __init__(self, metrics: Metrics, log: JsonLog | None) -> None:
        self.metrics = metrics
        self.log = log

    def committed(self, events: Sequence[Event]) -> None:
        if self.log is not None:
            self.log.events(events, REQUEST_ID.get())
        for e in events:
            if e.kind in _COUNTED:
                _count(self.metrics, e)

    def group_committed(self, size: int, waited: float) -> None:
        self.metrics.group_committed(size, waited)

    def retried(self) -> None:
        self.metrics.serialization_retry()


# the committed events the metrics count (by kind); every label value checked against its enum
_COUNTED = frozenset(
    {"a2a.delegated", "a2a.refused", "a2a.remote.delegated", "a2a.remote.state", "receipt.recorded"}
)
_REMOTE_STATES = frozenset(s.value for s in RemoteState)
_RESULTS = frozenset(r.value for r in ReceiptResult)


def _count(metrics: Metrics, e: Event) -> None:
    if e.kind == "receipt.recorded":
        result = e.data.get("result")
        after = e.data.get("checked_after")
        seconds = float(after) if isinstance(after, int | float) and not isinstance(after, bool) else None
        metrics.receipt(result if result in _RESULTS else "other", seconds)
    elif e.kind == "a2a.remote.state":
        state = e.data.get("dst")
        metrics.delegation("outbound", state if state in _REMOTE_STATES else "other")
    elif e.kind == "a2a.remote.delegated":
        metrics.delegation("outbound", RemoteState.DELEGATED.value)
    else:  # an inbound delegation, taken or refused
        metrics.delegation("inbound", e.kind.removeprefix("a2a."))


def metrics_for(settings: Settings) -> Metrics:
    """The app's metrics: summed over the workers' files when `serve --workers` enabled them."""
    shared = settings.metrics_dir and multiprocess.enabled()
    return Metrics(Path(settings.metrics_dir) if shared else None, enabled=settings.metrics)


def install(
    app: Starlette,
    store: Store,
    metrics: Metrics,
    settings: Settings,
    principal_key: str,
    tracer: trace.Tracer | None = None,
    log_stream: IO[str] | None = None,
) -> None:
    """The outermost middleware (call it after every other `add_middleware`) and the store's
    hooks. Log lines go to `log_stream` (stderr) if `settings.log_format` is "json"."""
    log = JsonLog(log_stream) if settings.log_format == "json" else None
    store.hooks = StoreWatch(metrics, log)
    metrics.watch_queue(lambda: store.read(lambda tx: tx.evidence.pending_candidates()))
    counted = metrics if settings.metrics else None
    app.add_middleware(
        Observed,
        metrics=counted,
        log=log,
        principal_key=principal_key,
        tracer=tracer,
        routes=app.router.routes,
    )
