"""OpenTelemetry traces (off by default; `STUDIOLO_TRACING=1`): a span per HTTP request and,
inside it, a span per door operation a face calls.

Only the OpenTelemetry *API* is imported (MCP already depends on it); spans go
wherever the tracer provider sends them: the global one (set up by the SDK, for example
`opentelemetry-instrument studiolo serve` with the `OTEL_*` variables; the `otel` extra
installs the SDK), or one passed to `create_app` (the tests' in-memory exporter). With
tracing off nothing here runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

from opentelemetry import trace

from studiolo.service import Coordinator

__all__ = ["TracedDoor", "traced", "tracer_of"]

_NAME = "studiolo"


def tracer_of(provider: trace.TracerProvider | None) -> trace.Tracer:
    """The service's tracer from `provider` (None: the global provider)."""
    return trace.get_tracer(_NAME, tracer_provider=provider)


class TracedDoor:
    """The door, each public operation called through it wrapped in a span `door.<name>`.
    Attributes that are not operations (the store, the settings) pass through untouched."""

    def __init__(self, door: Coordinator, tracer: trace.Tracer) -> None:
        self._door = door
        self._tracer = tracer
        self._wrapped: dict[str, Callable[..., Any]] = {}

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._door, name)
        if name.startswith("_") or not callable(value) or not hasattr(type(self._door), name):
            return value
        wrapped = self._wrapped.get(name)
        if wrapped is None:
            wrapped = self._wrapped[name] = _spanned(self._tracer, f"door.{name}", value)
        return wrapped


def _spanned(tracer: trace.Tracer, span: str, method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        with tracer.start_as_current_span(span, kind=trace.SpanKind.INTERNAL) as current:
            try:
                return method(*args, **kwargs)
            except Exception as exc:
                reason = getattr(exc, "reason", None)
                if isinstance(reason, str):
                    current.set_attribute("studiolo.reason", reason)
                raise

    return call


def traced(door: Coordinator, tracer: trace.Tracer | None) -> Coordinator:
    """The door the faces get: itself, or (tracing on) the door behind spans."""
    return door if tracer is None else cast(Coordinator, TracedDoor(door, tracer))
