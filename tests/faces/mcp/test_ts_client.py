"""The official TypeScript MCP SDK v1 client (`@modelcontextprotocol/sdk`, the SDK Claude Code
is built on) over streamable HTTP and stdio: every tool result it accepts, and a refusal is a
normal `isError` result with the reason, failed predicates and hints in its text (the SDK
throws when structured content does not match a tool's output schema, even on an error).

Needs node and the pinned SDK: `npm ci --prefix tests/faces/mcp/ts` (the lockfile is
committed). Skipped, saying so, only when node or npm is not installed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from studiolo.faces.mcp.refusals import REFUSAL_META
from studiolo.faces.mcp.tools import TOOL_NAMES, WORKSPACE_TOOL_NAMES
from tests.faces.mcp.conftest import Live

TS = Path(__file__).resolve().parent / "ts"
STUDIOLO = ["-c", "from studiolo.faces.cli import main; main()"]

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None,
    reason="node and npm are not installed: the TypeScript MCP SDK client test cannot run",
)


def _run(config: dict[str, Any]) -> dict[str, Any]:
    if not (TS / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        pytest.fail(f"the TypeScript MCP SDK is not installed: run `npm ci --prefix {TS}`")
    done = subprocess.run(
        ["node", str(TS / "client.mjs"), json.dumps(config)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def _check(out: dict[str, Any], live: Live) -> None:
    for name in ("orient", "page", "claim", "handoff", "submit"):
        assert out[name]["isError"] is False and out[name]["structured"] is not None, (name, out[name])
    assert out["orient"]["structured"]["principal"]["id"] == live.world.agent.id
    assert len(out["page"]["structured"]["tasks"]) == 1 and out["page"]["structured"]["next_cursor"]
    assert out["handoff"]["structured"]["handoff"] is None
    expected = {"again": "task_already_claimed", "missing": "task_not_found", "refused": "evidence_missing"}
    for name, reason in expected.items():
        refused = out[name]
        assert refused["isError"] is True and refused["structured"] is None, refused
        body = refused["meta"][REFUSAL_META]
        assert body["reason"] == reason and body["failed"][0] == reason, body
        assert f"refused: {reason}" in refused["text"]
        assert all(h["hint"] in refused["text"] for h in body["hints"])


def test_the_typescript_sdk_client_over_streamable_http(live: Live) -> None:
    task, _ = live.world.new_task(), live.world.new_task("another: list_tasks has a next page")
    config = {"transport": "http", "url": live.url, "token": live.tokens["agent"], "task_id": task.id}
    out = _run({**config, "workdir": None})
    assert out["tools"] == list(TOOL_NAMES)
    _check(out, live)


@pytest.mark.slow
def test_the_typescript_sdk_client_over_stdio(live: Live, tmp_path: Path) -> None:
    task, _ = live.world.new_task(), live.world.new_task("another: list_tasks has a next page")
    env = {
        "STUDIOLO_URL": live.url,
        "STUDIOLO_TOKEN": live.tokens["agent"],
        "STUDIOLO_CONFIG": str(tmp_path / "none.toml"),
    }
    config = {
        "transport": "stdio",
        "command": sys.executable,
        "args": [*STUDIOLO, "mcp", "--workdir", str(tmp_path)],
        "env": env,
        "task_id": task.id,
        "workdir": str(tmp_path),
    }
    out = _run(config)
    assert out["tools"] == [*TOOL_NAMES, *WORKSPACE_TOOL_NAMES]
    _check(out, live)
    assert out["submit"]["structured"]["uploaded"] == ["src/answer.txt"]
    assert (tmp_path / "w" / "src" / "answer.txt").read_text() == "42\n"
