"""The scripted agent over MCP, in its own process: `python -m studiolo.eval.live_mcp_agent
WORKSPACE`. It reads the MCP configuration in `WORKSPACE/mcp.json` (what `--agent-cmd` gets
too), launches that server (`studiolo mcp`) over stdio with the official `mcp` client, and does
the tasks of `WORKSPACE/agent.json` through the tools alone: claim_task, read_artifact,
submit_candidate, get_receipts, heartbeat, complete_task; after a refusal it reads the
current files again and resubmits (at most 6 rounds a task). The MCP server's HTTP client
reaches the service through this agent's fault proxy. It is also the stand-in the tests run
as a user's `--agent-cmd`. Pinned as `LIVE_MCP_AGENT_VERSION`."""

from __future__ import annotations

import base64
import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from studiolo.git.history import merge_file

LIVE_MCP_AGENT_VERSION = "studiolo-eval-live-mcp-agent/1"


CLAIM_TRIES = 60  # 30 s of refusals: longer than the authority's revoke-to-regrant window


def _bytes(value: str | None) -> bytes | None:
    return None if value is None else base64.b64decode(value)


async def _do(client: Client, task: dict[str, Any], lease: float, log: list[dict[str, Any]]) -> None:
    # a claim refused now may succeed later: the other agent holds the task, or the authority
    # revoked this agent's grant and re-grants it seconds later (a scheduled fault)
    for _try in range(CLAIM_TRIES):
        claimed = await client.call_tool("claim_task", {"task_id": task["task_id"], "lease_seconds": lease})
        if not claimed.is_error and claimed.structured_content is not None:
            break
        print("claim refused:", claimed.content, file=sys.stderr)
        time.sleep(0.5)
    else:
        return
    attempt = claimed.structured_content["attempt"]["id"]
    contract = claimed.structured_content["contract_hash"]
    for _round in range(6):
        files: dict[str, str | None] = {}
        bases: dict[str, int] = {}
        for path in task["paths"]:
            got = await client.call_tool("read_artifact", {"path": path})
            sc = got.structured_content if not got.is_error else None
            revision = sc["artifact"]["revision"] if sc else 0
            current = sc["content"].encode() if sc and sc["content"] is not None else None
            merged = merge_file(_bytes(task["before"][path]), current, _bytes(task["after"][path]))
            if not isinstance(merged, bytes | type(None)):
                return
            files[path] = None if merged is None else merged.decode()
            bases[path] = revision
        cand = await client.call_tool(
            "submit_candidate", {"attempt_id": attempt, "files": files, "bases": bases}
        )
        if cand.is_error or cand.structured_content is None:  # e.g. while the grant is revoked
            print("candidate refused:", cand.content, file=sys.stderr)
            time.sleep(1.5)
            continue
        cid = cand.structured_content["id"]
        for _ in range(200):
            got = await client.call_tool("get_receipts", {"candidate_id": cid})
            receipts = (got.structured_content or {}).get("receipts", [])
            if receipts:
                break
            await client.call_tool("heartbeat", {"attempt_id": attempt, "lease_seconds": lease})
            time.sleep(0.3)
        done = await client.call_tool(
            "complete_task", {"task_id": task["task_id"], "candidate_id": cid, "contract_hash": contract}
        )
        log.append({"task": task["index"], "accepted": not done.is_error})
        if not done.is_error:
            return


async def main(workspace: Path) -> None:
    mcp_config = json.loads((workspace / "mcp.json").read_text())["mcpServers"]["studiolo"]
    agent = json.loads((workspace / "agent.json").read_text())
    params = StdioServerParameters(
        command=mcp_config["command"], args=mcp_config["args"], env=mcp_config["env"], cwd=workspace
    )
    log: list[dict[str, Any]] = []
    async with Client(params) as client:
        for task in agent["tasks"]:
            await _do(client, task, float(agent["lease"]), log)
    (workspace / "standin.json").write_text(json.dumps({"log": log}))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python -m studiolo.eval.live_mcp_agent WORKSPACE", file=sys.stderr)
        raise SystemExit(2)
    anyio.run(main, Path(sys.argv[1]))
