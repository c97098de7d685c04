"""The fast lane of the hottest route: a fleet's heartbeats, answered without FastAPI's
routing and dependency machinery, the same request and response models, the same answers.

Heartbeats go to one lane thread per app (`LeaseLane`), which takes every heartbeat queued
meanwhile and writes them together (`door.heartbeats`: one transaction on SQLite), then hands
the answers back to the event loop in one call: a heartbeat costs no threadpool hop of its
own, and a thousand a second cost a few hundred transactions, not a thousand.

The lane takes a batch at most once per `window` (`STUDIOLO_HEARTBEAT_WINDOW`, 20 ms): a
heartbeat that finds the lane idle for longer goes at once; under load, the heartbeats that
arrive within a window of the last batch wait for the window's end and go together. A
fleet's heartbeats arrive one by one, each on a machine whose caches have gone cold, and a
transaction written cold costs three to four times one written warm (bench/heartbeat_cpu.py,
docs/benchmarks.md): ten heartbeats together cost little more than one alone. A heartbeat
waits at most one window plus one batch's write.

Only a well-formed request takes it: `POST /v1/attempts/{attempt_id}/heartbeat` with a bearer
token and a body that is empty or a valid `LeaseIn` in `application/json`. Anything else (no
token, a body that does not parse or validate, another content type) goes on to the FastAPI
route with the body it carried, so odd requests get exactly the usual answers. An error of
the door is rendered by the app's own error functions. It sits inside the limits, the
metrics and authenticate-first, like the routes.
"""

from __future__ import annotations

import asyncio
import json
import queue
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from studiolo._exceptions import StudioloError
from studiolo.api import responses as s
from studiolo.api.requests import LeaseIn
from studiolo.core.model import Principal
from studiolo.faces.http.problems import error_response, unexpected_response
from studiolo.service import Coordinator

__all__ = ["HotRoutes", "LeaseLane"]

_HEARTBEAT = re.compile(r"/v1/attempts/([^/]+)/heartbeat")
_SMALL = 4096  # a heartbeat's body is a few bytes; anything larger goes to the route


class HotRoutes:
    def __init__(self, app: ASGIApp, door: Coordinator, principal_key: str, window: float = 0.0) -> None:
        self.app, self._principal_key = app, principal_key
        self.lane = LeaseLane(door, window=window)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        match = _HEARTBEAT.fullmatch(scope["path"]) if scope["type"] == "http" else None
        if match is None or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        messages, body = await _small_body(receive)
        fast, lease = _lease(headers, body) if body is not None else (False, None)
        token = _bearer(headers)
        if not fast or token is None:
            await self.app(scope, _replay(messages, receive), send)
            return
        known = scope.get("state", {}).get(self._principal_key)
        principal = known if isinstance(known, Principal) else None
        response = await self.lane.beat(principal, token, match.group(1), lease)
        await response(scope, receive, send)


@dataclass(eq=False)
class _Beat:
    principal: Principal | None  # None: authenticate `token` first
    token: str
    attempt_id: str
    lease: float | None
    loop: asyncio.AbstractEventLoop
    answer: asyncio.Future[Response] = field(init=False)

    def __post_init__(self) -> None:
        self.answer = self.loop.create_future()


