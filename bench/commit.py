"""The completion transaction against a bare durable SQLite transaction, the a2a-sdk peer and
its own SQL floor, in one run.

1. commit_ratio: completions/s of the real completion transaction (14 predicates, receipt
   trust, publication, signed completion record, audit event) over bare transactions/s
   (BEGIN IMMEDIATE; one SELECT; one UPDATE; COMMIT) on the same disk with the same pragmas
   (WAL, synchronous=FULL), one operation at a time.
2. peer_ratio: completions/s over the official a2a-sdk `DatabaseTaskStore.save` saves/s
   (a WORKING task saved COMPLETED with one artifact; aiosqlite, WAL, synchronous=FULL),
   with the same concurrency on both sides: `CLIENTS` (8) clients at once, each making
   `PER_CLIENT` operations one after another per block. Studiolo's clients are threads
   calling the door (`Coordinator.complete`); the peer's are coroutines on its one store
   (`asyncio.gather`), its own API being async.
   peer_ratio_sequential: the same ratio with one operation at a time on both sides.
   Why the concurrent figure is `peer_ratio`: a service's completions/s is what it sustains
   for the clients it serves, and the ledger is built for concurrent writers (a process's
   concurrent writes share one transaction and one fsync, `store/group.py`). One at a time,
   every operation pays its own fsync and the ratio is bounded by it; that figure is
   printed and reported too (`peer_ratio_sequential`), never dropped.
3. sql_floor_ratio: mean completion time over the mean time of the very statements a
   completion runs (logged with their parameters from a twin ledger) replayed raw through
   the stdlib `sqlite3` module on a copy of that ledger taken before they ran.
4. growth_ratio: median completion latency with 100,000 tasks in the ledger over the
   median with 1,000.

The first six workloads (bare, completion, peer, floor, concurrent completion, concurrent
peer) run interleaved in `ROUNDS` rounds (ten sequential operations of each, then one
concurrent block of each), so machine and disk noise hit them alike. Every operation pays
one durable commit (an fsync of the WAL; one per group of concurrent completions), so when
the disk is slow the sequential wall-clock ratios drift towards 1; the run also reports
CPU time per operation (`time.process_time`, all threads) and the ratios on CPU:
`peer_cpu_ratio` (the peer's CPU per save over a completion's), its concurrent twin
`peer_cpu_ratio_concurrent`, and `sql_floor_cpu_ratio`.
Prints human lines, then a final line of JSON.
Targets: commit_ratio ≥ 0.5, peer_ratio ≥ 3, sql_floor_ratio ≤ 2.5, growth_ratio ≤ 1.5.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sqlalchemy import insert

# The repository root, not this directory: bench/a2a.py would shadow the a2a-sdk package.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent), *(p for p in sys.path if Path(p or ".").resolve() != _HERE)]

from bench._floor import FSYNC, Floor, Recorder, snapshot  # noqa: E402
from bench._peer import PeerStore  # noqa: E402
from studiolo.core.model import Attempt, Candidate, Task  # noqa: E402
from studiolo.core.predicate import CompletionRequest  # noqa: E402
from studiolo.service import make_request  # noqa: E402
from studiolo.store import schema  # noqa: E402
from tests.world import World, build_world  # noqa: E402

N_THROUGHPUT = 300
N_LATENCY = 150
ROUNDS = 30  # interleaving rounds: 10 sequential operations of each kind per round
CLIENTS = 8  # concurrent clients on each side
PER_CLIENT = 4  # operations each client makes, one after another, in a concurrent block
N_CONCURRENT = ROUNDS * CLIENTS * PER_CLIENT

Prepared = tuple[Task, Attempt, Candidate, list[str]]


def _prepared(w: World, n: int) -> list[Prepared]:
    out: list[Prepared] = []
    for i in range(n):
        task = w.new_task(f"bench {i}", scope=["src/**"])
        att = w.coord.claim(w.agent, task.id, 3600)
        cand = w.candidate(att, {f"src/out/{i}.txt": b"42\n"}, deps={"src/input.txt": 1})
        out.append((task, att, cand, [w.receipt(cand).id]))
    return out


class _Bare:
    """One read and one update in a durable transaction: the floor any commit pays."""

    def __init__(self, path: Path) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None)
        for pragma in ("journal_mode=WAL", "synchronous=FULL", "foreign_keys=ON"):
            self.conn.execute(f"PRAGMA {pragma}")
        self.conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
        self.conn.executemany("INSERT INTO t VALUES (?, 0)", [(i,) for i in range(1000)])
        self.i = 0

    def once(self) -> float:
        t0 = time.perf_counter()
        self.conn.execute("BEGIN IMMEDIATE")
        (v,) = self.conn.execute("SELECT v FROM t WHERE id = ?", (self.i % 1000,)).fetchone()
        self.conn.execute("UPDATE t SET v = ? WHERE id = ?", (v + 1, self.i % 1000))
        self.conn.execute("COMMIT")
        self.i += 1
        return time.perf_counter() - t0


def _interleaved(*workloads: list[Callable[[], float]], rounds: int = ROUNDS) -> list[list[float]]:
    """Run the workloads in alternating blocks (each split into `rounds` equal blocks: ten
    sequential operations, or one concurrent block) so machine noise hits them alike."""
    times: list[list[float]] = [[] for _ in workloads]
    blocks = [-(-len(w) // rounds) for w in workloads]
    while any(len(t) < len(w) for t, w in zip(times, workloads, strict=True)):
        for t, w, block in zip(times, workloads, blocks, strict=True):
            t.extend(f() for f in w[len(t) : len(t) + block])
    return times


class _Cpu:
    """Wraps timed calls to also sum the process's CPU time (every thread: the peer's
    aiosqlite worker thread included) spent in them."""

    def __init__(self) -> None:
        self.total = 0.0

    def wrap(self, calls: list[Callable[[], float]]) -> list[Callable[[], float]]:
        def timed(f: Callable[[], float]) -> Callable[[], float]:
            def run() -> float:
                c0 = time.process_time()
                wall = f()
                self.total += time.process_time() - c0
                return wall

            return run

        return [timed(f) for f in calls]


class _Clients:
    """`CLIENTS` threads completing through the door at once. A block: each client completes
    `PER_CLIENT` prepared tasks one after another; the block's wall-clock time."""

    def __init__(self, w: World, prepared: list[Prepared]) -> None:
        self.coord, self.agent = w.coord, w.agent
        self.requests = [
            make_request(
                request_id=f"conc-{n}",
                task_id=task.id,
                attempt_id=att.id,
                fence=att.fence,
                contract_hash=task.contract_hash,
                candidate_id=cand.id,
                evidence=ev,
            )
            for n, (task, att, cand, ev) in enumerate(prepared)
        ]
        self.pool = ThreadPoolExecutor(CLIENTS)
        list(self.pool.map(lambda _: None, range(CLIENTS)))  # the threads exist before timing

    def _client(self, requests: list[CompletionRequest]) -> None:
        for request in requests:
            if self.coord.complete(self.agent, request).replay:
                raise AssertionError("a prepared completion was replayed")

    def _block(self, start: int) -> float:
        size = CLIENTS * PER_CLIENT
        chunks = [self.requests[i : i + PER_CLIENT] for i in range(start, start + size, PER_CLIENT)]
        t0 = time.perf_counter()
        for future in [self.pool.submit(self._client, chunk) for chunk in chunks]:
            future.result()
        return time.perf_counter() - t0

    def calls(self) -> list[Callable[[], float]]:
        size = CLIENTS * PER_CLIENT
        return [functools.partial(self._block, start) for start in range(0, len(self.requests), size)]


