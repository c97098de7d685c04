"""`LeaseLane`: heartbeats written together.

One lane thread per app takes every heartbeat queued meanwhile and writes them together
(`door.heartbeats`: one transaction on SQLite), then hands the answers back to the event
loop in one call: a heartbeat costs no threadpool hop of its own, and a thousand a second
cost a few hundred transactions, not a thousand.

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
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from starlette.responses import JSONResponse, Response

from studiolo._exceptions import StudioloError
from studiolo.api import responses as s
from studiolo.core.model import Principal
from studiolo.faces.http.problems import error_response, unexpected_response
from studiolo.service import Coordinator

__all__ = ["LeaseLane"]


def _failed(exc: BaseException) -> Response:
    """The app's answer to an exception: a door's error as its handler renders it, anything
    else as its last-resort handler does (logged, 500)."""
    return error_response(exc) if isinstance(exc, StudioloError) else unexpected_response(exc)


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
