"""Completions per second through HTTP with 16 concurrent clients, against a no-op
authenticated endpoint (`GET /v1/me`) of the same server in the same run.

    python bench/http.py [--clients 16] [--per-client 20]   (this module runs through it)
    python bench/http.py --observe 3    # metrics+logs on / off, 3 alternating pairs

The server is `studiolo serve` in a subprocess on a fresh SQLite ledger (WAL, synchronous=FULL).
Every task is prepared beforehand (claimed, a candidate submitted, a passing signed receipt),
so the timed phase is only the completion requests. The last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from studiolo.demo import DemoProject, setup_project
from studiolo.faces.http.server import free_port
from studiolo.keys import sign
from studiolo.service import CandidateDraft, Coordinator
from studiolo.settings import Settings
from studiolo.store import Store


def prepare(demo: DemoProject, n: int) -> list[dict[str, Any]]:
    """n tasks, each ready to complete: claimed, with a candidate and a passing receipt."""
    coord, pid, ci = demo.coord, demo.project_id, demo.who("ci")
    out = []
    for i in range(n):
        who = "agent-a" if i % 2 == 0 else "agent-b"
        agent = demo.who(who)
        task = coord.create_task(
            demo.admin, pid, f"bench {i}", criteria={"tests": "unit@1"}, scope=["src/**"]
        )
        attempt = coord.claim(agent, task.id)
        digest = coord.put_blob(agent, f"{i}\n".encode())
        cand = coord.submit_candidate(
            agent, attempt.id, CandidateDraft({f"src/out/{i}.txt": digest}, {f"src/out/{i}.txt": 0}, {}, {})
        )
        body = {
            "task_id": task.id,
            "attempt_id": attempt.id,
            "contract_hash": task.contract_hash,
            "candidate_digest": cand.digest,
            "dependency_digest": cand.dependency_digest,
            "criterion": "tests",
            "checker": "unit@1",
            "result": "pass",
            "issued_at": int(time.time() * 1000),
            "issuer": ci.id,
            "log_digest": None,
        }
        receipt = coord.submit_receipt(ci, cand.id, body, sign(demo.verifier_key, body))
        request = {
            "request_id": f"bench-{i}",
            "attempt_id": attempt.id,
            "fence": attempt.fence,
            "contract_hash": task.contract_hash,
            "candidate_id": cand.id,
            "evidence": [receipt.id],
        }
        out.append({"who": who, "task_id": task.id, "body": request})
    return out


def timed(
    clients: int, work: Callable[[int, httpx.Client], list[float]], tokens: list[str], url: str
) -> tuple[float, list[float]]:
    latencies: list[list[float]] = [[] for _ in range(clients)]
    barrier = threading.Barrier(clients + 1)

    def run(k: int) -> None:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {tokens[k]}"}, timeout=60) as http:
            http.get("/v1/me").raise_for_status()  # connect and warm up outside the timing
            barrier.wait()
            latencies[k] = work(k, http)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    flat = [x for lat in latencies for x in lat]
    return len(flat) / elapsed, flat


def _call(http: httpx.Client, method: str, path: str, expect: int, **kw: Any) -> float:
    t0 = time.perf_counter()
    r = http.request(method, path, **kw)
    if r.status_code != expect:
        raise RuntimeError(f"{method} {path}: {r.status_code} {r.text[:300]}")
    return (time.perf_counter() - t0) * 1000


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--per-client", type=int, default=20)
    parser.add_argument(
        "--observe",
        type=int,
        default=0,
        metavar="PAIRS",
        help="instead: PAIRS rounds of metrics+logs off then on (fresh ledgers), and their ratio",
    )
    args = parser.parse_args()
    if args.observe:
        observe_ratio(args.clients, args.per_client, args.observe)
        return
    noop_rps, noop_lat, done_rps, done_lat = one_server(args.clients, args.per_client, {})
    result = {
        "http_ratio": round(done_rps / noop_rps, 3),
        "completions_per_s": round(done_rps, 1),
        "noop_per_s": round(noop_rps, 1),
        "p50_ms": round(pct(done_lat, 50), 1),
        "p99_ms": round(pct(done_lat, 99), 1),
        "noop_p50_ms": round(pct(noop_lat, 50), 1),
        "noop_p99_ms": round(pct(noop_lat, 99), 1),
        "clients": args.clients,
        "completions": len(done_lat),
    }
    print(f"completions {done_rps:.1f}/s vs no-op {noop_rps:.1f}/s over {args.clients} clients")
    print(json.dumps(result))


# metrics and logs on (the default: every request counted, timed and logged as a JSON line to
# a file) against off, on otherwise identical servers and ledgers, alternating in one sitting
_OFF = {"STUDIOLO_METRICS": "0", "STUDIOLO_LOG": "off"}
_ON = {"STUDIOLO_METRICS": "1", "STUDIOLO_LOG": "json"}


def observe_ratio(clients: int, per_client: int, pairs: int) -> None:
    runs: dict[str, list[tuple[float, float, list[float]]]] = {"off": [], "on": []}
    cpu: dict[str, list[tuple[float, float]]] = {"off": [], "on": []}
    for _ in range(pairs):
        for name, env in (("off", _OFF), ("on", _ON)):
            noop_rps, _, done_rps, done_lat = one_server(clients, per_client, env, cpu[name])
            runs[name].append((noop_rps, done_rps, done_lat))
            print(f"{name}: completions {done_rps:.1f}/s, no-op {noop_rps:.1f}/s", file=sys.stderr)

    def total(name: str, i: int) -> float:
        return sum(float(r[i]) for r in runs[name])  # type: ignore[arg-type]

    on_lat = [x for r in runs["on"] for x in r[2]]
    off_lat = [x for r in runs["off"] for x in r[2]]

    def cpu_ms(name: str, i: int) -> float:
        return 1000 * sum(c[i] for c in cpu[name]) / pairs

    result = {
        # CPU per request, off ÷ on (≥ 0.95: metrics and logs cost at most 5 % more CPU)
        "observe_cpu_ratio_completions": round(cpu_ms("off", 1) / cpu_ms("on", 1), 3),
        "observe_cpu_ratio_noop": round(cpu_ms("off", 0) / cpu_ms("on", 0), 3),
        "cpu_ms_per_completion": {"off": round(cpu_ms("off", 1), 3), "on": round(cpu_ms("on", 1), 3)},
        "cpu_ms_per_noop": {"off": round(cpu_ms("off", 0), 3), "on": round(cpu_ms("on", 0), 3)},
        # throughput, on ÷ off (moved by everything else running on the machine)
        "observe_ratio_completions": round(total("on", 1) / total("off", 1), 3),
        "observe_ratio_noop": round(total("on", 0) / total("off", 0), 3),
        "pair_ratios_completions": [
            round(a[1] / b[1], 3) for a, b in zip(runs["on"], runs["off"], strict=True)
        ],
        "on_completions_per_s": round(total("on", 1) / pairs, 1),
        "off_completions_per_s": round(total("off", 1) / pairs, 1),
        "on_p50_ms": round(pct(on_lat, 50), 1),
        "off_p50_ms": round(pct(off_lat, 50), 1),
        "on_p99_ms": round(pct(on_lat, 99), 1),
        "off_p99_ms": round(pct(off_lat, 99), 1),
        "pairs": pairs,
        "clients": clients,
        "loadavg": Path("/proc/loadavg").read_text().split()[:3],
    }
    print(json.dumps(result))


def one_server(
    clients: int, per_client: int, extra_env: dict[str, str], cpu: list[tuple[float, float]] | None = None
) -> tuple[float, list[float], float, list[float]]:
    """A fresh ledger with the tasks ready, `studiolo serve` over it, no-ops then completions;
    the server's CPU seconds per no-op and per completion appended to `cpu`."""
    cpu = [] if cpu is None else cpu
    n = clients * per_client
    with tempfile.TemporaryDirectory(prefix="studiolo-bench-") as tmp:
        url_db = Settings.sqlite_url(Path(tmp) / "bench.db")
        store = Store(url_db)
        coord = Coordinator(store, Settings(database_url=url_db))
        admin = coord.initialize()
        assert admin is not None
        t0 = time.perf_counter()
        demo = setup_project(coord, admin.principal)
        ready = prepare(demo, n)
        store.dispose()
        print(f"prepared {n} tasks in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
        port = free_port()
        env = {**os.environ, "STUDIOLO_DATABASE_URL": url_db, **extra_env}
        with open(Path(tmp) / "server.log", "wb") as log:  # the JSON lines, when on
            server = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    "from studiolo.faces.cli import main; main()",
                    "serve",
                    "--port",
                    str(port),
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
            try:
                url = f"http://127.0.0.1:{port}"
                _wait(url)
                tokens = [demo.tokens["agent-a" if k % 2 == 0 else "agent-b"] for k in range(clients)]
                mine = [ready[k::clients] for k in range(clients)]

                def noop(k: int, http: httpx.Client) -> list[float]:
                    return [_call(http, "GET", "/v1/me", 200) for _ in mine[k]]

                def completions(k: int, http: httpx.Client) -> list[float]:
                    return [
                        _call(http, "POST", f"/v1/tasks/{t['task_id']}/complete", 201, json=t["body"])
                        for t in mine[k]
                    ]

                cpu0 = cpu_seconds(server.pid)
                noop_rps, noop_lat = timed(clients, noop, tokens, url)
                cpu1 = cpu_seconds(server.pid)
                done_rps, done_lat = timed(clients, completions, tokens, url)
                cpu2 = cpu_seconds(server.pid)
            finally:
                server.terminate()
                server.wait(timeout=30)
    cpu.append(((cpu1 - cpu0) / len(noop_lat), (cpu2 - cpu1) / len(done_lat)))
    return noop_rps, noop_lat, done_rps, done_lat


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) the process has used: what a request costs the server,
    unlike throughput not moved by what else runs on a shared machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait(url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError("the server did not start")


if __name__ == "__main__":
    main()
