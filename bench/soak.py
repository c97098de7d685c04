"""A soak under faults: N `studiolo serve` replicas on one ledger, many clients, and faults.

    python bench/soak.py [--seconds 120] [--replicas 4] [--processes 2] [--clients 26]
                         [--readers 3] [--kill-every 2.0] [--pg-restarts 3] [--sqlite] [--cold]
    python bench/soak.py --probe-restarts 3     # only: kill → /healthz, cold and warm

The load is bench/soakload.py: `--processes` asyncio client processes of `--clients` workers
each (claims, then mostly heartbeats and reads, now and then a blob, a candidate, a signed
receipt and a completion, retried with the same request id and sometimes replayed) plus one
chaos client each (revocations, reassignments, edits), and `--readers` event-stream readers;
every client fails over to another replica at once and logs every answer. The fault loop
(bench/soakfaults.py), every `--kill-every` seconds, waits for a completion in flight and
kills its replica with SIGKILL (no shutdown: transactions cut off mid-flight), then restarts
it from a warm spare (`--cold`: a fresh `studiolo serve`) and times kill → `/healthz`; kills
overlap recoveries, but one replica is always left answering. On PostgreSQL the ledger is a
private cluster this script starts with `initdb` in a temporary directory (never the
system's server), and `--pg-restarts` times during the run it restarts that server
(`pg_ctl restart -m immediate`: a crash, then recovery) and times until every replica
answers again. `--sqlite` runs on one SQLite file instead (kills only).

Afterwards the independent checker (bench/soakcheck.py, over tests/scale/checker.py: it reads
the ledger's rows and the answers the clients logged in JSONL, and never calls the door) shows:
every completion a client was told was accepted is in the ledger, once, with the answer it
got; every claim, heartbeat, candidate, receipt and blob a client was told of is there; no
request id was applied twice; what the client of each completion killed in flight saw;
every accepted completion's predicates held at its commit point (replayed from the audit
log); every chain recomputes; fences strictly increase per task; every reader saw its
project's events in order without gaps or duplicates. The last line is JSON: operations/s,
p50/p99 latency of every answered operation during faults (sent while a replica or the
database was down or recovering) and between them, recovery times per kind of fault,
counts, CPU per operation (clients, replicas) and the checker's problems (none, or the run
failed).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
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
from bench.soakfaults import Faults, Inflight, WarmReplica  # noqa: E402
from bench.soakload import SoakPlan, run_load  # noqa: E402
from studiolo.faces.http.server import free_port  # noqa: E402
from tests.scale.cluster import Cluster, seed_project  # noqa: E402

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


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def soak(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    plan = SoakPlan(
        args.processes, args.clients, args.readers, args.seconds, args.finish, args.seed, drain=args.drain
    )
    with ledger(args.sqlite, root) as (url, pg):
        seed = seed_project(url, agents=max(8, args.processes * args.clients // 2), tasks=args.tasks, hot=6)
        cluster = Cluster(url, 0, root)
        cluster.replicas = [
            WarmReplica(url, root / f"replica-{i}.log", not args.cold) for i in range(args.replicas)
        ]
        inflight = Inflight()
        cpu0 = _cpu_children()
        with cluster:
            seed.replicas = cluster.urls
            restart = pg.restart if pg is not None and not args.sqlite else None
            faults = Faults(cluster, inflight, args.kill_every, restart, args.pg_restarts, args.seconds)
            plan = dataclasses.replace(plan, signal_port=inflight.port)
            faults.start()
            began = time.monotonic()
            run_load(seed, plan, root)
            elapsed = time.monotonic() - began
            faults.stop()
        inflight.close()
        cpu = _cpu_children() - cpu0  # the clients, and the replicas that ended (all of them by now)
        (root / "kills.jsonl").write_text("".join(json.dumps(k) + "\n" for k in faults.kills))
        found = soakcheck.check(url, root)  # the ledger's tables and the clients' JSONL logs
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            for log in [*root.glob("*.jsonl"), *root.glob("*.log")]:
                shutil.copy(log, args.keep / log.name)
        client_cpu = sum(float(x["cpu_s"]) for x in soakcheck.read_records(root, "cpu"))
        answers = soakcheck.read_answers(root)
    return report(args, plan, found, answers, faults, elapsed, cpu, client_cpu)


def report(
    args: argparse.Namespace, plan: SoakPlan, found: soakcheck.SoakFindings, answers: list[dict[str, Any]],
    faults: Faults, elapsed: float, cpu: float, client_cpu: float,
) -> dict[str, Any]:  # fmt: skip
    ops = [a for a in answers if a.get("op") not in (None, "stream") and "ms" in a]
    answered = [a for a in ops if a["outcome"] != "no_answer"]
    start = min((a["at"] for a in ops), default=0.0)
    end = max((a["at"] for a in ops), default=0.0)
    window = max(end - start, 1e-9)
    during = [a["ms"] for a in answered if faults.during(a["at"])]
    between = [a["ms"] for a in answered if not faults.during(a["at"])]
    done = [a for a in answered if a["op"] == "complete"]
    recovery = {k: v for k, v in faults.recovery.items() if v}
    by_op = Counter(f"{a['op']}.{a['outcome']}" for a in ops)
    return {
        "ops_per_s": round(len(answered) / window, 1),  # answered operations over the load's window
        "ops": len(answered),
        "ok_ops": sum(1 for a in answered if a["outcome"] in ("ok", "accepted", "replay")),
        "refused_ops": sum(1 for a in answered if a["outcome"] in ("refused", "rejected")),
        "unanswered_tries": sum(1 for a in ops if a["outcome"] == "no_answer"),  # each then failed over
        "by_op": dict(sorted(by_op.items())),
        "completions_accepted": found.accepted,
        "completions_refused": found.rejected,
        "p50_ms_between_faults": _pct(between, 50),
        "p99_ms_between_faults": _pct(between, 99),
        "p50_ms_during_faults": _pct(during, 50),
        "p99_ms_during_faults": _pct(during, 99),
        "complete_p50_ms": _pct([a["ms"] for a in done], 50),
        "complete_p99_ms": _pct([a["ms"] for a in done], 99),
        "replica_kills": len(faults.kills),
        "kills_aimed_at_open_completions": found.kills,
        "pg_restarts": len(faults.recovery["pg_restart"]),
        "recovery_s": {
            k: {
                "n": len(v),
                "mean": round(statistics.fmean(v), 2),
                "p50": _pct(v, 50),
                "max": round(max(v), 2),
            }
            for k, v in recovery.items()
        },
        "streams": found.streams,
        "fault_errors": faults.errors[:5],
        "problems": found.problems,
        "events": found.events,
        "ledger": "sqlite" if args.sqlite else "postgresql",
        "replicas": args.replicas,
        "warm_restarts": not args.cold,
        "clients": plan.total_clients,
        "cpu_ms_per_op": {
            "clients": round(1000 * client_cpu / max(len(answered), 1), 2),
            "replicas": round(1000 * max(cpu - client_cpu, 0.0) / max(len(answered), 1), 2),
        },
        "seconds": round(elapsed, 1),
        "load_window_s": round(window, 1),
        "loadavg": Path("/proc/loadavg").read_text().split()[:3],
    }


def probe_restarts(n: int, root: Path) -> dict[str, Any]:
    """Kill → `/healthz` of one replica on a SQLite ledger, `n` times cold and `n` times warm."""
    url = f"sqlite:///{root / 'probe.db'}"
    seed_project(url, agents=1, tasks=1, hot=0)
    out: dict[str, Any] = {"loadavg_start": Path("/proc/loadavg").read_text().split()[:3]}
    for warm in (False, True):
        replica = WarmReplica(url, root / "probe.log", warm)
        replica.start()
        times = []
        for _ in range(n):
            time.sleep(1.0)  # the spare imports
            t0 = time.monotonic()
            replica.kill()
            replica.launch()
            replica.wait_healthy(120.0)
            times.append(round(time.monotonic() - t0, 2))
        replica.stop()
        out["warm_s" if warm else "cold_s"] = times
    out["loadavg_end"] = Path("/proc/loadavg").read_text().split()[:3]
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--replicas", type=int, default=4)
    parser.add_argument("--processes", type=int, default=2, help="client processes")
    parser.add_argument("--clients", type=int, default=26, help="workers per process (+1 chaos client)")
    parser.add_argument("--readers", type=int, default=3, help="event-stream readers")
    parser.add_argument("--finish", type=float, default=0.12, help="chance per step of finishing a task")
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--kill-every", type=float, default=2.0, help="seconds between faults")
    parser.add_argument("--pg-restarts", type=int, default=3)
    parser.add_argument("--sqlite", action="store_true", help="one SQLite file instead of PostgreSQL")
    parser.add_argument("--cold", action="store_true", help="restart replicas without a warm spare")
    parser.add_argument("--drain", type=float, default=20.0, help="seconds readers read after the load")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="copy the clients' answer logs (JSONL) here")
    parser.add_argument("--probe-restarts", type=int, default=0, help="only time N cold and N warm restarts")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="studiolo-soak-") as tmp:
        root = Path(tmp)
        if args.probe_restarts:
            result = probe_restarts(args.probe_restarts, root)
        else:
            if not args.sqlite and os.geteuid() == 0:
                os.chmod(root, 0o755)  # the postgres user makes its cluster inside
            result = soak(args, root)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
