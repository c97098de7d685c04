"""One step of the fleet: n agents driven by one scheduler for `--warmup` + `--window` seconds.

No task sleeps per agent: `Scheduler` keeps every agent's next heartbeat and next cycle in one
heap behind one event-loop timer. A heartbeat is sent from the timer's callback on the agent's
connection with bytes built once per attempt, and its answer is handled in the connection's
`data_received` (no task, no future). A completion cycle (six requests that depend on each
other) runs as one coroutine. An agent does one thing at a time, as before: an event that falls
due while its agent waits for an answer is started right after that answer, and the generator's
lag is measured when an event starts (so it includes that wait, as it always has).
Timestamps are `time.monotonic()`; a request's latency is from just before its bytes are handed
to the connection (or the connection is opened) to the arrival of the whole response.
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import itertools
import json
import os
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bench._fleet_client import Conn, HttpError, follow, request
from bench._fleet_setup import LEASE, Agent
from studiolo.keys import sign

HEARTBEAT_EVERY = 10.0
AGENTS_PER_ADDRESS = 50
_FAILURES = (HttpError, OSError, ValueError)
_BEAT_BODY = json.dumps({"lease_seconds": LEASE}).encode()


@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=lambda: {})
    errors: Counter[str] = field(default_factory=Counter)
    causes: Counter[str] = field(default_factory=Counter)  # exception type (and HTTP status)
    samples: list[str] = field(default_factory=list)
    # failures before the window (not failures of the step; the agent stops, so the heartbeats
    # it owed in the window are missing): kind and cause
    warmup_failures: Counter[str] = field(default_factory=Counter)
    owed_heartbeats: int = 0
    events_seen: int = 0
    sent: int = 0  # every request, warm-up included: the generator's CPU is spent on all of them
    open_fds: int = 0  # the most files the generator held open (sampled every 2 s)
    cpu_at_window: os.times_result | None = None
    sent_at_window: int = 0
    window_cpu_s: float = 0.0  # the generator's CPU over the window alone (its connections open)
    window_sent: int = 0

    def record(self, kind: str, ms: float) -> None:
        self.latencies.setdefault(kind, []).append(ms)

    def fail(self, kind: str, exc: BaseException) -> None:
        self.errors[kind] += 1
        cause = _cause(exc)
        self.causes[cause] += 1
        if self.causes[cause] == 1 and len(self.samples) < 5:  # one of each cause
            self.samples.append(f"{kind}: {exc!r}")

    def fail_before_window(self, kind: str, exc: BaseException) -> None:
        self.warmup_failures[f"{kind}: {_cause(exc)}"] += 1


def _cause(exc: BaseException) -> str:
    return type(exc).__name__ + (f" {exc.status}" if isinstance(exc, HttpError) else "")


class Scheduler:
    """One timer for every agent: a heap of (when, seq, callback, argument)."""

    _SLACK = 0.001  # the event loop's timers have a granularity of 1 ms

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.heap: list[tuple[float, int, Callable[[Any, float], None], Any]] = []
        self.seq = itertools.count()
        self.timer: asyncio.TimerHandle | None = None
        self.armed_at = float("inf")
        self.ticking = False
        self.errors: list[Exception] = []
        self.longest_tick = 0.0

    def at(self, when: float, fn: Callable[[Any, float], None], arg: Any) -> None:
        heapq.heappush(self.heap, (when, next(self.seq), fn, arg))
        if when < self.armed_at and not self.ticking:
            self._arm(when)

    def _arm(self, when: float) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.armed_at, self.timer = when, self.loop.call_at(when, self._tick)

    def _tick(self) -> None:
        self.timer, self.armed_at, self.ticking = None, float("inf"), True
        heap, now = self.heap, time.monotonic() + self._SLACK
        try:
            while heap and heap[0][0] <= now:
                when, _, fn, arg = heapq.heappop(heap)
                fn(arg, when)
        except Exception as exc:  # a generator bug: kept for the step's result, the timer goes on
            self.errors.append(exc)
        finally:
            self.ticking = False
            self.longest_tick = max(self.longest_tick, time.monotonic() + self._SLACK - now)
            if heap:
                self._arm(heap[0][0])

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.heap.clear()


class _Live:
    """An agent during a step: its connections and what it is doing."""

    __slots__ = (
        "agent",
        "beat",
        "beat_for",
        "busy",
        "conn",
        "cycle",
        "dead",
        "pending",
        "started",
        "verifier",
    )

    def __init__(self, agent: Agent, conn: Conn, verifier: Conn) -> None:
        self.agent, self.conn, self.verifier = agent, conn, verifier
        self.busy = self.dead = False
        self.pending: list[tuple[float, bool]] = []  # (due, is_cycle), due while busy
        self.started = 0.0
        self.beat, self.beat_for = b"", ""
        self.cycle: asyncio.Future[None] | None = None  # held: the loop keeps tasks weakly


class Step:
    """One run of n agents; `measuring` says whether a request counts."""

    def __init__(self, agents: list[Agent], port: int, args: argparse.Namespace, seed: int) -> None:
        self.agents, self.port, self.args = agents, port, args
        self.rng = random.Random(seed)
        self.tally = Tally()
        self.t0 = self.window_start = self.end = 0.0
        self.busy = 0
        self.idle: asyncio.Future[None] | None = None

    def measuring(self, at: float) -> bool:
        return self.window_start <= at < self.end

    async def run(self) -> Tally:
        loop = asyncio.get_running_loop()
        self.t0 = time.monotonic()
        self.window_start = self.t0 + self.args.warmup
        self.end = self.window_start + self.args.window
        self.sched, self.idle = Scheduler(loop), loop.create_future()
        loop.set_exception_handler(self._loop_error)
        lives = []
        for a in self.agents:  # the same draws, in the same order, as the generator before
            live = _Live(a, self._conn(a), self._conn(a, a.project.verifier_token))
            beat = self.t0 + self.rng.uniform(0, HEARTBEAT_EVERY)
            cycle = self.t0 + self.rng.uniform(0, self.args.cycle)
            self.tally.owed_heartbeats += self._owed(beat)
            self.sched.at(beat, self._beat_due, live)
            self.sched.at(cycle, self._cycle_due, live)
            lives.append(live)
        holders = self.agents[:: self.args.stream_every]
        delays = [self.rng.uniform(0, self.args.warmup / 2) for _ in holders]
        streams = [self._stream(a, d) for a, d in zip(holders, delays, strict=True)]
        self.sched.at(self.window_start, lambda _, __: self._window_opens(), None)
        self.sched.at(self.t0 + 1.0, lambda _, when: self._count_fds(when), None)
        self.sched.at(self.end - 0.001, lambda _, __: self._window_closes(), None)
        self.sched.at(self.end, lambda _, __: self._settle(), None)
        await asyncio.gather(*streams)
        try:
            await asyncio.wait_for(asyncio.shield(self.idle), self.end + self.args.drain - time.monotonic())
        except TimeoutError:  # answers still owed `--drain` s after the step: counted as failures
            for live in lives:
                if live.busy and self.measuring(live.started):
                    self.tally.fail("unanswered", TimeoutError(f"agent {live.agent.n}: no answer"))
        self.sched.stop()
        for live in lives:
            live.conn.close()
            live.verifier.close()
        return self.tally

    def _loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """An exception no callback caught (a generator bug): kept for the step's result."""
        self.sched.errors.append(context.get("exception") or RuntimeError(context["message"]))

    def _owed(self, beat: float) -> int:
        """How many of an agent's first 100 heartbeats fall in the window (the bounds found by
        division, then checked with the comparison itself, so that rounding cannot move them)."""
        first = max(0, int((self.window_start - beat) // HEARTBEAT_EVERY) - 1)
        last = min(100, int((self.end - beat) // HEARTBEAT_EVERY) + 2)
        return sum(self.window_start <= beat + k * HEARTBEAT_EVERY < self.end for k in range(first, last))

    def _window_opens(self) -> None:
        self.tally.cpu_at_window = os.times()
        self.tally.sent_at_window = self.tally.sent

    def _count_fds(self, at: float) -> None:
        self.tally.open_fds = max(self.tally.open_fds, len(os.listdir("/proc/self/fd")))
        if at + 2.0 < self.end:
            self.sched.at(at + 2.0, lambda _, when: self._count_fds(when), None)

    def _window_closes(self) -> None:
        t0, t1 = self.tally.cpu_at_window, os.times()
        if t0 is not None:
            self.tally.window_cpu_s = t1.user + t1.system - t0.user - t0.system
        self.tally.window_sent = self.tally.sent - self.tally.sent_at_window

    def _settle(self) -> None:
        if self.busy == 0 and self.idle is not None and not self.idle.done():
            self.idle.set_result(None)

    def _conn(self, a: Agent, token: str | None = None) -> Conn:
        source = f"127.0.{1 + a.n // (AGENTS_PER_ADDRESS * 250)}.{1 + (a.n // AGENTS_PER_ADDRESS) % 250}"
        return Conn("127.0.0.1", self.port, source, token or a.token)

    # An agent's events: due from the scheduler, started when the agent is free.

    def _beat_due(self, live: _Live, at: float) -> None:
        self._due(live, at, False)

    def _cycle_due(self, live: _Live, at: float) -> None:
        self._due(live, at, True)

    def _due(self, live: _Live, at: float, is_cycle: bool) -> None:
        if live.dead or at >= self.end:
            return
        if self.measuring(at):  # how late the scheduler fired it, busy agent or not
            self.tally.record("scheduler_lag", max(0.0, time.monotonic() - at) * 1000)
        if live.busy:
            live.pending.append((at, is_cycle))
        else:
            self._start(live, at, is_cycle)

    def _start(self, live: _Live, at: float, is_cycle: bool) -> None:
        now = time.monotonic()
        if self.measuring(at):  # how late the generator itself started it
            self.tally.record("generator_lag", max(0.0, now - at) * 1000)
        live.busy, live.started = True, now
        self.busy += 1
        if is_cycle:
            self.sched.at(at + self.args.cycle, self._cycle_due, live)
            live.cycle = asyncio.ensure_future(self._cycle_then_next(live))
            return
        self.sched.at(at + HEARTBEAT_EVERY, self._beat_due, live)
        attempt = live.agent.attempt["id"]
        if live.beat_for != attempt:
            path = f"/v1/attempts/{attempt}/heartbeat"
            live.beat, live.beat_for = request("POST", path, live.conn.auth, _BEAT_BODY), attempt
        self.tally.sent += 1
        live.started = time.monotonic()
        live.conn.send(live.beat, lambda status, body, exc: self._beat_done(live, status, body, exc))

    def _beat_done(self, live: _Live, status: int, body: bytes, exc: BaseException | None) -> None:
        if exc is None and 200 <= status < 300:
            if self.measuring(live.started):
                self.tally.record("heartbeat", (time.monotonic() - live.started) * 1000)
        else:
            failure = exc or HttpError(status, body, "POST heartbeat")
            if self.measuring(live.started):
                self.tally.fail("heartbeat", failure)
            elif live.started < self.window_start:
                self.tally.fail_before_window("heartbeat", failure)
            live.dead = True  # this agent stops, as an agent whose requests fail would
        self._next(live)

    async def _cycle_then_next(self, live: _Live) -> None:
        try:
            await self._cycle(live.agent, live.conn, live.verifier)
        except _FAILURES:
            live.dead = True  # counted (when in the window); this agent stops
        except Exception as exc:  # a generator bug: kept for the step's result
            self.sched.errors.append(exc)
            live.dead = True
        finally:
            self._next(live)

    def _next(self, live: _Live) -> None:
        live.busy = False
        self.busy -= 1
        if live.dead:
            live.pending.clear()
            live.conn.close()
            live.verifier.close()
        elif live.pending:
            at, is_cycle = live.pending.pop(0)
            return self._start(live, at, is_cycle)
        if self.busy == 0 and time.monotonic() >= self.end:
            self._settle()

    # The completion cycle: six requests, each timed; JSON decoded only where a field is needed.

    async def _timed(self, kind: str, call: Awaitable[tuple[int, bytes]]) -> bytes:
        start = time.monotonic()
        self.tally.sent += 1
        try:
            status, body = await call
            if not 200 <= status < 300:
                raise HttpError(status, body, kind)
        except _FAILURES as exc:
            if self.measuring(start):
                self.tally.fail(kind, exc)
            elif start < self.window_start:
                self.tally.fail_before_window(kind, exc)
            raise
        if self.measuring(start):
            self.tally.record(kind, (time.monotonic() - start) * 1000)
        return body

    async def _cycle(self, a: Agent, conn: Conn, verifier: Conn) -> None:
        task, att, auth = a.task, a.attempt, conn.auth
        await self._timed("get_task", conn.fetch(request("GET", f"/v1/tasks/{task['task_id']}", auth)))
        a.done += 1
        path = f"src/a{a.n}/{a.done}.txt"
        data = request("POST", "/v1/blobs", auth, f"{a.n}:{a.done}\n".encode(), b"application/octet-stream")
        blob = json.loads(await self._timed("blob", conn.fetch(data)))
        draft = {"files": {path: blob["digest"]}, "bases": {path: 0}, "file_deps": {}, "collection_deps": {}}
        data = _post(f"/v1/attempts/{att['id']}/candidates", auth, draft)
        cand = json.loads(await self._timed("candidate", conn.fetch(data)))
        data = _post(f"/v1/candidates/{cand['id']}/receipts", verifier.auth, self._receipt(a, cand))
        receipt = json.loads(await self._timed("receipt", verifier.fetch(data)))
        body = {
            "request_id": f"fleet-{a.n}-{a.done}",
            "attempt_id": att["id"],
            "fence": att["fence"],
            "contract_hash": task["contract_hash"],
            "candidate_id": cand["id"],
            "evidence": [receipt["id"]],
        }
        await self._timed(
            "completion", conn.fetch(_post(f"/v1/tasks/{task['task_id']}/complete", auth, body))
        )
        a.task = a.spare.pop(0) if a.spare else a.task
        data = _post(f"/v1/tasks/{a.task['task_id']}/attempts", auth, {"lease_seconds": LEASE})
        claimed = json.loads(await self._timed("claim", conn.fetch(data)))
        a.attempt = {"id": claimed["id"], "fence": claimed["fence"]}

    def _receipt(self, a: Agent, cand: dict[str, Any]) -> dict[str, Any]:
        body = {
            "task_id": a.task["task_id"],
            "attempt_id": a.attempt["id"],
            "contract_hash": a.task["contract_hash"],
            "candidate_digest": cand["digest"],
            "dependency_digest": cand["dependency_digest"],
            "criterion": "tests",
            "checker": "unit@1",
            "result": "pass",
            "issued_at": int(time.time() * 1000),
            "issuer": a.project.verifier_id,
            "log_digest": None,
        }
        return {"body": body, "signature": sign(a.project.key, body)}

    async def _stream(self, a: Agent, delay: float) -> None:
        await asyncio.sleep(delay)
        path = f"/v1/projects/{a.project.id}/events/stream?after={self.args.after}"
        try:
            events = await follow(self._conn(a), path, self.end)  # not `+= await`: a race
            self.tally.events_seen += events
        except _FAILURES as exc:
            self.tally.fail("stream", exc)


def _post(path: str, auth: bytes, body: dict[str, Any]) -> bytes:
    return request("POST", path, auth, json.dumps(body).encode())
