"""The completion transaction against a bare durable SQLite transaction, in one run.

1. commit_ratio: completions/s of the real completion transaction (14 predicates, Ed25519
   signature checks, publication, completion record, audit event) over bare transactions/s
   (BEGIN IMMEDIATE; one SELECT; one UPDATE; COMMIT) on the same disk with the same pragmas
   (WAL, synchronous=FULL).
2. growth_ratio: median completion latency with 100,000 tasks in the ledger over the
   median with 1,000.

Prints human lines, then a final line of JSON. Targets: commit_ratio ≥ 0.5, growth ≤ 1.5.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import insert

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from studiolo.store import schema
from tests.world import World, build_world

N_THROUGHPUT = 300
N_LATENCY = 150


def _prepared(w: World, n: int) -> list[tuple[object, ...]]:
    out = []
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


def _interleaved(
    a: list[Callable[[], float]], b: list[Callable[[], float]], block: int = 10
) -> tuple[list[float], list[float]]:
    """Run two workloads in alternating blocks so machine noise hits both alike."""
    ta: list[float] = []
    tb: list[float] = []
    while len(ta) < len(a) or len(tb) < len(b):
        ta.extend(f() for f in a[len(ta) : len(ta) + block])
        tb.extend(f() for f in b[len(tb) : len(tb) + block])
    return ta, tb


def _completion_calls(w: World, prepared: list[tuple[object, ...]]) -> list[Callable[[], float]]:
    def call(item: tuple[object, ...]) -> Callable[[], float]:
        def run() -> float:
            task, att, cand, ev = item
            t0 = time.perf_counter()
            w.complete(task, att, cand, ev)  # type: ignore[arg-type]
            return time.perf_counter() - t0

        return run

    return [call(item) for item in prepared]


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


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for sub in ("a", "small", "large"):
            (tmp / sub).mkdir()
        bare = _Bare(tmp / "bare.db")
        w = build_world(tmp / "a", clock=time.time)
        real = _completion_calls(w, _prepared(w, N_THROUGHPUT))
        t_bare, t_real = _interleaved([bare.once] * N_THROUGHPUT, real)
        bare_tps, real_tps = len(t_bare) / sum(t_bare), len(t_real) / sum(t_real)
        print(f"bare durable transactions/s: {bare_tps:,.0f}")
        print(f"completion transactions/s:   {real_tps:,.0f}")

        small = build_world(tmp / "small", clock=time.time)
        large = build_world(tmp / "large", clock=time.time)
        _fill(small, 1_000)
        _fill(large, 100_000)
        t_small, t_large = _interleaved(
            _completion_calls(small, _prepared(small, N_LATENCY)),
            _completion_calls(large, _prepared(large, N_LATENCY)),
        )
        lat_small, lat_large = statistics.median(t_small), statistics.median(t_large)
        print(f"median completion latency, 1,000 tasks:   {lat_small * 1000:.2f} ms")
        print(f"median completion latency, 100,000 tasks: {lat_large * 1000:.2f} ms")
    result = {
        "commit_ratio": round(real_tps / bare_tps, 3),
        "growth_ratio": round(lat_large / lat_small, 3),
        "bare_tps": round(bare_tps, 1),
        "completion_tps": round(real_tps, 1),
        "p50_ms_1k": round(lat_small * 1000, 3),
        "p50_ms_100k": round(lat_large * 1000, 3),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
