"""MCP once bytes were deleted: `get_task` says why "still current" cannot be answered and
still validates against its output schema; `read_artifact` of a deleted revision is a tool
error with the reason `bytes_deleted` and its hint, never a crash."""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp import Client

from studiolo.core.hints import hint_of
from studiolo.faces.mcp.inprocess import InProcessPort
from studiolo.faces.mcp.server import build_server
from tests.faces.mcp.session import Agent, check_schemas
from tests.world import World


def test_get_task_and_read_artifact_after_a_deletion(world: World, tmp_path: Path) -> None:
    w = world
    task = w.new_task()
    attempt = w.coord.claim(w.agent, task.id)
    cand = w.candidate(attempt, {"src/answer.txt": b"SECRET=1\n"})
    w.complete(task, attempt, cand, [w.receipt(cand).id])
    digest = cand.files["src/answer.txt"]
    assert digest is not None
    w.coord.delete_bytes(w.admin, w.project_id, digest, "a leaked secret")
    before = w.coord.read_revision(w.admin, w.project_id, "src/answer.txt") - 1

    async def main() -> None:
        async with Client(build_server(lambda _ctx: InProcessPort(w.coord, w.agent))) as client:
            a = Agent(client)
            view = await a.ok("get_task", task_id=task.id)
            assert view["task"]["still_current"] is False
            assert view["task"]["bytes_deleted"].endswith("a leaked secret")
            assert [d["digest"] for d in view["deleted"]] == [digest]
            listed = await a.ok("get_receipts", candidate_id=cand.id)
            assert listed["receipts"][0]["bytes_deleted"].startswith("bytes deleted ")
            assert listed["receipts"][0]["deleted_digests"] == [digest]
            refused = await a.refused("read_artifact", path="src/answer.txt", revision=before)
            assert refused["reason"] == "bytes_deleted"
            assert [h["hint"] for h in refused["hints"]] == [hint_of("bytes_deleted").brief]
            await check_schemas(a)

    anyio.run(main)