class LeaseLane:
    """One thread that writes queued heartbeats together and answers them.

    The thread runs while there is work and ends after `idle` seconds without any (a new
    heartbeat starts it again), so an app that is thrown away leaves no thread behind.
    At most `max_batch` heartbeats share a transaction, and a batch is taken at most once
    per `window` seconds (see the module's docstring)."""

    def __init__(
        self, door: Coordinator, idle: float = 5.0, max_batch: int = 256, window: float = 0.0
    ) -> None:
        self.door, self._idle, self._max, self._window = door, idle, max_batch, window
        self._next = 0.0  # monotonic time before which no new batch is taken
        self._queue: queue.SimpleQueue[_Beat] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._running = False
        self.batches = 0  # transactions written (for tests and metrics)

    @property
    def running(self) -> bool:
        """Whether the lane's thread is up."""
        return self._running

    async def beat(
        self, principal: Principal | None, token: str, attempt_id: str, lease: float | None
    ) -> Response:
        item = _Beat(principal, token, attempt_id, lease, asyncio.get_running_loop())
        self._queue.put(item)
        with self._lock:
            if not self._running:
                self._running = True
                threading.Thread(target=self._run, name="studiolo-leases", daemon=True).start()
        return await item.answer

    def _run(self) -> None:
        while True:
            try:
                first = self._queue.get(timeout=self._idle)
            except queue.Empty:
                with self._lock:
                    if self._queue.empty():  # a beat put after this check starts a new thread
                        self._running = False
                        return
                continue
            batch = [first]
            while len(batch) < self._max:
                wait = self._next - time.monotonic()
                try:
                    batch.append(self._queue.get(timeout=wait) if wait > 0 else self._queue.get_nowait())
                except queue.Empty:
                    break
            self._next = time.monotonic() + self._window
            answers = self._answer(batch)
            for loop in {item.loop for item in batch}:
                try:
                    loop.call_soon_threadsafe(_deliver, batch, answers, loop)
                except RuntimeError:  # that loop is closed: nobody waits for these answers
                    continue

    def _answer(self, batch: Sequence[_Beat]) -> list[Response]:
        """Each heartbeat's response: the caller authenticated, then all written together."""
        answers: list[Response | None] = [None] * len(batch)
        beats, index = [], []
        for i, item in enumerate(batch):
            try:
                caller = item.principal or self.door.authenticate(item.token)
            except StudioloError as exc:
                answers[i] = error_response(exc)
                continue
            except Exception as exc:  # what the app's last-resort handler does
                answers[i] = unexpected_response(exc)
                continue
            beats.append((caller, item.attempt_id, item.lease))
            index.append(i)
        try:
            outcomes: Sequence[Any] = self.door.heartbeats(beats)
        except Exception as exc:  # the transaction failed: every heartbeat in it did
            outcomes = [exc] * len(beats)
        self.batches += 1
        for i, outcome in zip(index, outcomes, strict=True):
            answers[i] = _render(outcome)
        return [a for a in answers if a is not None]


def _render(outcome: Any) -> Response:
    if isinstance(outcome, StudioloError):
        return error_response(outcome)
    if isinstance(outcome, BaseException):
        return unexpected_response(outcome)
    try:
        return JSONResponse(s.AttemptOut.model_validate(outcome).model_dump(mode="json"))
    except Exception as exc:
        return unexpected_response(exc)


def _deliver(batch: Sequence[_Beat], answers: Sequence[Response], loop: asyncio.AbstractEventLoop) -> None:
    for item, answer in zip(batch, answers, strict=True):
        if item.loop is loop and not item.answer.done():  # done: the request was cancelled
            item.answer.set_result(answer)


async def _small_body(receive: Receive) -> tuple[list[Message], bytes | None]:
    """The messages read, and the whole body if it is small (else None: the route reads on)."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, None
        size += len(message.get("body", b""))
        if size > _SMALL:
            return messages, None
        if not message.get("more_body", False):
            return messages, b"".join(m.get("body", b"") for m in messages)


def _lease(headers: dict[bytes, bytes], body: bytes) -> tuple[bool, float | None]:
    """Whether the body may take the fast lane, and the lease seconds it asks (None: the default)."""
    if not body:
        return True, None
    if headers.get(b"content-type", b"").split(b";")[0].strip().lower() != b"application/json":
        return False, None
    try:
        return True, LeaseIn.model_validate(json.loads(body)).lease_seconds
    except (ValueError, ValidationError, TypeError, StudioloError):
        return False, None


def _bearer(headers: dict[bytes, bytes]) -> str | None:
    scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """`receive` with the messages read so far given back, for the route the request goes on to."""
    pending = list(reversed(messages))

    async def again() -> Message:
        return pending.pop() if pending else await receive()

    return again
