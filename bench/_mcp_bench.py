"""Tool calls per second over MCP (streamable HTTP, `/mcp`) vs the same door operations over
the plain HTTP API (`studiolo.client`), one client, sequential, one server, one run.

    python bench/mcp.py [--reads 300] [--rounds 6] [--cycles 40]   (this module runs through it)

- `get_task`: the `get_task` tool vs `GET /v1/tasks/{id}`, each warmed with `--warm` calls
  first, then in alternating blocks (`--rounds` of each, one MCP session and one HTTP
  connection throughout), so a change of the machine's load falls on both sides alike.
- a cycle: claim → submit → complete. Both sides make the same door calls the tools make:
  claim and read the task (the contract hash), upload and submit, read the candidate, the
  attempt and the receipts, complete. A verifier signs each candidate between submit and
  complete, through the plain API and outside the timing, on both sides. The cycles run in
  alternating blocks too (`--rounds` of each, after the reads).

The server is `studiolo serve` in a subprocess on a fresh SQLite ledger. The last line is
JSON; `mcp_overhead_ratio` = MCP time ÷ HTTP time for the cycle, `get_task_ratio` the same
for a task read, and `loadavg` the 1-minute load average before and after.

The reads' CPU is measured too, which a loaded machine moves far less than their wall time:
`get_task_cpu_ms` is the CPU per read of the server process (every thread, from
`/proc/PID/task/*/schedstat`) and of this client process (`time.process_time_ns`) on each
side, and `get_task_cpu_ratio` = MCP (server + client) ÷ HTTP (server + client).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
from mcp import Client as McpClient
from mcp.client.streamable_http import streamable_http_client

from studiolo.client import Client
from studiolo.demo import DemoProject, setup_project
from studiolo.faces.http.server import free_port
from studiolo.service import Coordinator
from studiolo.settings import Settings
from studiolo.store import Store


def _tasks(demo: DemoProject, n: int, label: str) -> list[str]:
    coord = demo.coord
    return [
        coord.create_task(
            demo.admin, demo.project_id, f"{label} {i}", criteria={"tests": "unit@1"}, scope=["src/**"]
        ).id
        for i in range(n)
    ]


def _sign(verifier: Client, demo: DemoProject, candidate_id: str) -> None:
    verifier.sign_receipt(
        candidate_id, "tests", "pass", demo.verifier_key, issued_at_ms=int(time.time() * 1000)
    )


def _http_cycle(c: Client, verifier: Client, demo: DemoProject, task_id: str, i: int) -> float:
    t0 = time.perf_counter()
    attempt = c.claim(task_id)
    contract_hash = c.task(task_id).task.contract_hash
    digest = c.put_blob(f"{i}\n".encode()).digest
    path = f"src/http/{i}.txt"
    cand = c.submit_candidate(attempt.id, {path: digest}, {path: 0})
    spent = time.perf_counter() - t0
    _sign(verifier, demo, cand.id)
    t0 = time.perf_counter()
    cand = c.candidate(cand.id)
    att = c.attempt(cand.attempt_id)
    evidence = [r.id for r in c.receipts(cand.id)]
    c.complete(
        task_id,
        request_id=f"{att.id}:{cand.id}",
        attempt_id=att.id,
        fence=att.fence,
        contract_hash=contract_hash,
        candidate_id=cand.id,
        evidence=evidence,
    )
    return spent + time.perf_counter() - t0


async def _mcp_cycle(m: McpClient, verifier: Client, demo: DemoProject, task_id: str, i: int) -> float:
    t0 = time.perf_counter()
    claim = _ok(await m.call_tool("claim_task", {"task_id": task_id}))
    path = f"src/mcp/{i}.txt"
    args = {"attempt_id": claim["attempt"]["id"], "files": {path: f"{i}\n"}, "bases": {path: 0}}
    cand = _ok(await m.call_tool("submit_candidate", args))
    spent = time.perf_counter() - t0
    await anyio.to_thread.run_sync(_sign, verifier, demo, cand["id"])
    t0 = time.perf_counter()
    done = {"task_id": task_id, "candidate_id": cand["id"], "contract_hash": claim["contract_hash"]}
    _ok(await m.call_tool("complete_task", done))
    return spent + time.perf_counter() - t0


def _ok(result: Any) -> dict[str, Any]:
    if result.is_error:
        raise RuntimeError(result.content)
    data: dict[str, Any] = result.structured_content
    return data


def _rate(durations: list[float]) -> float:
    return len(durations) / sum(durations)


class Cpu:
    """CPU nanoseconds spent on the reads of each side, by the server and by this client."""

    def __init__(self, server_pid: int) -> None:
        self.server_pid = server_pid
        self.spent: dict[str, list[int]] = {"http": [0, 0], "mcp": [0, 0]}  # side → [server, client]

    def now(self) -> tuple[int, int]:
        return _threads_cpu_ns(self.server_pid), time.process_time_ns()

    def add(self, side: str, before: tuple[int, int]) -> None:
        after = self.now()
        self.spent[side][0] += after[0] - before[0]
        self.spent[side][1] += after[1] - before[1]

    def per_read_ms(self, reads: int) -> dict[str, dict[str, float]]:
        return {
            side: {"server": round(server / reads / 1e6, 3), "client": round(client / reads / 1e6, 3)}
            for side, (server, client) in self.spent.items()
        }

    def ratio(self) -> float:
        return round(sum(self.spent["mcp"]) / sum(self.spent["http"]), 3)


def _threads_cpu_ns(pid: int) -> int:
    """Time on a CPU of every live thread of `pid` (a thread that ends between two readings
    takes its time along: the server's worker threads outlive the reads). Without
    schedstat (a kernel without CONFIG_SCHED_INFO), the process's user + system ticks."""
    if not Path(f"/proc/{pid}/schedstat").exists():
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


async def _mcp_phase(
    url: str,
    token: str,
    get_id: str,
    reads: Reads,
    http_read: Callable[[], object],
    cycles: Cycles,
    cpu: Cpu,
) -> tuple[list[float], list[float], list[float], list[float]]:
    """Task reads, then cycles, each in alternating blocks (HTTP, then MCP)."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    async with http, McpClient(streamable_http_client(f"{url}/mcp", http_client=http)) as m:
        args = {"task_id": get_id}
        for _ in range(reads.warm):  # outside the timing, both sides alike
            http_read()
            _ok(await m.call_tool("get_task", args))
        http_gets: list[float] = []
        mcp_gets: list[float] = []
        for block in reads.blocks():
            before = cpu.now()
            for _ in range(block):
                t0 = time.perf_counter()
                http_read()
                http_gets.append(time.perf_counter() - t0)
            cpu.add("http", before)
            before = cpu.now()
            for _ in range(block):
                t0 = time.perf_counter()
                _ok(await m.call_tool("get_task", args))
                mcp_gets.append(time.perf_counter() - t0)
            cpu.add("mcp", before)
        http_cycles, mcp_cycles = await cycles.alternate(m, reads.rounds)
    return http_gets, mcp_gets, http_cycles, mcp_cycles


class Cycles:
    """The cycles of each side: its tasks and how one cycle runs (`i`: the cycle's number)."""

    def __init__(
        self,
        http: Callable[[int, str], float],
        mcp: Callable[[McpClient, int, str], Awaitable[float]],
        http_tasks: list[str],
        mcp_tasks: list[str],
    ) -> None:
        self.http, self.mcp = http, mcp
        self.http_tasks, self.mcp_tasks = http_tasks, mcp_tasks

    async def alternate(self, m: McpClient, rounds: int) -> tuple[list[float], list[float]]:
        """Every cycle of both sides, in `rounds` alternating blocks: HTTP, MCP, HTTP, …"""
        http: list[float] = []
        mcp: list[float] = []
        start = 0
        for block in Reads(len(self.http_tasks), rounds, 0).blocks():
            for i in range(start, start + block):
                http.append(self.http(i, self.http_tasks[i]))
            for i in range(start, start + block):
                mcp.append(await self.mcp(m, i, self.mcp_tasks[i]))
            start += block
        return http, mcp


class Reads:
    def __init__(self, total: int, rounds: int, warm: int) -> None:
        self.total, self.rounds, self.warm = total, max(1, rounds), warm

    def blocks(self) -> list[int]:
        size, extra = divmod(self.total, self.rounds)
        return [size + (1 if i < extra else 0) for i in range(self.rounds)]


def _load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reads", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=6, help="alternating blocks of reads per side")
    parser.add_argument("--warm", type=int, default=50, help="untimed reads per side first")
    parser.add_argument("--cycles", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="studiolo-bench-") as tmp:
        url_db = Settings.sqlite_url(Path(tmp) / "bench.db")
        store = Store(url_db)
        coord = Coordinator(store, Settings(database_url=url_db))
        admin = coord.initialize()
        assert admin is not None
        demo = setup_project(coord, admin.principal)
        get_id = _tasks(demo, 1, "read")[0]
        http_tasks, mcp_tasks = _tasks(demo, args.cycles, "http"), _tasks(demo, args.cycles, "mcp")
        store.dispose()
        # the set-up's objects are no client's: out of the collector's way, for both sides
        gc.collect()
        gc.freeze()
        port = free_port()
        env = {**os.environ, "STUDIOLO_DATABASE_URL": url_db}
        cmd = [
            sys.executable,
            "-c",
            "from studiolo.faces.cli import main; main()",
            "serve",
            "--port",
            str(port),
        ]
        server = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            _wait(url)
            token = demo.tokens["agent-a"]
            load_before = _load()
            with Client(url, token) as c, Client(url, demo.tokens["ci"]) as verifier:

                async def mcp_cycle(m: McpClient, i: int, task_id: str) -> float:
                    return await _mcp_cycle(m, verifier, demo, task_id, i)

                cycles = Cycles(
                    lambda i, task_id: _http_cycle(c, verifier, demo, task_id, i),
                    mcp_cycle,
                    http_tasks,
                    mcp_tasks,
                )
                reads = Reads(args.reads, args.rounds, args.warm)
                cpu = Cpu(server.pid)
                http_gets, mcp_gets, http_cycles, mcp_cycles = anyio.run(
                    _mcp_phase, url, token, get_id, reads, lambda: c.task(get_id), cycles, cpu
                )
            load_after = _load()
        finally:
            server.terminate()
            server.wait(timeout=30)
    result = {
        "mcp_overhead_ratio": round(sum(mcp_cycles) / sum(http_cycles), 3),
        "get_task_ratio": round(sum(mcp_gets) / sum(http_gets), 3),
        # the ratio of the medians: what one read costs, without the preemptions a loaded
        # machine adds to some reads of either side
        "get_task_median_ratio": round(statistics.median(mcp_gets) / statistics.median(http_gets), 3),
        # CPU per read (server process, this client): what the reads cost, whatever the load
        "get_task_cpu_ratio": cpu.ratio(),
        "get_task_cpu_ms": cpu.per_read_ms(args.reads),
        "get_task_http_per_s": round(_rate(http_gets), 1),
        "get_task_mcp_per_s": round(_rate(mcp_gets), 1),
        "cycle_http_ms": round(1000 * sum(http_cycles) / len(http_cycles), 1),
        "cycle_mcp_ms": round(1000 * sum(mcp_cycles) / len(mcp_cycles), 1),
        "cycles": args.cycles,
        "reads": args.reads,
        "rounds": args.rounds,
        "loadavg": [load_before, load_after],
    }
    print(
        f"get_task: {result['get_task_mcp_per_s']}/s over MCP vs {result['get_task_http_per_s']}/s over HTTP"
    )
    print(f"cycle: {result['cycle_mcp_ms']} ms over MCP vs {result['cycle_http_ms']} ms over HTTP")
    print(f"get_task CPU per read (ms): {result['get_task_cpu_ms']}")
    print(json.dumps(result))


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
