"""CPU per request of the HTTP face itself, in process: three reads through the ASGI app.

    python bench/face_cpu.py [--requests 1500]

The app over a fresh SQLite ledger (the demo project), called through `httpx.ASGITransport`
(no socket, no uvicorn): `GET /v1/me` (no ledger read), `GET /v1/tasks/{t}` (a task view),
`GET /v1/projects/{p}/tasks` (a list). Each figure is this process's CPU time (client and
server alike, the threadpool included) over `--requests` requests, after 100 to warm up;
compare versions by running this file with each on `PYTHONPATH`, interleaved. Under load
(other processes), CPU time moves less than wall time. The last line is JSON.
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

from studiolo.demo import DemoProject, setup_project  # noqa: E402
from studiolo.faces.http.app import create_app  # noqa: E402
from studiolo.service import Coordinator  # noqa: E402
from studiolo.settings import Settings  # noqa: E402
from studiolo.store import Store  # noqa: E402


async def _measure(app: object, headers: dict[str, str], paths: dict[str, str], n: int) -> dict[str, float]:
    out: dict[str, float] = {}
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as http:
        for name, path in paths.items():
            for _ in range(100):
                (await http.get(path, headers=headers)).raise_for_status()
            start = time.process_time()
            for _ in range(n):
                await http.get(path, headers=headers)
            out[f"{name}_cpu_ms"] = round((time.process_time() - start) / n * 1000, 3)
    return out


def demo_app(tmp: str) -> tuple[DemoProject, Any]:
    """The demo project on a fresh SQLite ledger in `tmp`, and the HTTP app over it."""
    url = Settings.sqlite_url(Path(tmp) / "bench.db")
    coord = Coordinator(Store(url), Settings(database_url=url))
    admin = coord.initialize()
    assert admin is not None
    return setup_project(coord, admin.principal), create_app(coord, Settings(database_url=url))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=1500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="studiolo-bench-") as tmp:
        demo, app = demo_app(tmp)
        task = demo.coord.create_task(
            demo.admin, demo.project_id, "bench", criteria={"tests": "unit@1"}, scope=["src/**"]
        )
        paths = {
            "me": "/v1/me",
            "task": f"/v1/tasks/{task.id}",
            "tasks": f"/v1/projects/{demo.project_id}/tasks",
        }
        headers = {"Authorization": f"Bearer {demo.tokens['agent-a']}"}
        result = asyncio.run(_measure(app, headers, paths, args.requests))
    result["loadavg"] = os.getloadavg()[0]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
