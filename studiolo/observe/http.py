"""`Observed`: the outermost ASGI middleware of the HTTP face. For each request it makes a
request id (returned as `X-Request-Id`, set in `REQUEST_ID` for the door's audit events
and the logs), then counts and times the request by route template and status and logs it.

The route template is what the router matched (`scope["route"]`), what a fast lane that
bypasses the router names (`ROUTE_KEY`), the mount a request went to, else `unmatched`:
never the path itself, so no caller can make a new time series.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from typing import Any

from opentelemetry import trace
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from studiolo.observe.context import REQUEST_ID, new_request_id
from studiolo.observe.logs import JsonLog
from studiolo.observe.metrics import METHODS, Metrics

__all__ = ["HEADER", "ROUTE_KEY", "Observed", "Templates"]

HEADER = b"x-request-id"
ROUTE_KEY = "studiolo.route"  # where a face that bypasses the router names the route it served
_COMPLETE = "/v1/tasks/{task_id}/complete"


class Observed:
    def __init__(
        self,
        app: ASGIApp,
        metrics: Metrics | None,
        *,
        log: JsonLog | None = None,
        principal_key: str = "",
        tracer: trace.Tracer | None = None,
        routes: Sequence[BaseRoute] = (),
    ) -> None:
        self.app = app
        self.template = Templates(routes)
        self.metrics = metrics
        self.log = log
        self.principal_key = principal_key
        self.tracer = tracer  # None: no spans

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = new_request_id()
        header = (HEADER, request_id.encode())
        status = 500  # what the client sees if the app fails before it answers

        async def answer(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                message = {**message, "headers": [*message.get("headers", ()), header]}
            await send(message)

        token = REQUEST_ID.set(request_id)
        start = time.perf_counter()
        try:
            if self.tracer is None:
                await self.app(scope, receive, answer)
            else:
                await self._traced(self.tracer, scope, receive, answer, request_id)
        finally:
            REQUEST_ID.reset(token)
            with contextlib.suppress(Exception):  # counting or logging never fails a request
                self._done(scope, request_id, status, time.perf_counter() - start)

    async def _traced(
        self, tracer: trace.Tracer, scope: Scope, receive: Receive, send: Send, request_id: str
    ) -> None:
        """The request inside a server span, named by its route template once it is known."""
        method: str = scope["method"]
        status = 500

        async def answer(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        with tracer.start_as_current_span(method, kind=trace.SpanKind.SERVER) as span:
            span.set_attribute("http.request.method", method)
            span.set_attribute("studiolo.request_id", request_id)
            try:
                await self.app(scope, receive, answer)
            finally:
                route = self.template(scope)
                span.update_name(f"{method} {route}")
                span.set_attribute("http.route", route)
                span.set_attribute("http.response.status_code", status)
                if status >= 500:
                    span.set_status(trace.StatusCode.ERROR)

    def _done(self, scope: Scope, request_id: str, status: int, seconds: float) -> None:
        route = self.template(scope)
        method: str = scope["method"]
        if self.metrics is not None:
            self.metrics.request(method, route, status, seconds)
            if route == _COMPLETE and method == "POST":
                outcome = "replayed" if status == 200 else "accepted" if status == 201 else "rejected"
                self.metrics.completion_request(outcome, seconds)
        if self.log is not None:
            principal = scope.get("state", {}).get(self.principal_key) if self.principal_key else None
            shown = method if method in METHODS else "OTHER"
            self.log.request(request_id, shown, route, status, seconds, getattr(principal, "id", None))


class Templates:
    """A request's route template, once the app answered it: what the one path named
    (`ROUTE_KEY`), the route a mounted app's router matched (`scope["route"]`, its
    `path_format`), the path of the app's own route whose endpoint ran (found by endpoint
    among `routes`, never by scanning; as written, `{rest:path}`), the mount it went to, else
    `unmatched`."""

    def __init__(self, routes: Sequence[BaseRoute] = ()) -> None:
        self._routes = routes
        self._seen = -1  # how many routes `_paths` was built from (mounts are added later)
        self._paths: dict[Any, str] = {}
        self._own: set[int] = set()  # the app's own routes (its router sets `scope["route"]` too)

    def __call__(self, scope: Scope) -> str:
        named = scope.get(ROUTE_KEY)
        if isinstance(named, str):
            return named
        self._refresh()
        route = scope.get("route")
        if route is not None and id(route) not in self._own:
            path = getattr(route, "path_format", None)
            if isinstance(path, str):
                return path
        endpoint = scope.get("endpoint")
        if endpoint is not None:
            found = self._path_of(endpoint)
            if found is not None:
                return found
        mounted = scope.get("root_path")
        if isinstance(mounted, str) and mounted:
            return mounted + "/…"
        return "unmatched"

    def _refresh(self) -> None:
        if len(self._routes) != self._seen:
            self._paths = {r.endpoint: r.path for r in self._routes if isinstance(r, Route)}
            self._own = {id(r) for r in self._routes}
            self._seen = len(self._routes)

    def _path_of(self, endpoint: Any) -> str | None:
        try:
            return self._paths.get(endpoint)
        except TypeError:  # an unhashable endpoint
            return None
