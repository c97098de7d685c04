"""The MCP face over streamable HTTP at /mcp on a real socket, with the SDK's client and
our bearer tokens: 401 without a valid token, the caller is the token's principal, another
project's token sees nothing, and the two-agent session runs through it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from studiolo.faces.http.app import create_app
from studiolo.faces.mcp.mount import DoorTokenVerifier, transport_security
from studiolo.faces.mcp.tools import TOOL_NAMES
from studiolo.settings import Settings
from tests.faces.mcp.conftest import Live
from tests.faces.mcp.session import Agent, check_schemas, two_agent_session


@asynccontextmanager
async def mcp_client(url: str, token: str, mode: str = "auto") -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode) as client:
        yield client


def test_no_token_or_a_bad_token_is_401(live: Live) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}
    for headers in ({}, {"Authorization": "Bearer stl_not-a-token"}, {"Authorization": "Basic eDp5"}):
        r = httpx.post(f"{live.url}/mcp", json=body, headers={**accept, **headers})
        assert r.status_code == 401, (headers, r.text)
        assert r.headers["www-authenticate"].startswith("Bearer")
    revoked = live.world.coord.rotate_token(live.world.admin, live.world.human.id).token
    live.world.coord.revoke_tokens(live.world.admin, live.world.human.id)
    r = httpx.post(f"{live.url}/mcp", json=body, headers={**accept, "Authorization": f"Bearer {revoked}"})
    assert r.status_code == 401


def test_the_caller_is_the_tokens_principal_and_another_project_sees_nothing(live: Live) -> None:
    world = live.world
    task = world.new_task()
    other = world.coord.create_project(world.admin, "elsewhere")
    stranger = world.coord.add_principal(world.admin, other.id, "stranger", "agent")
    world.coord.grant(world.admin, other.id, stranger.principal.id, ["read", "claim"], ["**"])

    async def main() -> None:
        async with mcp_client(live.url, live.tokens["agent2"]) as c:
            assert [t.name for t in (await c.list_tools()).tools] == list(TOOL_NAMES)  # no workspace
            me = await Agent(c).ok("orient")
            assert me["principal"]["id"] == world.agent2.id and me["project_id"] == world.project_id
        async with mcp_client(live.url, stranger.token) as c:
            s = Agent(c)
            mine = await s.ok("orient")
            assert mine["project_id"] == other.id and mine["open_tasks"] == []
            assert (await s.ok("list_tasks"))["tasks"] == []
            assert (await s.refused("get_task", task_id=task.id))["reason"] == "task_not_found"
            assert (await s.refused("claim_task", task_id=task.id))["reason"] == "task_not_found"
            assert (await s.ok("list_artifacts"))["artifacts"] == []

    anyio.run(main)


def test_two_agent_session_over_streamable_http(live: Live) -> None:
    async def main() -> None:
        async with (
            mcp_client(live.url, live.tokens["agent"]) as ca,
            mcp_client(live.url, live.tokens["agent2"]) as cb,
        ):
            a, b = Agent(ca), Agent(cb)
            await two_agent_session(live.world, a, b)
            assert await check_schemas(a, b) == set(TOOL_NAMES)

    anyio.run(main)


def test_a_client_with_the_initialize_handshake_is_served_too(live: Live) -> None:
    """Today's clients (Claude Code, Codex, Cursor) still open with `initialize`."""
    task = live.world.new_task()

    async def main() -> None:
        async with mcp_client(live.url, live.tokens["agent"], mode="legacy") as c:
            agent = Agent(c)
            assert (await agent.ok("orient"))["principal"]["id"] == live.world.agent.id
            claimed = await agent.ok("claim_task", task_id=task.id)
            assert claimed["contract_hash"] == task.contract_hash
            refused = await agent.refused("claim_task", task_id=task.id)
            assert refused["reason"] == "task_already_claimed"
            assert await check_schemas(agent) == {"orient", "claim_task"}

    anyio.run(main)


def test_a_foreign_origin_or_host_is_refused_before_any_tool_runs(live: Live) -> None:
    """DNS rebinding: the transport spec's MUST. Loopback and the public URL pass; others do not."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    base = {
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {live.tokens['agent']}",
        "MCP-Protocol-Version": "2025-11-25",
    }
    port = live.url.rsplit(":", 1)[1]

    def post(**headers: str) -> httpx.Response:
        return httpx.post(f"{live.url}/mcp", json=body, headers={**base, **headers})

    assert post(Origin="http://evil.example").status_code == 403
    assert post(Origin="null").status_code == 403
    assert post(Host="evil.example").status_code == 421
    assert post(Host=f"evil.example:{port}", Origin=f"http://evil.example:{port}").status_code == 421
    local = f"localhost:{port}"
    for ok in ({}, {"Origin": live.url}, {"Origin": f"http://{local}"}, {"Host": local}):
        r = post(**ok)
        assert r.status_code == 200 and r.json()["result"]["tools"], (ok, r.text)


def test_the_allowed_hosts_and_origins_come_from_the_public_url_and_the_settings() -> None:
    settings = Settings(
        public_url="https://studiolo.example.com",
        host="0.0.0.0",
        mcp_allowed_hosts=("10.0.0.5:8765",),
        mcp_allowed_origins=("https://ci.example.com",),
    )
    security = transport_security(settings)
    assert security.enable_dns_rebinding_protection
    assert {"studiolo.example.com", "10.0.0.5:8765", "127.0.0.1:*"} <= set(security.allowed_hosts)
    assert {"https://studiolo.example.com", "https://ci.example.com"} <= set(security.allowed_origins)
    assert not any("evil" in h for h in security.allowed_hosts)
    env = Settings.from_env({"STUDIOLO_MCP_ALLOWED_HOSTS": "a.example, b.example:80"})
    assert env.mcp_allowed_hosts == ("a.example", "b.example:80")


def test_a_known_token_is_verified_from_the_cache_on_the_event_loop(live: Live) -> None:
    """As the HTTP API does: no worker-thread hop (and no ledger read) for a cached token."""
    door = live.world.coord
    token = live.tokens["agent"]
    door.authenticate(token)  # now cached
    calls: list[str] = []

    verifier = DoorTokenVerifier(door)
    original = door.authenticate

    def counted(t: str | None) -> Any:
        calls.append("ledger")
        return original(t)

    door.authenticate = counted  # type: ignore[method-assign]
    try:
        known = anyio.run(verifier.verify_token, token)
        unknown = anyio.run(verifier.verify_token, "stl_not-a-token")
    finally:
        door.authenticate = original  # type: ignore[method-assign]
    assert known is not None and known.client_id == live.world.agent.id
    assert unknown is None and calls == ["ledger"]  # only the unknown token went to the ledger


def test_mcp_is_matched_first_among_the_apps_routes(live: Live) -> None:
    """/mcp is not an indexed API route: the router scans the routes in order for it."""
    app = create_app(live.world.coord, Settings(database_url=live.world.coord.store.url, a2a_requester=False))
    assert getattr(app.router.routes[0], "path", None) == "/mcp"
