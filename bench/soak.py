"""A soak under faults: N `studiolo serve` replicas on one ledger, many clients, and faults.

    python bench/soak.py [--seconds 120] [--replicas 4] [--processes 4] [--workers 12]
                         [--kill-every 2.0] [--pg-restarts 3] [--sqlite]

The load is the scale tests' (tests/scale/load.py): per client process `--workers` agents
that claim, heartbeat, put blobs, submit candidates, have the verifier sign receipts and
complete (retrying a lost answer with the same request id, sometimes replaying an answered
one), and one chaos client that revokes and re-grants grants, reassigns tasks and edits
the inputs and targets. Meanwhile the fault loop, every `--kill-every` seconds, kills one
replica with SIGKILL (no shutdown: transactions cut off mid-flight), starts it again and
times how long until it answers `/healthz` (its recovery); kills overlap recoveries, but
one replica is always left answering. On PostgreSQL the ledger is a
private cluster this script starts with `initdb` in a temporary directory (never the
system's server), and `--pg-restarts` times during the run it restarts that server
(`pg_ctl restart -m immediate`: a crash, then recovery) and times until every replica
answers again. `--sqlite` runs on one SQLite file instead (replicas share it; kills only).

Afterwards the independent checker (bench/soakcheck.py, over tests/scale/checker.py: it reads
the ledger's rows and the answers the clients logged in JSONL, and never calls the door) shows: every
completion a client was told was accepted is in the ledger, once, with the answer it got;
no request id was accepted twice; every accepted completion's predicates held at its
commit point (replayed from the audit log); every chain recomputes; fences strictly
increase per task. The last line is JSON: operations/s, completion latency p50/p99 during
faults (sent while a replica or the database was down or recovering) and between them,
recovery times, and the checker's problems (none, or the run failed).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# Run as a script, bench/ is sys.path[0]: a sibling named like a stdlib module (bench/http.py)
# would shadow it. Import from the repository root instead.
sys.path[:] = [str(ROOT), *(p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench")]

from bench import soakcheck  # noqa: E402
from studiolo.faces.http.server import free_port  # noqa: E402
from tests.scale.cluster import Cluster, seed_project  # noqa: E402
from tests.scale.load import LoadPlan, run_load  # noqa: E402

_PG_BIN = ("initdb", "pg_ctl")


class PrivatePostgres:
    """A throwaway PostgreSQL cluster in a temporary directory, run as the `postgres` user
    when this process is root (initdb refuses root), on a free port of 127.0.0.1."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "pg"
        self.port = free_port()
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"
        self._as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    @staticmethod
    def available() -> bool:
        return all(shutil.which(b) for b in _PG_BIN)

    def _run(self, *argv: str) -> None:
        subprocess.run([*self._as, *argv], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def start(self) -> None:
        self.dir.mkdir()
        if self._as:
            shutil.chown(self.dir, "postgres", "postgres")
        self._run("initdb", "-D", str(self.dir), "-U", "postgres", "--auth=trust", "--no-sync")
        self._ctl("start")

    def _ctl(self, action: str, *extra: str) -> None:
        opts = f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.dir}"
        opts += " -c fsync=on -c max_connections=200"
        log = str(self.dir / "server.log")
        self._run("pg_ctl", "-D", str(self.dir), "-l", log, "-o", opts, "-w", *extra, action)

    def restart(self) -> None:
        """A crash (immediate: no checkpoint, connections cut) and the recovery after it."""
        self._ctl("restart", "-m", "immediate")

    def stop(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self._ctl("stop", "-m", "immediate")


class Faults:
    """The fault loop: SIGKILL a replica and restart it, now and then crash-restart the
    database. A killed replica recovers in a thread of its own, so the next kill need not
    wait for it; a kill always leaves one replica answering (unless there is only one). A
    database restart waits for every replica's recovery first. Every fault is a window
    (start, end = everything it took down answers again) and a recovery time."""

    def __init__(
        self,
        cluster: Cluster,
        pg: PrivatePostgres | None,
        kill_every: float,
        pg_restarts: int,
        seconds: float,
    ) -> None:
        self.cluster, self.pg, self.kill_every = cluster, pg, kill_every
        self.rng = random.Random(7)
        spacing = seconds / (pg_restarts + 1)
        self._pg_at = [spacing * (i + 1) for i in range(pg_restarts)] if pg is not None else []
        self.windows: list[tuple[float, float]] = []
        self.recovery: dict[str, list[float]] = {"replica_kill": [], "pg_restart": []}
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="faults", daemon=True)
        self._lock = threading.Lock()
        self._recovering: set[int] = set()  # replicas killed and not yet answering
        self._recoveries: list[threading.Thread] = []

    def start(self) -> None:
        self._started = time.monotonic()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(300)

    def _run(self) -> None:
        while not self._stop.wait(self.kill_every):
            if self._pg_at and time.monotonic() - self._started >= self._pg_at[0]:
                self._pg_at.pop(0)
                self._join_recoveries()
                self._fault("pg_restart", self._restart_pg)
                continue
            with self._lock:
                up = [i for i in range(len(self.cluster.replicas)) if i not in self._recovering]
                if not up or (len(self.cluster.replicas) > 1 and len(up) < 2):
                    continue
                victim = self.rng.choice(up)
                self._recovering.add(victim)
            thread = threading.Thread(target=self._kill_and_recover, args=(victim,), daemon=True)
            thread.start()
            self._recoveries.append(thread)
        self._join_recoveries()

    def _join_recoveries(self) -> None:
        for thread in self._recoveries:
            thread.join(300)
        self._recoveries.clear()

    def _kill_and_recover(self, index: int) -> None:
        replica = self.cluster.replicas[index]

        def restart() -> None:
            replica.kill()
            replica.launch()
            replica.wait_healthy(180.0)

        try:
            self._fault("replica_kill", restart)
        finally:
            with self._lock:
                self._recovering.discard(index)

    def _fault(self, kind: str, act: Any) -> None:
        began, t0 = time.time(), time.monotonic()
        try:
            act()
        except Exception as exc:  # a fault that did not recover is a finding, not a crash
            self.errors.append(f"{kind}: {exc!r}")
            return
        self.recovery[kind].append(time.monotonic() - t0)
        self.windows.append((began, time.time()))

    def _restart_pg(self) -> None:
        assert self.pg is not None
        self.pg.restart()
        for replica in self.cluster.replicas:
            replica.wait_healthy(180.0)  # /healthz reads the ledger: the pool reconnected

    def during(self, at: float) -> bool:
        return any(a <= at <= b for a, b in self.windows)