def _one(w: World, item: Prepared) -> None:
    task, att, cand, ev = item
    w.complete(task, att, cand, ev)


def _completion_calls(w: World, prepared: list[Prepared]) -> list[Callable[[], float]]:
    def call(item: Prepared) -> Callable[[], float]:
        def run() -> float:
            t0 = time.perf_counter()
            _one(w, item)
            return time.perf_counter() - t0

        return run

    return [call(item) for item in prepared]


def _floor_calls(tmp: Path, n: int) -> tuple[list[Callable[[], float]], int]:
    """A twin ledger's completions, logged, and their replay on a copy taken before them."""
    twin = build_world(tmp / "twin", clock=time.time)
    prepared = _prepared(twin, n)
    recorder = Recorder(twin.coord.store)
    snapshot(twin.coord.store, tmp / "floor.db")
    logs = [recorder.record(lambda item=item: _one(twin, item)) for item in prepared]
    twin.coord.store.dispose()
    return Floor(tmp / "floor.db").calls(logs), sum(sql is not FSYNC for sql, _ in logs[0])


def _fill(w: World, total: int) -> None:
    """Bulk-load filler tasks (and their attempts) so the ledger holds `total` tasks."""
    have = w.coord.store.read(lambda tx: tx.work.count_tasks())
    template = w.coord.task_view(w.admin, w.new_task("template", scope=["src/**"]).id).task
    contract = json.dumps(template.contract.to_json(), sort_keys=True)
    rows = [
        {
            "id": f"tsk_fill{i:012d}",
            "project_id": w.project_id,
            "title": f"filler {i}",
            "description": "",
            "contract": contract,
            "contract_hash": template.contract_hash,
            "status": "open",
            "current_attempt_id": None,
            "fence": 0,
            "created_at": 0.0,
            "completed_at": None,
        }
        for i in range(max(0, total - have - 1))
    ]
    with w.coord.store.engine.begin() as conn:
        for start in range(0, len(rows), 10_000):
            conn.execute(insert(schema.tasks), rows[start : start + 10_000])


