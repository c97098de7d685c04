"""Server CPU per request of an agent's completion cycle, and which thread spends it.

    python bench/cycle_cpu.py [--agents 20] [--rounds 10] [--gap 0.02] [--streams 0]

`studiolo serve` in a subprocess (the ledger and setup of `bench/fleet.py`); one request at a
time, the six requests of `bench/fleet.py`'s cycle (read the task, upload a blob, submit a
candidate, the verifier's signed receipt, complete, claim the next), `--gap` seconds between
cycles, `--streams` agents holding the project's event stream. A request's CPU is the
difference of the server's threads' on-CPU time (`/proc/<pid>/task/*/schedstat`, ns) around
it, so work a request leaves behind is counted against the next one; the per-cycle total
also counts what the streams and the feed's reads cost. Per thread: the event loop's thread
(HTTP, middleware, routing, rendering) and the others (the threadpool: the door, the store).
The last line is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent  # off the path: bench/http.py would shadow `http`
sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from bench._fleet_client import HttpError  # noqa: E402
from bench._fleet_setup import Fleet, _SetupStore  # noqa: E402
from bench._fleet_step import Step  # noqa: E402
from bench.fleet import start_server  # noqa: E402
from studiolo.faces.http.server import free_port  # noqa: E402
from studiolo.service import Coordinator  # noqa: E402
from studiolo.settings import Settings  # noqa: E402


def thread_ns(pid: int) -> dict[int, int]:
    """On-CPU nanoseconds of each thread of the process."""
    out: dict[int, int] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out[int(task.name)] = int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue
    return out


class Meter:
    """Stands in for `Step._timed`: server CPU around each request, by kind."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.ms: dict[str, list[float]] = {}

    async def __call__(self, kind: str, call: Awaitable[tuple[int, bytes]]) -> bytes:
        before = sum(thread_ns(self.pid).values())
        status, body = await call
        self.ms.setdefault(kind, []).append((sum(thread_ns(self.pid).values()) - before) / 1e6)
        if not 200 <= status < 300:
            raise HttpError(status, body, kind)
        return body


async def drive(fleet: Fleet, port: int, pid: int, args: argparse.Namespace) -> dict[str, Any]:
    step = Step(fleet.agents, port, args, seed=1)
    step.t0 = step.window_start = time.monotonic()
    step.end = step.t0 + 86400
    meter = Meter(pid)
    step._timed = meter  # type: ignore[method-assign]
    streams = [asyncio.create_task(step._stream(a, 0.0)) for a in fleet.agents[: args.streams]]
    await asyncio.sleep(2 if streams else 0)
    conns = {a.n: (step._conn(a), step._conn(a, a.project.verifier_token)) for a in fleet.agents}
    for a in fleet.agents:  # warm every agent's connections and the server's caches
        await step._cycle(a, *conns[a.n])
        a.spare.append(fleet._task(a))
    meter.ms.clear()
    loop_tid, before = pid, thread_ns(pid)  # the main thread runs the event loop
    cycles = 0
    for _ in range(args.rounds):
        for a in fleet.agents:
            await step._cycle(a, *conns[a.n])
            a.spare.append(fleet._task(a))  # setup, in this process
            cycles += 1
            await asyncio.sleep(args.gap)
    await asyncio.sleep(1.0)  # the streams' last reads
    after = thread_ns(pid)
    for task in streams:
        task.cancel()
    spent = {t: after[t] - before.get(t, 0) for t in after}
    loop_ms = spent.pop(loop_tid, 0) / 1e6 / cycles
    return {
        "cycles": cycles,
        "streams": args.streams,
        "server_ms_per_cycle": round(loop_ms + sum(spent.values()) / 1e6 / cycles, 2),
        "event_loop_thread_ms_per_cycle": round(loop_ms, 2),
        "other_threads_ms_per_cycle": round(sum(spent.values()) / 1e6 / cycles, 2),
        "median_ms_by_request": {k: round(statistics.median(v), 2) for k, v in meter.ms.items()},
        "load_avg_1m": os.getloadavg()[0],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--gap", type=float, default=0.02, help="seconds between cycles")
    ap.add_argument("--streams", type=int, default=0, help="agents that hold the event stream")
    args = ap.parse_args()
    args.warmup, args.stream_every = 0.0, 10
    with tempfile.TemporaryDirectory(prefix="studiolo-cycle-") as tmp:
        url = Settings.sqlite_url(Path(tmp) / "cycle.db")
        coord = Coordinator(_SetupStore(url), Settings(database_url=url))
        issued = coord.initialize()
        assert issued is not None
        fleet = Fleet(coord, issued.principal, max(100, args.agents))
        fleet.grow(args.agents)
        args.after = coord.store.read(lambda tx: tx.audit.last()[0])
        port = free_port()
        server = start_server(url, port, 1)
        try:
            result = asyncio.run(drive(fleet, port, server.pid, args))
        finally:
            server.terminate()
            server.wait(timeout=30)
            coord.store.dispose()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
