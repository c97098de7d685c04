"""Request limits as pure ASGI middleware: body size per route (413), requests in flight (503),
and the open event streams of each principal (429 at the route).

Connection-level limits (header and body deadlines, connections per address) live in
`studiolo.faces.http.protocol`, below the ASGI app.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections import Counter, deque
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from studiolo.api.operations import OPERATIONS
from studiolo.core.reasons import ErrorReason
from studiolo.faces.http.problems import problem_response
from studiolo.settings import Settings

__all__ = ["BodyCaps", "BodyLimit", "InFlightLimit", "StreamSlots"]


@dataclass(frozen=True)
class BodyCaps:
    """The largest body each route accepts: small JSON by default, more where the route needs it."""

    ceiling: int  # `max_request_bytes`: bounds every rule below
    json: int  # any other route (the API, /a2a, /ui): small JSON or a form
    routes: tuple[tuple[str, re.Pattern[str], int], ...] = ()
    # paths whose endpoint reads its body bounded itself: git's smart HTTP (studiolo/git/http.py
    # answers a push over its cap in git's receive-pack result, which a 413 here would hide)
    own: re.Pattern[str] = re.compile(r"/git/[^/]+/git-(upload|receive)-pack")

    @classmethod
    def from_settings(cls, settings: Settings) -> BodyCaps:
        routes = tuple(
            (op.method, op.cap_regex(), int(getattr(settings, op.cap)))
            for op in OPERATIONS.values()
            if op.cap != "max_json_bytes"
        )  # the table's caps; and MCP's `submit_candidate` sends its files inline
        mcp = ("POST", re.compile(r"/mcp/?"), settings.max_candidate_bytes)
        return cls(settings.max_request_bytes, settings.max_json_bytes, (*routes, mcp))

    def for_request(self, method: str, path: str) -> int:
        for verb, pattern, cap in self.routes:
            if method == verb and pattern.fullmatch(path):
                return min(cap, self.ceiling)
        return min(self.json, self.ceiling)


class _TooLarge(Exception):
    pass


class BodyLimit:
    """Refuse bodies above the route's cap, whether declared (Content-Length) or streamed."""

    def __init__(self, app: ASGIApp, caps: BodyCaps) -> None:
        self.app = app
        self.caps = caps

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.caps.own.fullmatch(scope["path"]):
            await self.app(scope, receive, send)
            return
        max_bytes = self.caps.for_request(scope["method"], scope["path"])
        declared = dict(scope["headers"]).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > max_bytes:
            await _refuse(max_bytes, scope, receive, send)
            return
        seen = 0
        exceeded = False

        async def limited() -> Message:
            nonlocal seen, exceeded
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > max_bytes:
                    exceeded = True
                    raise _TooLarge
            return message

        async def guarded(message: Message) -> None:
            if not exceeded:
                await send(message)

        with contextlib.suppress(_TooLarge):
            await self.app(scope, limited, guarded)
        if exceeded:
            await _refuse(max_bytes, scope, receive, send)


async def _refuse(max_bytes: int, scope: Scope, receive: Receive, send: Send) -> None:
    detail = f"the request body exceeds {max_bytes} bytes for this route (or declares a bad Content-Length)"
    if dict(scope["headers"]).get(b"content-length", b"0").isdigit():
        await problem_response(413, reason=ErrorReason.PAYLOAD_TOO_LARGE, detail=detail)(scope, receive, send)
    else:
        await problem_response(400, reason=ErrorReason.INVALID_REQUEST, detail=detail)(scope, receive, send)


class InFlightLimit:
    """At most `max_requests` requests between their headers and the start of their response.

    Requests are counted, not sockets: an idle or half-sent connection holds no slot (the
    protocol's deadlines close it), and a long response (an event stream) gives its slot
    back once it starts. Over the limit a request waits, first come first served, up to
    `wait_seconds` for a slot with at most `max_waiting` others (a burst, such as a fleet
    reconnecting, is absorbed rather than refused); past either bound: 503 `overloaded` with
    `Retry-After`. A freed slot passes straight to the oldest waiter, so a newcomer never
    overtakes the queue.
    """

    def __init__(
        self, app: ASGIApp, max_requests: int, max_waiting: int = 0, wait_seconds: float = 0.0
    ) -> None:
        self.app = app
        self.max_requests = max_requests
        self.max_waiting = max_waiting
        self.wait_seconds = wait_seconds
        self.active = 0  # touched only on the event loop
        self._waiting: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not await self._admit():
            detail = f"more than {self.max_requests} requests are in progress; retry shortly"
            refusal = problem_response(
                503, reason=ErrorReason.OVERLOADED, detail=detail, headers={"Retry-After": "1"}
            )
            await refusal(scope, receive, send)
            return
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                self._release()

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                release()
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            release()

    async def _admit(self) -> bool:
        """Take a slot (True), waiting for one if the queue has room, or give up (False)."""
        if self.active < self.max_requests and not self._waiting:
            self.active += 1
            return True
        if self.wait_seconds <= 0 or self.waiting >= self.max_waiting:
            return False
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(turn)
        try:
            async with asyncio.timeout(self.wait_seconds):
                await turn
            return True  # `_release` handed this request its slot
        except TimeoutError:
            return turn.done() and not turn.cancelled()  # handed over just as the wait ran out
        except BaseException:  # the client went away while waiting
            if turn.done() and not turn.cancelled():
                self._release()
            raise
        finally:
            if turn.cancelled() or not turn.done():  # not handed a slot: leave the queue
                turn.cancel()
                with contextlib.suppress(ValueError):  # `_release` may have dropped it already
                    self._waiting.remove(turn)

    def _release(self) -> None:
        while self._waiting:
            turn = self._waiting.popleft()
            if not turn.done():  # a waiter cancelled in between is skipped
                turn.set_result(None)  # the slot passes on; `active` is unchanged
                return
        self.active -= 1


class StreamSlots:
    """How many event streams each principal holds open; one per app, used on the event loop."""

    def __init__(self, per_principal: int) -> None:
        self.per_principal = per_principal
        self._open: Counter[str] = Counter()

    def acquire(self, principal_id: str) -> bool:
        if self._open[principal_id] >= self.per_principal:
            return False
        self._open[principal_id] += 1
        return True

    def release(self, principal_id: str) -> None:
        self._open[principal_id] -= 1
        if self._open[principal_id] <= 0:
            del self._open[principal_id]

    def open(self, principal_id: str) -> int:
        return self._open[principal_id]
