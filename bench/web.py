"""Dashboard render time on a large project: 10,000 tasks and 100,000 events.

    python bench/web.py [--tasks 10000] [--events 100000] [--rounds 40] [--claimed 0.25]

The server is `studiolo serve` in a subprocess on a fresh SQLite ledger. Seeding: the demo
project, one task worked through the door (claimed, candidate, passing receipt, accepted,
then 40 heartbeats on a second attempt of another task), then tasks and audit events written
in bulk through the store port (one transaction; the events are hash-chained like any
other). The timed phase signs in once, then interleaves, per round, GET /healthz, the task
list (first page and last page, `PAGE_SIZE` tasks each), the task page, the attention view, a
search, the Activity page (and filtered by a kind) and Projects; medians are compared.
The last line is JSON: `list_ratio`, `last_page_ratio`, `task_ratio` = median render time ÷
median /healthz time on the same server in the same run (the issue asks for < 10).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# bench/ holds http.py, which would shadow the standard library's `http` package
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]

import httpx  # noqa: E402

from studiolo.core.model import Attempt, AttemptStatus, Contract, Criterion, Task, TaskStatus  # noqa: E402
from studiolo.demo import DemoProject, setup_project  # noqa: E402
from studiolo.faces.http.server import free_port  # noqa: E402
from studiolo.faces.web.listing import PAGE_SIZE  # noqa: E402
from studiolo.keys import sign  # noqa: E402
from studiolo.service import CandidateDraft, Coordinator, make_request  # noqa: E402
from studiolo.settings import Settings  # noqa: E402
from studiolo.store import Store, Tx  # noqa: E402


def worked_task(demo: DemoProject) -> str:
    """One task with the whole story: claim, candidate, receipt, accepted completion."""
    coord, pid, agent, ci = demo.coord, demo.project_id, demo.who("agent-a"), demo.who("ci")
    task = coord.create_task(
        demo.admin, pid, "the worked task", criteria={"tests": "unit@1"}, scope=["src/**"]
    )
    attempt = coord.claim(agent, task.id)
    digest = coord.put_blob(agent, b"42\n")
    base = coord.read_revision(demo.admin, pid, "src/answer.txt")
    draft = CandidateDraft({"src/answer.txt": digest}, {"src/answer.txt": base}, {}, {})
    cand = coord.submit_candidate(agent, attempt.id, draft)
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
    req = make_request(
        request_id="bench-worked",
        task_id=task.id,
        attempt_id=attempt.id,
        fence=attempt.fence,
        contract_hash=task.contract_hash,
        candidate_id=cand.id,
        evidence=[receipt.id],
    )
    coord.complete(agent, req)
    other = coord.create_task(demo.admin, pid, "a busy task", criteria={"tests": "unit@1"}, scope=["src/**"])
    busy = coord.claim(agent, other.id)
    for _ in range(40):
        coord.heartbeat(agent, busy.id)
    return task.id


def bulk(store: Store, project_id: str, holder: str, tasks: int, events: int, claimed: float) -> None:
    """`tasks` tasks (the fraction `claimed` held by `holder`, half of those with a lease run
    out: the list reads their views) and filler events up to `events`, through the store port."""

    def run(tx: Tx) -> None:
        now = tx.now
        have = tx.audit.last()[0]
        every = round(1 / claimed) if claimed > 0 else 0
        for i in range(tasks):
            tid = f"tsk_bench{i:08d}"
            contract = Contract(tid, (Criterion("tests", "unit@1"),), ("src/**",), 1)
            tx.work.add_task(
                Task.open(
                    id=tid,
                    project_id=project_id,
                    title=f"bulk task {i}",
                    description="",
                    contract=contract,
                    created_at=now + i,
                )
            )
            tx.audit.append(project_id, "task.created", None, tid, {"title": f"bulk task {i}"}, now + i)
            if every and i % every == 0:
                deadline = now + (3600 if i % (2 * every) else -1)  # every other one has run out
                aid = f"att_bench{i:08d}"
                tx.work.add_attempt(
                    Attempt(aid, tid, holder, 1, deadline, tx.incarnation, AttemptStatus.ACTIVE, now + i)
                )
                tx.work.update_task(tid, status=TaskStatus.CLAIMED, current_attempt_id=aid, fence=1)
        for i in range(max(0, events - tasks - have)):
            tx.audit.append(
                project_id, "artifact.edited", None, f"src/bulk/{i % 500}.txt", {"revision": i}, now
            )

    store.write(run)


def sign_in(http: httpx.Client, token: str) -> None:
    page = http.get("/ui/sign-in")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert csrf is not None
    done = http.post("/ui/sign-in", data={"csrf": csrf.group(1), "token": token})
    assert done.status_code == 200 and "Signed in as" in done.text, done.status_code


def _ms(http: httpx.Client, path: str) -> float:
    t0 = time.perf_counter()
    r = http.get(path)
    elapsed = (time.perf_counter() - t0) * 1000
    assert r.status_code == 200, (path, r.status_code, r.text[:300])
    return elapsed


def measure(url: str, token: str, paths: dict[str, str], rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in paths}
    with httpx.Client(base_url=url, timeout=60, follow_redirects=True) as http:
        sign_in(http, token)
        for path in paths.values():  # warm up
            _ms(http, path)
        for _ in range(rounds):
            for name, path in paths.items():
                times[name].append(_ms(http, path))
    return times


def _wait(url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError("the server did not start")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--claimed", type=float, default=0.25, help="the fraction of tasks held")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="studiolo-web-bench-") as tmp:
        url_db = Settings.sqlite_url(Path(tmp) / "bench.db")
        store = Store(url_db)
        coord = Coordinator(store, Settings(database_url=url_db))
        admin = coord.initialize()
        assert admin is not None
        t0 = time.perf_counter()
        demo = setup_project(coord, admin.principal)
        task_id = worked_task(demo)
        bulk(store, demo.project_id, demo.who("agent-a").id, args.tasks, args.events, args.claimed)
        counts: dict[str, Any] = store.read(
            lambda tx: {"tasks": tx.work.count_tasks(demo.project_id), "events": tx.audit.last()[0]}
        )
        store.dispose()
        print(f"seeded {counts} in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
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
            pid = demo.project_id
            last = (counts["tasks"] - 1) // PAGE_SIZE * PAGE_SIZE
            paths = {
                "healthz": "/healthz",
                "task_list": f"/ui/projects/{pid}",
                "last_page": f"/ui/projects/{pid}?offset={last}",
                "task_page": f"/ui/tasks/{task_id}",
                "attention": f"/ui/projects/{pid}?attention=any",
                "search": f"/ui/projects/{pid}?q=task+99",
                "activity": f"/ui/projects/{pid}/activity",
                "activity_kind": f"/ui/projects/{pid}/activity?kind=completion.accepted",
                "projects": "/ui/",
            }
            times = measure(url, admin.token, paths, args.rounds)
        finally:
            server.terminate()
            server.wait(timeout=30)
    med = {name: statistics.median(ts) for name, ts in times.items()}
    result = {
        "list_ratio": round(med["task_list"] / med["healthz"], 2),
        "last_page_ratio": round(med["last_page"] / med["healthz"], 2),
        "task_ratio": round(med["task_page"] / med["healthz"], 2),
        "attention_ratio": round(med["attention"] / med["healthz"], 2),
        "activity_ratio": round(med["activity"] / med["healthz"], 2),
        **{f"{name}_ms": round(m, 2) for name, m in med.items()},
        **counts,
        "rounds": args.rounds,
    }
    for name, m in med.items():
        print(f"{name:14s} median {m:7.2f} ms", file=sys.stderr)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
