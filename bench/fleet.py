"""A fleet of simulated agents against `studiolo serve`: the largest fleet the server holds.

    python bench/fleet.py [--workers 1] [--start 1000] [--max 16000] [--budget 420]

The server is `studiolo serve` in a subprocess with the settings `make run` uses (a SQLite
ledger on disk, WAL, synchronous=FULL, the default limits), `--workers N` processes. Every
agent is its own principal with its own token, in projects of `--per-project` agents
(a project has a verifier whose Ed25519 key signs receipts). Each agent:

- holds a live attempt and heartbeats it every 10 s (`POST /v1/attempts/{a}/heartbeat`);
- every `--cycle` seconds completes its task and takes the next: reads its task, uploads a
  blob, submits a candidate, has the project's verifier post a signed passing receipt,
  completes, claims the next task (6 requests);
- one agent in ten also holds the project's event stream (Server-Sent Events) open.

A step runs N agents for `--warmup` + `--window` seconds (phases spread at random; only the
window's requests are measured). A step passes when heartbeat p99 ≤ 100 ms, completion
p99 ≤ 500 ms, no request failed, no stream ended early, and the generator kept its schedule
(≥ 95% of the heartbeats it owed). N doubles from `--start` until a step fails, then the
gap is bisected while the budget lasts. The load generator is a raw asyncio HTTP client in
this process (`_fleet_client.py`); its CPU share is printed next to the server's.
Setup (principals, grants, tasks, first claims) goes through the door in this process on the
same ledger; it is not timed. The last line is JSON: {"fleet_agents": N, ...}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

_HERE = Path(__file__).resolve().parent  # off the path: bench/http.py would shadow `http`
sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: E402

from bench._fleet_client import Conn, HttpError  # noqa: E402
from studiolo.core.model import Principal  # noqa: E402
from studiolo.faces.http.server import free_port  # noqa: E402
from studiolo.keys import public_key_text, sign  # noqa: E402
from studiolo.service import Coordinator  # noqa: E402
from studiolo.settings import Settings  # noqa: E402
from studiolo.store import Store, Tx, volatile  # noqa: E402
from studiolo.store.gate import Gate  # noqa: E402

T = TypeVar("T")
HEARTBEAT_EVERY = 10.0
HEARTBEAT_P99_MS = 100.0
COMPLETION_P99_MS = 500.0
AGENTS_PER_ADDRESS = 50
LEASE = 120.0


class _SetupStore(Store):
    """Setup writes skip their fsync (a benchmark fixture, not the measured path)."""

    def write(self, fn: Callable[[Tx], T], gate: Gate | None = None) -> T:
        return super().write(volatile(fn), gate)


@dataclass
class Project:
    id: str
    verifier_id: str
    verifier_token: str
    key: Ed25519PrivateKey


@dataclass
class Agent:
    n: int
    token: str
    principal: Principal
    project: Project
    task: dict[str, Any] = field(default_factory=dict)  # task_id, contract_hash
    attempt: dict[str, Any] = field(default_factory=dict)  # id, fence
    spare: list[dict[str, Any]] = field(default_factory=list)
    done: int = 0


@dataclass
class Fleet:
    coord: Coordinator
    admin: Principal
    per_project: int
    agents: list[Agent] = field(default_factory=list)
    projects: list[Project] = field(default_factory=list)

    def grow(self, n: int) -> None:
        while len(self.agents) < n:
            if len(self.agents) % self.per_project == 0:
                self.projects.append(self._project(len(self.projects)))
            self.agents.append(self._agent(len(self.agents), self.projects[-1]))
        for a in self.agents[:n]:
            while len(a.spare) < 1:
                a.spare.append(self._task(a))

    def _project(self, k: int) -> Project:
        c, admin = self.coord, self.admin
        pid = c.create_project(admin, f"fleet-{k}").id
        key = Ed25519PrivateKey.generate()
        ci = c.add_principal(admin, pid, "ci", "verifier", public_key_text(key))
        c.grant(admin, pid, ci.principal.id, ["read", "verify"], ["**"])
        c.publish_policy(admin, pid, "Keep the lease alive.")
        c.register_checker(admin, pid, "unit", "1", "command", {"argv": ["true"]}, [ci.principal.id])
        return Project(pid, ci.principal.id, ci.token, key)

    def _agent(self, n: int, p: Project) -> Agent:
        c, admin = self.coord, self.admin
        issued = c.add_principal(admin, p.id, f"agent-{n}", "agent")
        c.grant(admin, p.id, issued.principal.id, ["read", "claim"], ["**"])
        c.grant(admin, p.id, issued.principal.id, ["write", "complete"], [f"src/a{n}/**"])
        agent = Agent(n, issued.token, issued.principal, p)
        agent.task = self._task(agent)
        att = c.claim(issued.principal, agent.task["task_id"], LEASE)
        agent.attempt = {"id": att.id, "fence": att.fence}
        return agent

    def _task(self, a: Agent) -> dict[str, Any]:
        t = self.coord.create_task(
            self.admin, a.project.id, f"work of agent {a.n}", criteria={"tests": "unit@1"}, scope=["src/**"]
        )
        return {"task_id": t.id, "contract_hash": t.contract_hash}


@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=lambda: {})
    errors: Counter[str] = field(default_factory=Counter)
    samples: list[str] = field(default_factory=list)
    owed_heartbeats: int = 0
    events_seen: int = 0

    def record(self, kind: str, ms: float) -> None:
        self.latencies.setdefault(kind, []).append(ms)

    def fail(self, kind: str, exc: Exception) -> None:
        self.errors[kind] += 1
        if len(self.samples) < 5:
            self.samples.append(f"{kind}: {exc}")


class Step:
    """One run of n agents; `measuring` says whether a request counts."""

    def __init__(self, fleet: Fleet, n: int, port: int, args: argparse.Namespace, seed: int) -> None:
        self.fleet, self.n, self.port, self.args = fleet, n, port, args
        self.rng = random.Random(seed)
        self.tally = Tally()
        self.t0 = self.window_start = self.end = 0.0

    def measuring(self, at: float) -> bool:
        return self.window_start <= at < self.end

    async def run(self) -> Tally:
        loop = asyncio.get_running_loop()
        self.t0 = loop.time()
        self.window_start = self.t0 + self.args.warmup
        self.end = self.window_start + self.args.window
        agents = self.fleet.agents[: self.n]
        jobs = [self._agent(a) for a in agents]
        jobs += [self._stream(a) for a in agents[:: self.args.stream_every]]
        await asyncio.gather(*jobs)
        return self.tally

    def _conn(self, a: Agent, token: str | None = None) -> Conn:
        source = f"127.0.{1 + a.n // (AGENTS_PER_ADDRESS * 250)}.{1 + (a.n // AGENTS_PER_ADDRESS) % 250}"
        return Conn("127.0.0.1", self.port, source, token or a.token)

    async def _timed(self, kind: str, call: Any) -> Any:
        loop = asyncio.get_running_loop()
        start = loop.time()
        try:
            out = await call
        except (HttpError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
            if self.measuring(start):
                self.tally.fail(kind, exc)
            raise
        if self.measuring(start):
            self.tally.record(kind, (loop.time() - start) * 1000)
        return out

    async def _agent(self, a: Agent) -> None:
        loop = asyncio.get_running_loop()
        conn, verifier = self._conn(a), self._conn(a, a.project.verifier_token)
        beat = self.t0 + self.rng.uniform(0, HEARTBEAT_EVERY)
        cycle = self.t0 + self.rng.uniform(0, self.args.cycle)
        self.tally.owed_heartbeats += sum(
            1 for k in range(100) if self.window_start <= beat + k * HEARTBEAT_EVERY < self.end
        )
        try:
            while (at := min(beat, cycle)) < self.end:
                await asyncio.sleep(max(0.0, at - loop.time()))
                if self.measuring(at):  # how late the generator itself woke up
                    self.tally.record("generator_lag", (loop.time() - at) * 1000)
                if at == cycle:
                    await self._cycle(a, conn, verifier)
                    cycle += self.args.cycle
                else:
                    path = f"/v1/attempts/{a.attempt['id']}/heartbeat"
                    await self._timed("heartbeat", conn.call("POST", path, {"lease_seconds": LEASE}))
                    beat += HEARTBEAT_EVERY
        except (HttpError, OSError, asyncio.IncompleteReadError, ValueError):
            return  # counted (when in the window); this agent stops
        finally:
            conn.close()
            verifier.close()

    async def _cycle(self, a: Agent, conn: Conn, verifier: Conn) -> None:
        task, att = a.task, a.attempt
        await self._timed("get_task", conn.call("GET", f"/v1/tasks/{task['task_id']}"))
        a.done += 1
        path = f"src/a{a.n}/{a.done}.txt"
        blob = await self._timed("blob", conn.call("POST", "/v1/blobs", raw=f"{a.n}:{a.done}\n".encode()))
        draft = {"files": {path: blob["digest"]}, "bases": {path: 0}, "file_deps": {}, "collection_deps": {}}
        cand = await self._timed(
            "candidate", conn.call("POST", f"/v1/attempts/{att['id']}/candidates", draft)
        )
        receipt_path = f"/v1/candidates/{cand['id']}/receipts"
        receipt = await self._timed("receipt", verifier.call("POST", receipt_path, self._receipt(a, cand)))
        body = {
            "request_id": f"fleet-{a.n}-{a.done}",
            "attempt_id": att["id"],
            "fence": att["fence"],
            "contract_hash": task["contract_hash"],
            "candidate_id": cand["id"],
            "evidence": [receipt["id"]],
        }
        await self._timed("completion", conn.call("POST", f"/v1/tasks/{task['task_id']}/complete", body))
        a.task = a.spare.pop(0) if a.spare else a.task
        claimed = await self._timed(
            "claim", conn.call("POST", f"/v1/tasks/{a.task['task_id']}/attempts", {"lease_seconds": LEASE})
        )
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

    async def _stream(self, a: Agent) -> None:
        await asyncio.sleep(self.rng.uniform(0, self.args.warmup / 2))
        path = f"/v1/projects/{a.project.id}/events/stream?after={self.args.after}"
        try:
            async for chunk in self._conn(a).stream(path, self.end):
                self.tally.events_seen += chunk.count(b"\nevent: ") + chunk.startswith(b"event: ")
        except (HttpError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
            self.tally.fail("stream", exc)


def pct(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its children (the --workers processes)."""
    total, tick = 0.0, os.sysconf("SC_CLK_TCK")
    pids = [pid]
    while pids:
        p = pids.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
            for t in Path(f"/proc/{p}/task").iterdir():
                pids += [int(c) for c in (t / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def run_step(fleet: Fleet, n: int, port: int, server: int, args: argparse.Namespace) -> dict[str, Any]:
    t0 = time.perf_counter()
    fleet.grow(n)
    args.after = fleet.coord.store.read(lambda tx: tx.audit.last()[0])
    setup = time.perf_counter() - t0
    step = Step(fleet, n, port, args, seed=n)
    wall0, mine0, srv0 = time.perf_counter(), time.process_time(), cpu_seconds(server)
    tally = asyncio.run(step.run())
    wall = time.perf_counter() - wall0
    lat = tally.latencies
    hb, done = lat.get("heartbeat", []), lat.get("completion", [])
    out = {
        "agents": n,
        "heartbeat_p50_ms": round(pct(hb, 50), 1),
        "heartbeat_p99_ms": round(pct(hb, 99), 1),
        "completion_p50_ms": round(pct(done, 50), 1),
        "completion_p99_ms": round(pct(done, 99), 1),
        "claim_p99_ms": round(pct(lat.get("claim", []), 99), 1),
        "get_task_p99_ms": round(pct(lat.get("get_task", []), 99), 1),
        "generator_lag_p99_ms": round(pct(lat.pop("generator_lag", []), 99), 1),
        "heartbeats": len(hb),
        "heartbeats_owed": tally.owed_heartbeats,
        "completions": len(done),
        "streams": len(fleet.agents[: n : args.stream_every]),
        "stream_events": tally.events_seen,
        "errors": sum(tally.errors.values()),
        "error_kinds": dict(tally.errors),
        "error_samples": tally.samples,
        "requests_per_s": round(sum(map(len, lat.values())) / args.window, 1),
        "server_cpu_cores": round((cpu_seconds(server) - srv0) / wall, 2),
        "server_cpu_ms_per_agent_s": round((cpu_seconds(server) - srv0) / wall * 1000 / n, 3),
        "loadgen_cpu_cores": round((time.process_time() - mine0) / wall, 2),
        "load_avg_1m": os.getloadavg()[0],
        "setup_s": round(setup, 1),
    }
    out["ok"] = bool(
        out["errors"] == 0
        and hb
        and done
        and len(hb) >= 0.95 * tally.owed_heartbeats
        and out["heartbeat_p99_ms"] <= HEARTBEAT_P99_MS
        and out["completion_p99_ms"] <= COMPLETION_P99_MS
    )
    return out


def search(
    fleet: Fleet, port: int, server: int, args: argparse.Namespace
) -> tuple[int, list[dict[str, Any]]]:
    deadline = time.monotonic() + args.budget
    best, worst, n, steps = 0, 0, args.start, []
    while time.monotonic() < deadline:
        result = run_step(fleet, n, port, server, args)
        steps.append(result)
        print(json.dumps(result), file=sys.stderr, flush=True)
        if result["ok"]:
            best = n
        else:
            worst = n
        if worst == 0:
            n = min(n * 2, args.max)
            if n == best:
                break
        elif worst - best <= args.resolution:
            break
        else:
            n = (best + worst) // 2 // 100 * 100 or args.resolution
    return best, steps


def start_server(url: str, port: int, workers: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "STUDIOLO_DATABASE_URL": url}
    argv = [sys.executable, "-c", "from studiolo.faces.cli import main; main()", "serve", "--port", str(port)]
    if workers > 1:
        argv += ["--workers", str(workers)]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the server exited")
        try:
            asyncio.run(Conn("127.0.0.1", port, "127.0.0.1", "-").call("GET", "/healthz"))
            return proc
        except (OSError, HttpError):
            time.sleep(0.2)
    raise RuntimeError("the server did not start")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--start", type=int, default=1000)
    ap.add_argument("--max", type=int, default=16000)
    ap.add_argument("--resolution", type=int, default=500)
    ap.add_argument("--budget", type=float, default=420, help="seconds before no new step starts")
    ap.add_argument("--per-project", type=int, default=100)
    ap.add_argument("--cycle", type=float, default=180, help="seconds between an agent's completions")
    ap.add_argument("--warmup", type=float, default=10)
    ap.add_argument("--window", type=float, default=30)
    ap.add_argument("--stream-every", type=int, default=10)
    ap.add_argument("--dir", type=Path, default=None, help="where the ledger goes (default: a temp dir)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="studiolo-fleet-", dir=args.dir) as tmp:
        url = Settings.sqlite_url(Path(tmp) / "fleet.db")
        coord = Coordinator(_SetupStore(url), Settings(database_url=url))
        issued = coord.initialize()
        assert issued is not None
        fleet = Fleet(coord, issued.principal, args.per_project)
        port = free_port()
        server = start_server(url, port, args.workers)
        try:
            best, steps = search(fleet, port, server.pid, args)
        finally:
            server.terminate()
            server.wait(timeout=30)
            coord.store.dispose()
    at_best = next((s for s in steps if s["agents"] == best), {})
    print(f"largest fleet: {best} agents ({args.workers} worker(s)); load {os.getloadavg()}")
    result = {
        "fleet_agents": best,
        "workers": args.workers,
        "heartbeat_p99_ms": at_best.get("heartbeat_p99_ms"),
        "completion_p99_ms": at_best.get("completion_p99_ms"),
        "server_cpu_cores": at_best.get("server_cpu_cores"),
        # CPU the server spent per agent per second, at the largest step run: what bounds N
        # once the tails are not the machine's (2 cores ÷ this = a CPU-bound estimate).
        "server_cpu_ms_per_agent_s": max(steps, key=lambda s: s["agents"])["server_cpu_ms_per_agent_s"]
        if steps
        else None,
        "loadgen_cpu_cores": at_best.get("loadgen_cpu_cores"),
        "load_avg_1m": at_best.get("load_avg_1m"),
        "cycle_s": args.cycle,
        "steps": [
            {k: s[k] for k in ("agents", "ok", "heartbeat_p99_ms", "completion_p99_ms", "errors")}
            for s in steps
        ],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