def _throughput(tmp: Path) -> dict[str, float]:
    bare = _Bare(tmp / "bare.db")
    peer = PeerStore(tmp / "peer.db", N_THROUGHPUT)
    peer_c = PeerStore(tmp / "peer-concurrent.db", N_CONCURRENT)
    floor, statements = _floor_calls(tmp, N_THROUGHPUT)
    w = build_world(tmp / "a", clock=time.time)
    real = _completion_calls(w, _prepared(w, N_THROUGHPUT))
    wc = build_world(tmp / "c", clock=time.time)
    clients = _Clients(wc, _prepared(wc, N_CONCURRENT))
    groups0 = wc.coord.store.backend.group.groups
    cpu = {name: _Cpu() for name in ("real", "peer", "floor", "real_c", "peer_c")}
    t_bare, t_real, t_peer, t_floor, t_real_c, t_peer_c = _interleaved(
        [bare.once] * N_THROUGHPUT,
        cpu["real"].wrap(real),
        cpu["peer"].wrap(peer.calls()),
        cpu["floor"].wrap(floor),
        cpu["real_c"].wrap(clients.calls()),
        cpu["peer_c"].wrap(peer_c.concurrent_calls(CLIENTS, PER_CLIENT)),
    )
    peer.close()
    peer_c.close()
    groups = wc.coord.store.backend.group.groups - groups0
    rate = {
        name: n / sum(t)
        for name, t, n in (
            ("bare", t_bare, N_THROUGHPUT),
            ("real", t_real, N_THROUGHPUT),
            ("peer", t_peer, N_THROUGHPUT),
            ("real_c", t_real_c, N_CONCURRENT),
            ("peer_c", t_peer_c, N_CONCURRENT),
        )
    }
    n_ops = {"real_c": N_CONCURRENT, "peer_c": N_CONCURRENT}
    cpu_ms = {name: c.total / n_ops.get(name, N_THROUGHPUT) * 1000 for name, c in cpu.items()}
    mean_ms = {"real": statistics.mean(t_real) * 1000, "floor": statistics.mean(t_floor) * 1000}
    _print_throughput(rate, cpu_ms, mean_ms, statements, N_CONCURRENT / groups)
    sequential = rate["real"] / rate["peer"]
    concurrent = rate["real_c"] / rate["peer_c"]
    return {
        "peer_ratio": round(concurrent, 3),
        "peer_ratio_sequential": round(sequential, 3),
        "commit_ratio": round(rate["real"] / rate["bare"], 3),
        "sql_floor_ratio": round(mean_ms["real"] / mean_ms["floor"], 3),
        "peer_cpu_ratio": round(cpu_ms["peer"] / cpu_ms["real"], 3),
        "peer_cpu_ratio_concurrent": round(cpu_ms["peer_c"] / cpu_ms["real_c"], 3),
        "sql_floor_cpu_ratio": round(cpu_ms["real"] / cpu_ms["floor"], 3),
        "clients": CLIENTS,
        "bare_tps": round(rate["bare"], 1),
        "peer_saves_per_s": round(rate["peer"], 1),
        "completion_tps": round(rate["real"], 1),
        "peer_saves_per_s_concurrent": round(rate["peer_c"], 1),
        "completion_tps_concurrent": round(rate["real_c"], 1),
        "completions_per_group": round(N_CONCURRENT / groups, 2),
        "completion_statements": statements,
        "completion_ms": round(mean_ms["real"], 3),
        "floor_ms": round(mean_ms["floor"], 3),
        "completion_cpu_ms": round(cpu_ms["real"], 3),
        "peer_cpu_ms": round(cpu_ms["peer"], 3),
        "floor_cpu_ms": round(cpu_ms["floor"], 3),
        "completion_cpu_ms_concurrent": round(cpu_ms["real_c"], 3),
        "peer_cpu_ms_concurrent": round(cpu_ms["peer_c"], 3),
    }