@contextlib.contextmanager
def ledger(sqlite: bool, root: Path) -> Iterator[tuple[str, PrivatePostgres | None]]:
    if sqlite:
        yield f"sqlite:///{root / 'soak.db'}", None
        return
    if not PrivatePostgres.available():
        raise SystemExit("initdb and pg_ctl are needed for the PostgreSQL soak (or pass --sqlite)")
    pg = PrivatePostgres(root)
    pg.start()
    try:
        yield pg.url, pg
    finally:
        pg.stop()


def _pct(values: list[float], q: int) -> float | None:
    if len(values) < 2:
        return round(values[0], 1) if values else None
    return round(statistics.quantiles(values, n=100, method="inclusive")[q - 1], 1)


def soak(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    plan = LoadPlan(args.processes, args.workers, 1, args.seconds, args.iterations, seed=args.seed)
    with ledger(args.sqlite, root) as (url, pg):
        seed = seed_project(url, agents=max(8, plan.clients // 2), tasks=args.tasks, hot=6)
        with Cluster(url, args.replicas, root) as cluster:
            seed.replicas = cluster.urls
            faults = Faults(
                cluster, pg, args.kill_every, 0 if args.sqlite else args.pg_restarts, args.seconds
            )
            faults.start()
            began = time.monotonic()
            answers, stats = run_load(seed, plan, root)
            elapsed = time.monotonic() - began
            faults.stop()
        found = soakcheck.check(url, root)  # the ledger's tables and the clients' JSONL logs
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            for log in root.glob("*.jsonl"):
                shutil.copy(log, args.keep / log.name)
    return report(args, found, answers, stats, faults, elapsed)


def report(
    args: argparse.Namespace, found: Any, answers: list[dict[str, Any]], stats: Counter[str], faults: Faults,
    elapsed: float,
) -> dict[str, Any]:  # fmt: skip
    done = sum(n for k, n in stats.items() if "error" not in k)
    lost = sum(n for k, n in stats.items() if "transport_error" in k)  # no answer (a replica down)
    timed = [a for a in answers if "ms" in a]
    span = max(a["at"] for a in timed) - min(a["at"] for a in timed) if len(timed) > 1 else 0.0
    window = max(args.seconds, span)  # the clients' deadline, or longer if they ran over it
    during = [a["ms"] for a in timed if faults.during(a["at"])]
    between = [a["ms"] for a in timed if not faults.during(a["at"])]
    recovery = {k: v for k, v in faults.recovery.items() if v}
    return {
        "ops_per_s": round(done / window, 1),  # answered operations over the load's window
        "ops": done,
        "unanswered_ops": lost,  # the connection failed: retried elsewhere (completions) or dropped
        "refused_ops": sum(n for k, n in stats.items() if "error" in k) - lost,  # the door said no
        "completions_accepted": found.accepted,
        "completions_refused": found.rejected,
        "p50_ms_between_faults": _pct(between, 50),
        "p99_ms_between_faults": _pct(between, 99),
        "p50_ms_during_faults": _pct(during, 50),
        "p99_ms_during_faults": _pct(during, 99),
        "replica_kills": len(faults.recovery["replica_kill"]),
        "pg_restarts": len(faults.recovery["pg_restart"]),
        "recovery_s": {
            k: {"mean": round(statistics.fmean(v), 2), "max": round(max(v), 2)} for k, v in recovery.items()
        },
        "fault_errors": faults.errors[:5],
        "problems": found.problems,
        "events": found.events,
        "ledger": "sqlite" if args.sqlite else "postgresql",
        "replicas": args.replicas,
        "clients": args.processes * (args.workers + 1),
        "seconds": round(elapsed, 1),  # setup of the client processes included
        "load_window_s": round(window, 1),
        "loadavg": Path("/proc/loadavg").read_text().split()[:3],
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--replicas", type=int, default=4)
    parser.add_argument("--processes", type=int, default=4, help="client processes")
    parser.add_argument("--workers", type=int, default=12, help="agents per client process (+1 chaos client)")
    parser.add_argument("--iterations", type=int, default=10_000, help="per agent, at most")
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--kill-every", type=float, default=2.0, help="seconds between faults")
    parser.add_argument("--pg-restarts", type=int, default=3)
    parser.add_argument("--sqlite", action="store_true", help="one SQLite file instead of PostgreSQL")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="copy the clients' answer logs (JSONL) here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="studiolo-soak-") as tmp:
        root = Path(tmp)
        if not args.sqlite and os.geteuid() == 0:
            os.chmod(root, 0o755)  # the postgres user makes its cluster inside
        result = soak(args, root)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
