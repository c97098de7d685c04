"""CPU per completion in process: through the HTTP face (the ASGI app, `httpx.ASGITransport`,
client included) against the door alone (`Coordinator.complete`), on one SQLite ledger.

    python bench/complete_cpu.py [--completions 300]

Every task is prepared first (claimed, a candidate, a passing signed receipt: `_http_bench`'s
`prepare`); then `--completions` go through the app and as many others straight to the door,
after 10 of each to warm up. Each figure is this process's CPU time per completion (the
threadpool included; the SQLite commit's fsync is wall time, not CPU). The difference is what
the face and the in-process client add around the door. The last line is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent  # off the path: bench/http.py would shadow `http`
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import httpx  # noqa: E402

from studiolo.demo import DemoProject  # noqa: E402
from studiolo.service import make_request  # noqa: E402

sys.path.append(str(_HERE))
from _http_bench import prepare  # noqa: E402
from face_cpu import demo_app  # noqa: E402


async def _via_app(app: Any, demo: DemoProject, jobs: list[dict[str, Any]]) -> None:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as http:
        for job in jobs:
            auth = {"Authorization": f"Bearer {demo.tokens[job['who']]}"}
            answer = await http.post(f"/v1/tasks/{job['task_id']}/complete", json=job["body"], headers=auth)
            assert answer.status_code == 201, answer.text


def _via_door(demo: DemoProject, jobs: list[dict[str, Any]]) -> None:
    for job in jobs:
        demo.coord.complete(demo.who(job["who"]), make_request(task_id=job["task_id"], **job["body"]))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--completions", type=int, default=300)
    n = parser.parse_args().completions
    with tempfile.TemporaryDirectory(prefix="studiolo-bench-") as tmp:
        demo, app = demo_app(tmp)
        jobs = prepare(demo, 2 * n + 20)
        asyncio.run(_via_app(app, demo, jobs[:10]))
        _via_door(demo, jobs[10:20])
        start = time.process_time()
        asyncio.run(_via_app(app, demo, jobs[20 : 20 + n]))
        face = time.process_time() - start
        start = time.process_time()
        _via_door(demo, jobs[20 + n :])
        door = time.process_time() - start
    result = {
        "http_cpu_ms": round(face / n * 1000, 3),
        "door_cpu_ms": round(door / n * 1000, 3),
        "face_share": round(1 - door / face, 3),
        "loadavg": os.getloadavg()[0],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
