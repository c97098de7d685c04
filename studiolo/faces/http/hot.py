"""The fast lanes of the hottest routes: a fleet's heartbeats, completions and task views,
answered without FastAPI's routing and dependency machinery, with the same request and
response models and the same answers.

A request takes a lane only when it is well formed: the lane's method and path, a bearer
token, a small body (`_SMALL`) that is valid JSON for the route's request model in
`application/json` (a heartbeat's may be empty; a task view has none). Anything else (no
token, a body that does not parse or validate, another content type, a large body) goes on
to the FastAPI route with the body it carried, so odd requests get exactly the usual answers.
The lanes sit outside authenticate-first and the body limit (a lane reads at most a small
body, and only with a token) and inside the metrics and the requests-in-flight limit; a
lane authenticates the token itself, in the same worker call that does the work, and an
error of the door is rendered by the app's own error functions.

Completions (`POST /v1/tasks/{task_id}/complete`) and task views (`GET /v1/tasks/{task_id}`)
go to the threadpool in one call each: authenticate, do the work, render. Under FastAPI a
completion on PostgreSQL took two threadpool calls (the token, then the route), and a
replica spent about as much CPU on the HTTP face as on the completion itself
(docs/benchmarks.md, "Fast lanes for completions and task views").

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
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import queue
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from studiolo._exceptions import CompletionRejected, StudioloError
from studiolo.api import responses as s
from studiolo.api.requests import CompleteIn, LeaseIn
from studiolo.core.model import Principal
from studiolo.faces import render
from studiolo.faces.http.problems import error_response, unexpected_response
from studiolo.observe.http import ROUTE_KEY
from studiolo.observe.metrics import Metrics
from studiolo.service import Coordinator, make_request

__all__ = ["HotRoutes", "LeaseLane"]

_M = TypeVar("_M", bound=BaseModel)

_HEARTBEAT = re.compile(r"/v1/attempts/([^/]+)/heartbeat")
_COMPLETE = re.compile(r"/v1/tasks/([^/]+)/complete")
_TASK = re.compile(r"/v1/tasks/([^/]+)")
# method, path, the body's model (None: the request carries no body), and whether the route
# takes an empty body as the model's defaults (its body parameter is optional)
_LANES: tuple[tuple[str, re.Pattern[str], type[BaseModel] | None, bool, str], ...] = (
    ("POST", _HEARTBEAT, LeaseIn, True, "/v1/attempts/{attempt_id}/heartbeat"),
    ("POST", _COMPLETE, CompleteIn, False, "/v1/tasks/{task_id}/complete"),
    ("GET", _TASK, None, False, "/v1/tasks/{task_id}"),
)  # ... and the route's template (what the metrics and logs name it)
_SMALL = 4096  # a lane's body is at most a few hundred bytes; anything larger goes to the route


class HotRoutes:
    def __init__(self, app: ASGIApp, door: Coordinator, metrics: Metrics, window: float = 0.0) -> None:
        self.app, self.door, self.metrics = app, door, metrics
        self.lane = LeaseLane(door, window=window, observed=metrics.heartbeats)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for method, pattern, model, optional, template in _LANES:
                found = pattern.fullmatch(scope["path"]) if scope["method"] == method else None
                if found is not None:
                    scope[ROUTE_KEY] = template
                    await self._lane(model, optional, found.group(1), scope, receive, send)
                    return
        await self.app(scope, receive, send)

    async def _lane(
        self,
        model: type[BaseModel] | None,
        optional: bool,
        ident: str,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        headers = dict(scope["headers"])
        token = _bearer(headers)
        declared = headers.get(b"content-length", b"0")
        small = declared.isdigit() and int(declared) <= (0 if model is None else _SMALL)
        if token is None or not small or b"transfer-encoding" in headers:
            await self.app(scope, receive, send)
            return
        parsed: BaseModel | None = None
        if model is not None:
            messages, body = await _small_body(receive)
            parsed = _parse(model, optional, headers, body) if body is not None else None
            if parsed is None:
                await self.app(scope, _replay(messages, receive), send)
                return
        principal = self.door.authenticate_cached(token)  # None: the worker reads the ledger
        if isinstance(parsed, LeaseIn):
            response = await self.lane.beat(principal, token, ident, parsed.lease_seconds)
        elif isinstance(parsed, CompleteIn):
            work = functools.partial(self._complete, principal, token, ident, parsed)
            response = await run_in_threadpool(work)
        else:
            response = await run_in_threadpool(self._task, principal, token, ident)
        await response(scope, receive, send)

    def _complete(self, principal: Principal | None, token: str, task_id: str, body: CompleteIn) -> Response:
        """What `routes/completion.py` answers, in one worker call (authentication included)."""
        start = time.perf_counter()
        try:
            caller = principal or self.door.authenticate(token)
            outcome = self.door.complete(caller, make_request(task_id=task_id, **body.model_dump()))
        except Exception as exc:
            if isinstance(exc, CompletionRejected):
                self.metrics.completion("rejected", exc.reason, time.perf_counter() - start)
            return _failed(exc)
        self.metrics.completion("replayed" if outcome.replay else "accepted", "", time.perf_counter() - start)
        out = s.CompletionOut.model_validate(outcome.completion)
        return _json(out, 200 if outcome.replay else 201, "true" if outcome.replay else "false")

    def _task(self, principal: Principal | None, token: str, task_id: str) -> Response:
        """What `GET /v1/tasks/{task_id}` (`routes/work.py`) answers, in one worker call."""
        try:
            caller = principal or self.door.authenticate(token)
            return _json(render.task_view(self.door.task_view(caller, task_id)), 200)
        except Exception as exc:
            return _failed(exc)


def _failed(exc: BaseException) -> Response:
    """The app's answer to an exception: a door's error as its handler renders it, anything
    else as its last-resort handler does (logged, 500)."""
    return error_response(exc) if isinstance(exc, StudioloError) else unexpected_response(exc)


def _json(model: BaseModel, status: int, replay: str | None = None) -> Response:
    """The bytes `RenderedRoute` sends for a route's response model (FastAPI dumps by alias)."""
    headers = None if replay is None else {"Idempotent-Replay": replay}
    content = model.model_dump_json(by_alias=True).encode()
    return Response(content, status_code=status, headers=headers, media_type="application/json")


