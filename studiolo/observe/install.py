"""`install`: the metrics, logs and request ids of one app, hooked in at one place."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from opentelemetry import trace
from starlette.applications import Starlette

from studiolo.core.model import Event
from studiolo.observe import multiprocess
from studiolo.observe.http import Observed
from studiolo.observe.logs import log_events
from studiolo.observe.metrics import Metrics
from studiolo.settings import Settings
from studiolo.store import Store
from studiolo.store.hooks import StoreHooks

__all__ = ["StoreWatch", "install", "metrics_for"]


class StoreWatch(StoreHooks):
    """The store's reports, as metrics and event log lines."""

    def __init__(self, metrics: Metrics, *, log: bool) -> None:
        self.metrics = metrics
        self.log = log

    def committed(self, events: Sequence[Event]) -> None:
        if self.log:
            log_events(events)

    def group_committed(self, size: int, waited: float) -> None:
        self.metrics.group_committed(size, waited)

    def retried(self) -> None:
        self.metrics.serialization_retry()


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
) -> None:
    """The outermost middleware (call it after every other `add_middleware`) and the store's hooks."""
    log = settings.log_format == "json"
    store.hooks = StoreWatch(metrics, log=log)
    counted = metrics if settings.metrics else None
    app.add_middleware(Observed, metrics=counted, log=log, principal_key=principal_key, tracer=tracer)
