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
gap is bisected while the budget lasts. Setup (principals, grants, tasks, first claims) goes
through the door in this process on the same ledger; it is not timed. The last line is JSON:
{"fleet_agents": N, ...}.

The load generator runs in this process on uvloop: one scheduler for every agent, requests as
bytes built ahead, responses parsed no further than the status line and Content-Length, JSON
decoded only where the cycle needs a field, event streams counted in bulk (`_fleet_step.py`,
`_fleet_client.py`). Its CPU is printed next to the server's (`loadgen_cpu_cores`, and per
request sent `loadgen_cpu_ms_per_request`, the streams' share included), with how late its
own schedule ran (`generator_lag_p99_ms`); its cyclic collector is off during a step (a full
collection would stall it, and every answer then in flight would be measured late). Answers
still owed `--drain` s after a step's end count as failures. `--null-server` runs the same
generator against a canned-answer server (`_null_server.py`) with made-up agents: the
generator's own cost, without Studiolo.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent  # off the path: bench/http.py would shadow `http`
sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import uvloop  # noqa: E402

from bench._fleet_client import Conn, HttpError  # noqa: E402
from bench._fleet_setup import Fleet, NullFleet, _SetupStore  # noqa: E402
from bench._fleet_step import Step  # noqa: E402
from studiolo.faces.http.server import free_port  # noqa: E402
from studiolo.service import Coordinator  # noqa: E402
from studiolo.settings import Settings  # noqa: E402

HEARTBEAT_P99_MS = 100.0
COMPLETION_P99_MS = 500.0


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


def run_step(
    fleet: Fleet | NullFleet, n: int, port: int, server: int, args: argparse.Namespace
) -> dict[str, Any]:
    t0 = time.perf_counter()
    fleet.grow(n)
    args.after = fleet.last_event()
    setup = time.perf_counter() - t0
    step = Step(fleet.agents[:n], port, args, seed=n)
    gc.collect()
    gc.freeze()  # the ledger's, the fleet's and the modules' objects: no collection walks them again
    wall0, mine0, srv0 = time.perf_counter(), os.times(), cpu_seconds(server)
    # No cyclic collection in the generator during a step: at 10,000 agents its full ones
    # took 83-117 ms, every request then in flight measured late by as much. The step's
    # garbage (bounded by its ~50 s) waits for the collection after it.
    gc.disable()
    try:
        tally = uvloop.run(step.run())
    finally:
        gc.enable()
    wall, times = time.perf_counter() - wall0, os.times()
    user, system = times.user - mine0.user, times.system - mine0.system
    mine = user + system
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
        # its own timers alone (the lag above also counts an agent's wait for its last answer)
        "scheduler_lag_p99_ms": round(pct(lat.pop("scheduler_lag", []), 99), 1),
        "scheduler_longest_tick_ms": round(step.sched.longest_tick * 1000, 1),
        "generator_bugs": [repr(e) for e in step.sched.errors[:5]],
        "heartbeats": len(hb),
        "heartbeats_owed": tally.owed_heartbeats,
        "completions": len(done),
        "streams": len(fleet.agents[: n : args.stream_every]),
        "stream_events": tally.events_seen,
        "errors": sum(tally.errors.values()),
        "error_kinds": dict(tally.errors),
        "warmup_failures": dict(tally.warmup_failures),
        "error_causes": dict(tally.causes),
        "error_samples": tally.samples,
        "requests_per_s": round(sum(map(len, lat.values())) / args.window, 1),
        "server_cpu_cores": round((cpu_seconds(server) - srv0) / wall, 2),
        "server_cpu_ms_per_agent_s": round((cpu_seconds(server) - srv0) / wall * 1000 / n, 3),
        "loadgen_cpu_cores": round(mine / wall, 3),
        "loadgen_cpu_ms_per_request": round(mine * 1000 / max(1, tally.sent), 3),
        "loadgen_window_cpu_ms_per_request": round(tally.window_cpu_s * 1000 / max(1, tally.window_sent), 3),
        "loadgen_system_share": round(system / mine, 2) if mine else 0.0,  # the kernel's TCP, mostly
        "loadgen_requests_sent": tally.sent,
        "loadgen_open_fds_max": tally.open_fds,
        "load_avg_1m": os.getloadavg()[0],
        "setup_s": round(setup, 1),
        "step_s": round(wall, 1),
    }
    out["ok"] = bool(
        out["errors"] == 0
        and not step.sched.errors
        and hb
        and done
        and len(hb) >= 0.95 * tally.owed_heartbeats
        and out["heartbeat_p99_ms"] <= HEARTBEAT_P99_MS
        and out["completion_p99_ms"] <= COMPLETION_P99_MS
    )
    return out


