"""Scale-out benchmark: completion throughput and latency with 1, 2 and 4 `studiolo serve`
replicas on one PostgreSQL database, next to a baseline of bare single-row PostgreSQL
transactions issued by the same client processes in the same run.

    python bench/scale.py [--database-url postgresql+psycopg://postgres@127.0.0.1:5432/test]

Workload (per replica count, on disjoint tasks of one seeded project): every task is claimed,
has a candidate and a passing receipt; the timed phase is only the completion requests,
sent over HTTP by `--processes` × `--threads` concurrent keep-alive connections to the
replicas in turn. The clients are lean (raw HTTP/1.1 on asyncio, `bench/_fleet_client.py`),
so they leave the two cores to what they measure; their CPU is reported (`client_cpu_s`).
Contention: `--hot` tasks receive `--hot-requests` competing completion requests each
(distinct request ids, one wins, the rest are refused with `task_not_active`), all other
tasks one request each. Every request is a full serializable decision; throughput counts
decisions per second, accepted ones are reported too.

Baseline: the same client processes, `--threads` psycopg connections each, run
`UPDATE bench_rows SET n = n + 1 WHERE id = $1; COMMIT` on psycopg directly (READ COMMITTED,
autocommit off) over the same hot/cold id mix.

Door: `--door` completions made one at a time in this process straight through the door
(`Coordinator.complete`, no HTTP): the latency of one completion transaction on PostgreSQL.

Projects: with 4 replicas, `--spread` completion requests (one per task) for tasks of one
project, then the same number spread over 8 projects, in two alternating rounds; writes of
different projects take different writer gates.

The last line is JSON: `pg_solo_p50_ms` = p50 of the door completions; `pg_ratio` =
completions/s with one replica ÷ bare transactions/s; `replica_scaling` = completions/s with
4 replicas ÷ with 1; `project_scaling` = completions/s with 8 busy projects ÷ with 1 (4
replicas); `p99_ms` = p99 completion latency with 4 replicas; `read_scaling` = task views/s
with 4 replicas ÷ with 1 (reads take no writer gate). Every figure is also broken down.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
# Run as a script, bench/ is sys.path[0]: a sibling named like a stdlib module (bench/http.py)
# would shadow it. Import from the repository root instead.
sys.path[:] = [str(ROOT), *(p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench")]

import httpx  # noqa: E402
import psycopg  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from bench._fleet_client import Conn, request  # noqa: E402
from studiolo.client import Client  # noqa: E402
from studiolo.service import Coordinator, make_request  # noqa: E402
from studiolo.settings import Settings  # noqa: E402
from studiolo.store import Store  # noqa: E402
from tests.scale.cluster import Cluster, Seed, ready_completions, seed_another, seed_project  # noqa: E402
from tests.store.pgdb import fresh_database  # noqa: E402

DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
_SOLO = 20  # tasks per run completed by one client alone, before the concurrent phase


@dataclass(frozen=True)
class Options:
    url: str
    replicas: tuple[int, ...]
    processes: int
    threads: int
    cold: int
    hot: int
    hot_requests: int
    bare_seconds: float
    door: int
    spread: int


def _options() -> Options:
    env = os.environ.get("STUDIOLO_BENCH_DATABASE_URL") or os.environ.get("STUDIOLO_TEST_DATABASE_URL")
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--database-url", default=env or DEFAULT_URL, help="a PostgreSQL server")
    p.add_argument("--replicas", default="1,2,4")
    p.add_argument("--processes", type=int, default=4, help="client processes")
    p.add_argument("--threads", type=int, default=8, help="client connections (bare: threads) per process")
    p.add_argument("--cold", type=int, default=600, help="tasks with one completion request, per run")
    p.add_argument("--hot", type=int, default=8, help="hot tasks per run")
    p.add_argument("--hot-requests", type=int, default=4, help="competing requests per hot task")
    p.add_argument("--bare-seconds", type=float, default=5.0)
    p.add_argument("--door", type=int, default=40, help="completions through the door, one at a time")
    p.add_argument("--spread", type=int, default=960, help="requests per project-scaling run (÷ 8)")
    a = p.parse_args()
    replicas = tuple(int(n) for n in a.replicas.split(","))
    return Options(
        a.database_url,
        replicas,
        a.processes,
        a.threads,
        a.cold,
        a.hot,
        a.hot_requests,
        a.bare_seconds,
        a.door,
        a.spread - a.spread % 16,
    )


# the completion runs ----------------------------------------------------------------
def _requests(ready: list[dict[str, Any]], hot: int, copies: int, rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for n, item in enumerate(ready):
        for k in range(copies if n < hot else 1):
            request = {**item["request"], "request_id": f"{item['request']['request_id']}-{k}"}
            out.append({**item, "request": request})
    rng.shuffle(out)
    return out


def _client_process(bases: list[str], work: list[dict[str, Any]], conns: int, barrier: Any, out: Any) -> None:
    """One client process: `conns` keep-alive connections, each sending one completion at a
    time from the shared queue, to the replicas in turn (raw HTTP/1.1 on asyncio,
    `bench/_fleet_client.py`: it leaves the cores to the servers it measures)."""
    ready = [(bases[n % len(bases)], _completion_bytes(item)) for n, item in enumerate(work)]
    barrier.wait()
    out.put(asyncio.run(_drive(ready, conns, _completion_outcome, seconds=None)))


def _completion_bytes(item: dict[str, Any]) -> bytes:
    body = json.dumps(item["request"], separators=(",", ":")).encode()
    return request("POST", f"/v1/tasks/{quote(item['task'], safe='')}/complete", _auth(item["token"]), body)


def _auth(token: str) -> bytes:
    return f"Authorization: Bearer {token}\r\n".encode()


def _completion_outcome(status: int, body: bytes) -> str:
    """`accepted` for a 2xx (every request id is distinct: no replays), else the refusal's
    reason. (The lean client keeps no headers: a resend of a request the server had taken
    would count as accepted; it resends only on a kept connection the server closed, which
    its keep-alive time rules out within a run.)"""
    if 200 <= status < 300:
        return "accepted"
    try:
        return str(json.loads(body).get("reason") or status)
    except ValueError:
        return f"http {status}"


async def _drive(
    ready: list[tuple[str, bytes]],
    conns: int,
    outcome: Any,
    seconds: float | None,
) -> tuple[float, float, list[tuple[float, str]], float]:
    """Send `ready` (base, the request's bytes) over `conns`
    connections: each request once in order (`seconds` None), or chosen at random until
    `seconds` have passed. Returns (began, ended, [(latency, outcome)], this process's CPU)."""
    results: list[tuple[float, str]] = []
    pending = list(reversed(ready))
    rng = random.Random(os.getpid())

    async def connection() -> None:
        # One keep-alive connection per replica: each request carries its own token.
        open_: dict[str, Conn] = {}
        stop = None if seconds is None else time.perf_counter() + seconds
        while True:
            if stop is None:
                if not pending:
                    break
                base, data = pending.pop()
            elif time.perf_counter() < stop:
                base, data = rng.choice(ready)
            else:
                break
            conn = open_.get(base)
            if conn is None:
                url = httpx.URL(base)
                conn = open_[base] = Conn(url.host, url.port or 80, "127.0.0.1", "")
            start = time.perf_counter()
            try:
                status, body = await conn.fetch(data)
                result = outcome(status, body)
            except OSError as err:  # reported in `outcomes`, never hidden
                result = f"transport: {type(err).__name__}"
            results.append((time.perf_counter() - start, result))
        for conn in open_.values():
            conn.close()

    began, cpu = time.time(), time.process_time()
    await asyncio.gather(*(connection() for _ in range(conns)))
    return began, time.time(), results, time.process_time() - cpu


@dataclass
class Usage:
    """CPU while the clients ran: theirs (summed over their processes) and the whole machine's."""

    client_cpu_s: float = 0.0
    machine_busy_s: float = 0.0


def _busy_seconds() -> float:
    """CPU seconds the machine has spent busy since boot (every core; /proc/stat)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _run_clients(
    opts: Options, target: Any, args_for: Any, usage: Usage | None = None
) -> tuple[float, list[tuple[float, str]]]:
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(opts.processes + 1), ctx.Queue()
    procs = [ctx.Process(target=target, args=(*args_for(p), barrier, out)) for p in range(opts.processes)]
    for proc in procs:
        proc.start()
    barrier.wait()
    busy = _busy_seconds()
    parts = [out.get(timeout=900) for _ in procs]
    if usage is not None:
        usage.machine_busy_s += _busy_seconds() - busy
        usage.client_cpu_s += sum(p[3] for p in parts)
    for proc in procs:
        proc.join()
    began, ended = min(p[0] for p in parts), max(p[1] for p in parts)
    return ended - began, [r for p in parts for r in p[2]]


def solo(base: str, requests: list[dict[str, Any]]) -> dict[str, Any]:
    """One client, one request at a time: the latency of an uncontended completion, whose
    inverse bounds the throughput of serialized writers."""
    latencies = []
    with httpx.HTTPTransport() as transport:
        for item in requests:
            with Client(base, item["token"], timeout=60, transport=transport) as client:
                start = time.perf_counter()
                client.complete(item["task"], **item["request"])
                latencies.append(time.perf_counter() - start)
    latencies.sort()
    p50 = _pct(latencies, 0.5)
    return {"requests": len(latencies), "p50_ms": round(p50 * 1000, 1), "ceiling_per_s": round(1 / p50, 1)}


def door(url: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """Completions one at a time through the door in this process: no HTTP, no client."""
    store = Store(url)
    coord = Coordinator(store, Settings(database_url=url))
    latencies, cpu = [], []
    for item in items:
        who = coord.authenticate(item["token"])
        request = make_request(task_id=item["task"], **item["request"])
        start, used = time.perf_counter(), time.process_time()
        coord.complete(who, request)
        latencies.append(time.perf_counter() - start)
        cpu.append(time.process_time() - used)
    store.dispose()
    latencies.sort()
    cpu.sort()
    return {
        "requests": len(items),
        "p50_ms": round(_pct(latencies, 0.5) * 1000, 2),
        "p99_ms": round(_pct(latencies, 0.99) * 1000, 2),
        "cpu_p50_ms": round(_pct(cpu, 0.5) * 1000, 2),
    }


def projects(opts: Options, seed: Seed, logs: Path, rng: random.Random) -> dict[str, Any]:
    """Completions/s with 4 replicas for tasks of one project, and spread over 8 projects:
    two alternating rounds of each, summed."""
    one = ready_completions(seed_another(seed, "one", agents=16, tasks=opts.spread))
    eight = [
        item
        for n in range(8)
        for item in ready_completions(seed_another(seed, f"eight-{n}", agents=4, tasks=opts.spread // 8))
    ]
    rng.shuffle(eight)
    half = opts.spread // 2
    rounds: dict[str, list[dict[str, Any]]] = {"1": [], "8": []}
    with Cluster(seed.url, 4, logs) as cluster:
        for part in (slice(0, half), slice(half, None)):
            for label, items in (("1", one), ("8", eight)):
                rounds[label].append(completions(opts, cluster.urls, _requests(items[part], 0, 1, rng)))
    out = {}
    for label, parts in rounds.items():
        done, seconds = sum(r["requests"] for r in parts), sum(r["seconds"] for r in parts)
        out[label] = {
            "requests": done,
            "accepted": sum(r["accepted"] for r in parts),
            "completions_per_s": round(done / seconds, 1),
            "p99_ms": max(r["p99_ms"] for r in parts),
            # cores busy while the clients ran (the machine has 2), and the clients' share
            "machine_cores": round(sum(r["machine_busy_s"] for r in parts) / seconds, 2),
            "client_cores": round(sum(r["client_cpu_s"] for r in parts) / seconds, 2),
        }
    return out


def _read_process(
    bases: list[str], work: list[dict[str, Any]], conns: int, seconds: float, barrier: Any, out: Any
) -> None:
    token = work[0]["token"]
    ready = [
        (b, request("GET", f"/v1/tasks/{quote(i['task'], safe='')}", _auth(token)))
        for i in work
        for b in bases
    ]
    barrier.wait()
    out.put(
        asyncio.run(
            _drive(ready, conns, lambda status, _b: "ok" if status == 200 else f"http {status}", seconds)
        )
    )


def reads(opts: Options, bases: list[str], items: list[dict[str, Any]]) -> dict[str, Any]:
    """Task views (GET /v1/tasks/{id}): reads take no gate, so they may scale with replicas."""
    args = (bases, items, opts.threads, opts.bare_seconds)
    seconds, results = _run_clients(opts, _read_process, lambda _p: args)
    latencies = sorted(r[0] for r in results)
    return {
        "requests": len(results),
        "reads_per_s": round(len(results) / seconds, 1),
        "p50_ms": round(_pct(latencies, 0.50) * 1000, 1),
        "p99_ms": round(_pct(latencies, 0.99) * 1000, 1),
    }


def completions(opts: Options, bases: list[str], requests: list[dict[str, Any]]) -> dict[str, Any]:
    shards = [requests[p :: opts.processes] for p in range(opts.processes)]
    usage = Usage()
    seconds, results = _run_clients(opts, _client_process, lambda p: (bases, shards[p], opts.threads), usage)
    latencies = sorted(r[0] for r in results)
    accepted = sum(1 for r in results if r[1] == "accepted")
    return {
        "client_cpu_s": round(usage.client_cpu_s, 3),
        "machine_busy_s": round(usage.machine_busy_s, 3),
        "requests": len(results),
        "accepted": accepted,
        "outcomes": _count(r[1] for r in results),
        "seconds": round(seconds, 3),
        "completions_per_s": round(len(results) / seconds, 1),
        "accepted_per_s": round(accepted / seconds, 1),
        "p50_ms": round(_pct(latencies, 0.50) * 1000, 1),
        "p99_ms": round(_pct(latencies, 0.99) * 1000, 1),
    }


# the bare baseline ------------------------------------------------------------------
def _bare_process(
    conninfo: str, rows: int, hot: int, seconds: float, threads: int, barrier: Any, out: Any
) -> None:
    conns = [psycopg.connect(conninfo) for _ in range(threads)]
    results: list[tuple[float, str]] = []
    lock = threading.Lock()

    def run(conn: psycopg.Connection[Any], seed: int) -> None:
        rng, mine = random.Random(seed), []
        stop = time.perf_counter() + seconds
        while time.perf_counter() < stop:
            row = rng.randrange(hot) if rng.random() < 0.1 else rng.randrange(hot, rows)
            start = time.perf_counter()
            conn.execute("UPDATE bench_rows SET n = n + 1 WHERE id = %s", (row,))
            conn.commit()
            mine.append((time.perf_counter() - start, "ok"))
        with lock:
            results.extend(mine)

    barrier.wait()
    began, cpu = time.time(), time.process_time()
    pool = [threading.Thread(target=run, args=(c, i + os.getpid())) for i, c in enumerate(conns)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    out.put((began, time.time(), results, time.process_time() - cpu))
    for c in conns:
        c.close()


def bare(opts: Options, url: str) -> dict[str, Any]:
    conninfo = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    rows = 1000
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("CREATE TABLE bench_rows (id integer PRIMARY KEY, n bigint NOT NULL)")
        conn.execute("INSERT INTO bench_rows SELECT g, 0 FROM generate_series(0, %s) g", (rows - 1,))
    args = (conninfo, rows, opts.hot, opts.bare_seconds, opts.threads)
    seconds, results = _run_clients(opts, _bare_process, lambda _p: args)
    latencies = sorted(r[0] for r in results)
    return {
        "transactions": len(results),
        "seconds": round(seconds, 3),
        "tx_per_s": round(len(results) / seconds, 1),
        "p50_ms": round(_pct(latencies, 0.50) * 1000, 2),
        "p99_ms": round(_pct(latencies, 0.99) * 1000, 2),
    }


# helpers ----------------------------------------------------------------------------
def _pct(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def _count(items: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in items:
        out[i] = out.get(i, 0) + 1
    return out


def main() -> None:
    opts = _options()
    rng = random.Random(7)
    per_run = opts.cold + opts.hot + _SOLO
    with fresh_database(opts.url) as url, tempfile.TemporaryDirectory() as logs:
        total = per_run * len(opts.replicas) + opts.door
        print(f"seeding {total} tasks in {make_url(url).database} ...", flush=True)
        t0 = time.perf_counter()
        seed = seed_project(url, agents=16, tasks=total, hot=0)
        ready = ready_completions(seed)
        print(f"  ready in {time.perf_counter() - t0:.0f}s", flush=True)
        through_door = door(url, ready[len(ready) - opts.door :])
        print(f"through the door, one at a time: {through_door}", flush=True)
        baseline = bare(opts, url)
        print(f"bare single-row transactions: {baseline}", flush=True)
        runs: dict[str, Any] = {}
        alone: dict[str, Any] = {}
        for i, n in enumerate(opts.replicas):
            mine = ready[i * per_run : (i + 1) * per_run]
            requests = _requests(mine[:-_SOLO], opts.hot, opts.hot_requests, rng)
            with Cluster(url, n, Path(logs)) as cluster:
                if not alone:
                    alone = solo(cluster.urls[0], mine[-_SOLO:])
                    print(f"one client alone: {alone}", flush=True)
                runs[str(n)] = completions(opts, cluster.urls, requests)
                runs[str(n)]["reads"] = reads(opts, cluster.urls, mine)
            print(f"{n} replica(s): {runs[str(n)]}", flush=True)
        spread = projects(opts, seed, Path(logs), rng)
        print(f"4 replicas, 1 project vs 8 projects: {spread}", flush=True)
    one, four = runs.get("1"), runs.get("4")
    summary = {
        "clients": opts.processes * opts.threads,
        "bare": baseline,
        "solo": alone,
        "door": through_door,
        "pg_solo_p50_ms": through_door["p50_ms"],
        "replicas": runs,
        "projects": spread,
        "project_scaling": round(spread["8"]["completions_per_s"] / spread["1"]["completions_per_s"], 3),
        "pg_ratio": round(one["completions_per_s"] / baseline["tx_per_s"], 4) if one else None,
        "replica_scaling": (
            round(four["completions_per_s"] / one["completions_per_s"], 3) if one and four else None
        ),
        "p99_ms": four["p99_ms"] if four else None,
        "read_scaling": (
            round(four["reads"]["reads_per_s"] / one["reads"]["reads_per_s"], 3) if one and four else None
        ),
    }
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
