"""Server CPU per heartbeat: `studiolo serve` in a subprocess, 50 agents, one run.

    python bench/heartbeat_cpu.py [--requests 5000] [--modes reuse,fresh,paced] [--rate 80]

Modes (each runs after the others, on the same server):
- reuse: each agent sends its heartbeats back to back on one keep-alive connection;
- fresh: the same, but on a new TCP connection each (what an agent did when the server
  closed connections idle for 5 s and agents heartbeat every 10 s);
- paced: `--rate` heartbeats per second (80) spread evenly (a fleet's rhythm: each request
  finds the server idle and its caches cold; 10,000 agents at one heartbeat every 10 s on
  two workers are 500 a second each).

CPU is the server process's user + system time (`/proc`), over the requests sent. The load
average goes with every line. The last line is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent  # off the path: bench/http.py would shadow `http`
sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from bench._fleet_client import Conn  # noqa: E402
from bench._fleet_setup import LEASE, Agent, Fleet, _SetupStore  # noqa: E402
from bench.fleet import cpu_seconds, start_server  # noqa: E402
from studiolo.faces.http.server import free_port  # noqa: E402
from studiolo.service import Coordinator  # noqa: E402
from studiolo.settings import Settings  # noqa: E402

AGENTS = 50
PACED_PER_S = 80.0


async def _send(agents: list[Agent], port: int, mode: str, requests: int, rate: float = PACED_PER_S) -> None:
    conns = [Conn("127.0.0.1", port, "127.0.0.1", a.token) for a in agents]
    each = requests // len(agents)
    gap = len(agents) / rate

    async def agent(i: int, a: Agent) -> None:
        if mode == "paced":
            await asyncio.sleep(i * gap / len(agents))
        for _ in range(each):
            if mode == "paced":
                await asyncio.sleep(gap)
            if mode == "fresh":
                conns[i].close()
            await conns[i].call("POST", f"/v1/attempts/{a.attempt['id']}/heartbeat", {"lease_seconds": LEASE})

    await asyncio.gather(*(agent(i, a) for i, a in enumerate(agents)))
    for conn in conns:
        conn.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=5000)
    ap.add_argument("--modes", default="reuse,fresh,paced")
    ap.add_argument("--rate", type=float, default=PACED_PER_S, help="heartbeats a second, paced")
    args = ap.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="studiolo-hb-") as tmp:
        url = Settings.sqlite_url(Path(tmp) / "hb.db")
        coord = Coordinator(_SetupStore(url), Settings(database_url=url))
        issued = coord.initialize()
        assert issued is not None
        fleet = Fleet(coord, issued.principal, 100)
        fleet.grow(AGENTS)
        port = free_port()
        server = start_server(url, port, 1)
        try:
            asyncio.run(_send(fleet.agents, port, "reuse", args.requests))  # warm up
            for mode in args.modes.split(","):
                paced = min(args.requests, max(800, int(args.rate * 10)))  # about 10 s
                requests = args.requests if mode != "paced" else paced
                cpu0, wall0 = cpu_seconds(server.pid), time.perf_counter()
                asyncio.run(_send(fleet.agents, port, mode, requests, args.rate))
                cpu, wall = cpu_seconds(server.pid) - cpu0, time.perf_counter() - wall0
                results[mode] = round(cpu * 1000 / requests, 3)
                print(
                    f"{mode}: {requests} heartbeats in {wall:.1f} s, server CPU {results[mode]} ms each;"
                    f" load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
        finally:
            server.terminate()
            server.wait(timeout=30)
            coord.store.dispose()
    print(json.dumps({f"server_cpu_ms_per_heartbeat_{k}": v for k, v in results.items()}))


if __name__ == "__main__":
    main()
