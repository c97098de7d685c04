"""Counters for `GET /metrics` (Prometheus text format). One instance per app, no globals."""

from __future__ import annotations

import threading
from collections import Counter

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["Metrics", "MetricsMiddleware"]


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: Counter[tuple[str, int]] = Counter()
        self._accepted = 0
        self._replayed = 0
        self._rejected: Counter[str] = Counter()

    def request(self, method: str, status: int) -> None:
        with self._lock:
            self._requests[(method, status)] += 1

    def completion_accepted(self, *, replay: bool) -> None:
        with self._lock:
            if replay:
                self._replayed += 1
            else:
                self._accepted += 1

    def completion_rejected(self, reason: str) -> None:
        with self._lock:
            self._rejected[reason] += 1

    def render(self) -> str:
        with self._lock:
            lines = [
                "# HELP studiolo_http_requests_total HTTP requests by method and status.",
                "# TYPE studiolo_http_requests_total counter",
            ]
            for (method, status), n in sorted(self._requests.items()):
                lines.append(f'studiolo_http_requests_total{{method="{method}",status="{status}"}} {n}')
            lines += [
                "# HELP studiolo_completions_total Completion requests by outcome and reason.",
                "# TYPE studiolo_completions_total counter",
                f'studiolo_completions_total{{outcome="accepted",reason=""}} {self._accepted}',
                f'studiolo_completions_total{{outcome="replayed",reason=""}} {self._replayed}',
            ]
            for reason, n in sorted(self._rejected.items()):
                lines.append(f'studiolo_completions_total{{outcome="rejected",reason="{reason}"}} {n}')
        return "\n".join(lines) + "\n"


class MetricsMiddleware:
    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def counting(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.metrics.request(scope["method"], int(message["status"]))
            await send(message)

        await self.app(scope, receive, counting)