@dataclass(eq=False)
class _Beat:
    principal: Principal | None  # None: authenticate `token` first
    token: str
    attempt_id: str
    lease: float | None
    loop: asyncio.AbstractEventLoop
    answer: asyncio.Future[Response] = field(init=False)
    queued: float = field(init=False, default_factory=time.perf_counter)

    def __post_init__(self) -> None:
        self.answer = self.loop.create_future()


class LeaseLane:
    """One thread that writes queued heartbeats together and answers them.

    The thread runs while there is work and ends after `idle` seconds without any (a new
    heartbeat starts it again), so an app that is thrown away leaves no thread behind.
    At most `max_batch` heartbeats share a transaction, and a batch is taken at most once
    per `window` seconds (see the module's docstring)."""

    def __init__(
        self,
        door: Coordinator,
        idle: float = 5.0,
        max_batch: int = 256,
        window: float = 0.0,
        observed: Callable[[int, float], None] | None = None,
    ) -> None:
        self.door, self._idle, self._max, self._window = door, idle, max_batch, window
        self._observed = observed  # told each batch's size and how long its first beat waited
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
            if self._observed is not None:
                with contextlib.suppress(Exception):  # the metrics never stop the lane
                    self._observed(len(batch), time.perf_counter() - first.queued)
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
            except Exception as exc:
                answers[i] = _failed(exc)
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
    if isinstance(outcome, BaseException):
        return _failed(outcome)
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


def _parse(model: type[_M], optional: bool, headers: dict[bytes, bytes], body: bytes) -> _M | None:
    """The body as the route's request model, or None: the request goes to the route. An empty
    body is the model's defaults where the route's body is optional, as the route reads it."""
    if not body:
        return model() if optional else None
    if headers.get(b"content-type", b"").split(b";")[0].strip().lower() != b"application/json":
        return None
    try:
        return model.model_validate(json.loads(body))
    except (ValueError, ValidationError, TypeError, StudioloError):
        return None


def _bearer(headers: dict[bytes, bytes]) -> str | None:
    scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """`receive` with the messages read so far given back, for the route the request goes on to."""
    pending = list(reversed(messages))

    async def again() -> Message:
        return pending.pop() if pending else await receive()

    return again