def _print_throughput(
    rate: dict[str, float],
    cpu_ms: dict[str, float],
    mean_ms: dict[str, float],
    statements: int,
    per_group: float,
) -> None:
    print("one operation at a time:")
    print(f"  bare durable transactions/s:       {rate['bare']:,.0f}")
    print(f"  a2a-sdk DatabaseTaskStore.save/s:  {rate['peer']:,.0f}  (CPU {cpu_ms['peer']:.3f} ms each)")
    print(f"  completion transactions/s:         {rate['real']:,.0f}  (CPU {cpu_ms['real']:.3f} ms each)")
    print(
        f"  mean completion {mean_ms['real']:.3f} ms; its {statements} statements replayed raw"
        f" through sqlite3 {mean_ms['floor']:.3f} ms (CPU {cpu_ms['floor']:.3f} ms)"
    )
    print(f"{CLIENTS} concurrent clients, {PER_CLIENT} operations each per block:")
    print(f"  a2a-sdk saves/s (asyncio.gather):  {rate['peer_c']:,.0f}  (CPU {cpu_ms['peer_c']:.3f} ms each)")
    print(
        f"  completions/s (threads, the door): {rate['real_c']:,.0f}  (CPU {cpu_ms['real_c']:.3f} ms each;"
        f" {per_group:.2f} completions per group commit)"
    )


def _growth(tmp: Path) -> dict[str, float]:
    small = build_world(tmp / "small", clock=time.time)
    large = build_world(tmp / "large", clock=time.time)
    _fill(small, 1_000)
    _fill(large, 100_000)
    t_small, t_large = _interleaved(
        _completion_calls(small, _prepared(small, N_LATENCY)),
        _completion_calls(large, _prepared(large, N_LATENCY)),
        rounds=N_LATENCY // 10,
    )
    lat_small, lat_large = statistics.median(t_small), statistics.median(t_large)
    print(f"median completion latency, 1,000 tasks:   {lat_small * 1000:.2f} ms")
    print(f"median completion latency, 100,000 tasks: {lat_large * 1000:.2f} ms")
    return {
        "growth_ratio": round(lat_large / lat_small, 3),
        "p50_ms_1k": round(lat_small * 1000, 3),
        "p50_ms_100k": round(lat_large * 1000, 3),
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for sub in ("a", "c", "twin", "small", "large"):
            (tmp / sub).mkdir()
        result = _throughput(tmp) | _growth(tmp)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
