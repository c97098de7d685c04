"""`python bench/mcp_schemas.py`: what writing output schemas' once-used definitions in place
(`studiolo/faces/mcp/schemas.py::inline_single_refs`) saves a client, A/B in one process.

Two apps on one ledger, one built with the schemas as served and one with `$defs` and `$ref`s
kept; the official Python MCP client (which validates every structured result against the
tool's output schema) reads the same task through each over an in-process ASGI transport, in
alternating blocks after a warm-up. The last line is JSON: the per-read medians, their ratio
(inlined ÷ refs) and the load average before and after.

    python bench/mcp_schemas.py [--blocks 10] [--reads 100]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import studiolo.faces.mcp.schemas as schemas
from studiolo.demo import setup_project
from studiolo.faces.http.app import create_app
from studiolo.service import Coordinator
from studiolo.settings import Settings
from studiolo.store import Store


def _load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


async def _measure(
    apps: dict[str, Any], token: str, task_id: str, blocks: int, reads: int
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in apps}
    async with contextlib.AsyncExitStack() as stack:
        clients = {}
        for name, app in apps.items():
            await stack.enter_async_context(app.router.lifespan_context(app))
            http = httpx2.AsyncClient(
                transport=httpx2.ASGITransport(app=app),
                base_url="http://127.0.0.1",
                headers={"Authorization": f"Bearer {token}"},
            )
            await stack.enter_async_context(http)
            client = Client(streamable_http_client("http://127.0.0.1/mcp", http_client=http))
            clients[name] = await stack.enter_async_context(client)
        args = {"task_id": task_id}
        for _ in range(reads):  # warm-up, untimed
            for client in clients.values():
                await client.call_tool("get_task", args)
        for _ in range(blocks):
            for name, client in clients.items():
                for _ in range(reads):
                    t0 = time.perf_counter()
                    result = await client.call_tool("get_task", args)
                    times[name].append(time.perf_counter() - t0)
                    if result.is_error:
                        raise RuntimeError(result.content)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--blocks", type=int, default=10)
    parser.add_argument("--reads", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="studiolo-bench-") as tmp:
        url_db = Settings.sqlite_url(Path(tmp) / "bench.db")
        settings = Settings(database_url=url_db)
        coord = Coordinator(Store(url_db), settings)
        admin = coord.initialize()
        assert admin is not None
        demo = setup_project(coord, admin.principal)
        task = coord.create_task(
            demo.admin, demo.project_id, "read", criteria={"tests": "unit@1"}, scope=["src/**"]
        )
        inlined = create_app(coord, settings)
        served = schemas.inline_single_refs
        schemas.inline_single_refs = lambda schema: schema  # the schemas as pydantic nests them
        try:
            refs = create_app(coord, settings)
        finally:
            schemas.inline_single_refs = served
        before = _load()
        times = anyio.run(
            _measure,
            {"inlined": inlined, "refs": refs},
            demo.tokens["agent-a"],
            task.id,
            args.blocks,
            args.reads,
        )
        after = _load()
    medians = {name: statistics.median(xs) for name, xs in times.items()}
    result = {
        "get_task_inlined_ms": round(1000 * medians["inlined"], 3),
        "get_task_refs_ms": round(1000 * medians["refs"], 3),
        "inlined_over_refs": round(medians["inlined"] / medians["refs"], 3),
        "reads_each": len(times["inlined"]),
        "loadavg": [before, after],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
