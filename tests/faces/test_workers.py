"""`studiolo serve --workers 2`: two processes on one socket and one SQLite ledger. Racing
claims through both serialize (each task claimed once), and SIGTERM stops every worker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from studiolo.faces.http.server import free_port
from tests.world import build_world

STUDIOLO = [sys.executable, "-c", "from studiolo.faces.cli import main; main()"]


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found.update(int(c) for c in (task / "children").read_text().split())
    return found


def test_two_workers_serialize_racing_claims_and_stop_together(tmp_path: Path) -> None:
    w = build_world(tmp_path, clock=time.time)
    tasks = [w.new_task(f"race {i}").id for i in range(8)]
    agents = [w.coord.add_principal(w.admin, w.project_id, f"racer{i}", "agent") for i in range(4)]
    for a in agents:
        w.coord.grant(w.admin, w.project_id, a.principal.id, ["read", "claim"], ["**"])
    w.coord.store.dispose()
    port = free_port()
    env = {**os.environ, "STUDIOLO_DATABASE_URL": w.coord.store.url}
    proc = subprocess.Popen(
        [*STUDIOLO, "serve", "--port", str(port), "--workers", "2"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while len(_children(proc.pid)) < 2 or not _healthy(url):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        workers = _children(proc.pid)

        def claim(job: tuple[int, str]) -> int:
            token = agents[job[0] % len(agents)].token
            headers = {"Authorization": f"Bearer {token}"}
            with httpx.Client(base_url=url, headers=headers, timeout=30) as http:  # a new connection
                return http.post(f"/v1/tasks/{job[1]}/attempts", json={}).status_code

        jobs = [(k, t) for t in tasks for k in range(6)]
        with ThreadPoolExecutor(16) as pool:
            codes = list(pool.map(claim, jobs))
        assert sorted(set(codes)) == [201, 409]
        assert codes.count(201) == len(tasks)  # exactly one claim per task won, across workers
        for t in tasks:
            view = w.coord.task_view(w.admin, t)
            assert [a.fence for a in view.attempts] == [1]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    for pid in workers:
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False
