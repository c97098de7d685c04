"""The HTTP/1.1 connection under uvicorn, hardened against slow and many sockets.

uvicorn's HTTP protocols wait forever for a request's headers and body, and its
`limit_concurrency` counts idle sockets and answers 503 to everyone once they fill it. Here
each connection has a deadline to deliver a request's headers (from when it connects, or from
the first byte of a later request) and one to deliver that request's body; between requests
it may stay idle for the keep-alive time (longer than an agent's heartbeat period, so a
heartbeat reuses its connection instead of paying for a new one). One peer address holds at
most so many connections at once, idle ones included: an extra one is closed as soon as it is
accepted. Requests are counted and limited by `studiolo.faces.http.limits.InFlightLimit`; an
idle connection is not a request.

A connection from a trusted reverse proxy (`Settings.trusted_proxies`) is not counted under
the proxy's address, which every client behind it shares: each of its requests is counted,
from its headers until its response, under the client address the proxy names
(`studiolo.faces.http.forwarded`), and one over the cap is answered `503 overloaded`.

The parser is uvicorn's `httptools` protocol (llhttp, in C): a heartbeat's parsing costs a
fraction of the pure-Python h11's (docs/benchmarks.md). The deadlines follow the parser's
callbacks: a message begins (headers due), its headers are complete (its body due), it is
complete (no deadline while the app answers), its response is complete (idle).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from studiolo.faces.http.forwarded import Networks, client_address, is_trusted, parse_networks
from studiolo.faces.http.problems import problem_response
from studiolo.settings import Settings

__all__ = ["ConnectionGuard", "guarded_protocol"]

_Their = Literal["headers", "body", "done", "idle"]  # where the peer is in its request


@dataclass
class ConnectionGuard:
    """Per-server connection policy and the open connections per peer address (one event loop)."""

    header_timeout: float
    body_timeout: float
    max_per_address: int
    keep_alive: float = 30.0
    trusted: Networks = ()  # reverse proxies that name the client (`forwarded`)
    open: Counter[str] = field(default_factory=Counter)

    @classmethod
    def from_settings(cls, settings: Settings) -> ConnectionGuard:
        return cls(
            settings.header_timeout_seconds,
            settings.body_timeout_seconds,
            settings.max_connections_per_address,
            settings.keep_alive_seconds,
            parse_networks(settings.trusted_proxies),
        )

    def admit(self, address: str) -> bool:
        if self.open[address] >= self.max_per_address:
            return False
        self.open[address] += 1
        return True

    def release(self, address: str) -> None:
        self.open[address] -= 1
        if self.open[address] <= 0:
            del self.open[address]


class _GuardedHttpTools(HttpToolsProtocol):
    guard: ConnectionGuard

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._address: str | None = None
        self._their: _Their = "headers"  # a new connection owes its first request's headers
        self._timer: asyncio.TimerHandle | None = None
        self._timed: object = None  # what the timer guards: "idle", "headers", or a request's cycle
        self._proxied = False  # from a trusted proxy: each request counts under its client

    # the connection ------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        address = self.client[0] if self.client else "unix"
        self._proxied = is_trusted(address, self.guard.trusted)
        if not self._proxied:
            if not self.guard.admit(address):
                transport.close()
                return
            self._address = address
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._release()
        super().connection_lost(exc)

    def _release(self) -> None:
        if self._address is not None:
            self.guard.release(self._address)
            self._address = None

    def _admit_forwarded(self) -> bool:
        """A trusted proxy's request: count it under the client it names (instead of the
        client of its connection's previous request); False if that client is at the cap."""
        client = client_address(self.client[0] if self.client else "unix", self.headers, self.guard.trusted)
        if client == self._address:
            return True
        self._release()
        if not self.guard.admit(client):
            return False
        self._address = client
        return True

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        if self._their == "done" and not self.pipeline:  # nothing of a next request yet
            self._their = "idle"
            if self._proxied:
                self._release()  # an idle connection of the proxy is no client's
        super().on_response_complete()
        self._watch()

    # the parser's callbacks ------------------------------------------------------------
    def on_message_begin(self) -> None:
        self._their = "headers"
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._their = "body"
        if not self._proxied or self._admit_forwarded():
            super().on_headers_complete()
            return
        app, self.app = self.app, _too_many_from_one_address  # this request only, as uvicorn's own 503
        try:
            super().on_headers_complete()
        finally:
            self.app = app

    def on_message_complete(self) -> None:
        self._their = "done"
        super().on_message_complete()

    # deadlines -------------------------------------------------------------------------
    def _watch(self) -> None:
        """Arm the deadline the peer's state calls for: idle, headers, this body, or none."""
        if self.transport.is_closing():
            self._disarm()
        elif self._their == "idle":
            self._arm("idle", self.guard.keep_alive)
        elif self._their == "headers":
            self._arm("headers", self.guard.header_timeout)
        elif self._their == "body":
            self._arm(self.cycle, self.guard.body_timeout)
        else:
            self._disarm()

    def _arm(self, what: object, seconds: float) -> None:
        if self._timer is not None and self._timed is what:
            return  # a trickle of bytes does not extend a deadline
        self._disarm()
        self._timed = what
        self._timer = self.loop.call_later(seconds, self._expire)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timed = None, None

    def _expire(self) -> None:
        self._timer, self._timed = None, None
        if not self.transport.is_closing():
            self.transport.close()


async def _too_many_from_one_address(scope: Scope, receive: Receive, send: Send) -> None:
    detail = "too many requests in progress from one client address"
    headers = {"Retry-After": "1", "Connection": "close"}
    await problem_response(503, "overloaded", detail, headers=headers)(scope, receive, send)


def guarded_protocol(guard: ConnectionGuard) -> type[HttpToolsProtocol]:
    """An httptools protocol class for `uvicorn.Config(http=...)`, bound to one server's guard."""

    class StudioloHttpProtocol(_GuardedHttpTools):
        pass

    StudioloHttpProtocol.guard = guard
    return StudioloHttpProtocol
