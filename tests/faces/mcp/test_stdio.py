"""`studiolo mcp` as a subprocess speaking MCP on stdio, with the SDK's stdio client, against
a live server (STUDIOLO_URL + STUDIOLO_TOKEN): the two-agent session, each agent submitting
from its own working directory."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from studiolo.faces.mcp.tools import TOOL_NAMES, WORKSPACE_TOOL_NAMES
from tests.faces.mcp.conftest import Live
from tests.faces.mcp.session import Agent, check_schemas, two_agent_session

STUDIOLO = ["-c", "from studiolo.faces.cli import main; main()"]


@asynccontextmanager
async def stdio_agent(live: Live, token: str, workdir: Path) -> AsyncIterator[Agent]:
    workdir.mkdir()
    env = {"STUDIOLO_URL": live.url, "STUDIOLO_TOKEN": token, "STUDIOLO_CONFIG": str(workdir / "none.toml")}
    params = StdioServerParameters(
        command=sys.executable, args=[*STUDIOLO, "mcp", "--workdir", str(workdir)], env=env, cwd=workdir
    )
    async with Client(params) as client:
        yield Agent(client, workdir)


@pytest.mark.slow
def test_two_agent_session_over_stdio(live: Live, tmp_path: Path) -> None:
    async def main() -> None:
        async with (
            stdio_agent(live, live.tokens["agent"], tmp_path / "a") as a,
            stdio_agent(live, live.tokens["agent2"], tmp_path / "b") as b,
        ):
            tools = [t.name for t in (await a.client.list_tools()).tools]
            assert tools == [*TOOL_NAMES, *WORKSPACE_TOOL_NAMES]
            await two_agent_session(live.world, a, b)
            assert await check_schemas(a, b) == set(tools)

    anyio.run(main)
    assert (tmp_path / "b" / "b" / "src" / "answer.txt").read_text() == "42\n"