def search(
    fleet: Fleet | NullFleet, port: int, server: int, args: argparse.Namespace
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


def raise_open_files(want: int = 1 << 16) -> int:
    """Lift this process's open-file limit (a connection is a file; the server, started after
    this, inherits it): to `want` where allowed (root), else to the hard limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), max(hard, want)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def _wait_ready(proc: subprocess.Popen[bytes], port: int) -> subprocess.Popen[bytes]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the server exited")
        try:
            asyncio.run(Conn("127.0.0.1", port, "127.0.0.1", "-").call("GET", "/healthz"))
            return proc
        except (OSError, HttpError):
            time.sleep(0.2)
    proc.kill()  # not left behind
    proc.wait()
    raise RuntimeError("the server did not start")


def start_server(url: str, port: int, workers: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "STUDIOLO_DATABASE_URL": url}
    argv = [sys.executable, "-c", "from studiolo.faces.cli import main; main()", "serve", "--port", str(port)]
    if workers > 1:
        argv += ["--workers", str(workers)]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return _wait_ready(proc, port)


def start_null_server(port: int, events_per_s: float) -> subprocess.Popen[bytes]:
    code = "from bench._null_server import main; main()"
    argv = [sys.executable, "-c", code, "--port", str(port), "--events-per-s", str(events_per_s)]
    proc = subprocess.Popen(argv, cwd=_HERE.parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return _wait_ready(proc, port)


def _arguments() -> argparse.Namespace:
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
    ap.add_argument("--drain", type=float, default=30, help="seconds to wait for answers after a step")
    ap.add_argument("--stream-every", type=int, default=10)
    ap.add_argument("--dir", type=Path, default=None, help="where the ledger goes (default: a temp dir)")
    ap.add_argument(
        "--null-server",
        action="store_true",
        help="the generator alone: against a canned-answer server, not Studiolo (its own CPU)",
    )
    ap.add_argument("--null-events-per-s", type=float, default=3.0, help="per stream, with --null-server")
    return ap.parse_args()


def main() -> None:
    args = _arguments()
    open_files = raise_open_files()
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="studiolo-fleet-", dir=args.dir) as tmp:
        fleet: Fleet | NullFleet
        if args.null_server:
            fleet, coord = NullFleet(args.per_project), None
            server = start_null_server(port, args.null_events_per_s)
        else:
            url = Settings.sqlite_url(Path(tmp) / "fleet.db")
            coord = Coordinator(_SetupStore(url), Settings(database_url=url))
            issued = coord.initialize()
            assert issued is not None
            fleet = Fleet(coord, issued.principal, args.per_project)
            server = start_server(url, port, args.workers)
        try:
            best, steps = search(fleet, port, server.pid, args)
        finally:
            server.terminate()
            server.wait(timeout=30)
            if coord is not None:
                coord.store.dispose()
    at_best = next((s for s in steps if s["agents"] == best), {})
    what = "null server" if args.null_server else f"{args.workers} worker(s)"
    print(f"largest fleet: {best} agents ({what}); open files {open_files}; load {os.getloadavg()}")
    result = {
        "fleet_agents": best,
        "workers": args.workers,
        "null_server": args.null_server,
        "heartbeat_p99_ms": at_best.get("heartbeat_p99_ms"),
        "completion_p99_ms": at_best.get("completion_p99_ms"),
        "server_cpu_cores": at_best.get("server_cpu_cores"),
        # CPU the server spent per agent per second, at the largest step run: what bounds N
        # once the tails are not the machine's (2 cores ÷ this = a CPU-bound estimate).
        "server_cpu_ms_per_agent_s": max(steps, key=lambda s: s["agents"])["server_cpu_ms_per_agent_s"]
        if steps
        else None,
        "loadgen_cpu_cores": at_best.get("loadgen_cpu_cores"),
        "loadgen_cpu_ms_per_request": at_best.get("loadgen_cpu_ms_per_request"),
        "load_avg_1m": at_best.get("load_avg_1m"),
        "cycle_s": args.cycle,
        "steps": [
            {
                k: s[k]
                for k in (
                    "agents",
                    "ok",
                    "heartbeat_p99_ms",
                    "completion_p99_ms",
                    "errors",
                    "loadgen_cpu_cores",
                    "generator_lag_p99_ms",
                    "scheduler_lag_p99_ms",
                )
            }
            for s in steps
        ],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
