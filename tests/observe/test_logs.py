"""JSON-line logs and request ids: a line per request and per committed state change, the id
returned as `X-Request-Id` and recorded in the audit event it caused, no secret in any line."""

from __future__ import annotations

import io
import json
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import httpx2
import pytest
import uvicorn
from mcp import Client as McpClient
from mcp.client.streamable_http import streamable_http_client

from studiolo.faces.http.app import create_app
from studiolo.faces.http.server import free_port
from studiolo.observe import logs
from studiolo.settings import Settings
from tests.faces.helpers import Actors, PortalTransport, complete, issue_tokens, new_task, submit, verify
from tests.world import World


@pytest.fixture
def logged(world: World) -> Iterator[tuple[Actors, io.StringIO]]:
    """The world behind an app that logs JSON lines to a buffer."""
    stream = io.StringIO()
    settings = Settings(database_url=world.coord.store.url, log_format="json")
    transport = PortalTransport(create_app(world.coord, settings, log_stream=stream))
    actors = Actors(world, issue_tokens(world), transport=transport)
    try:
        yield actors, stream
    finally:
        actors.close()
        transport.shutdown()


def _lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_a_tour_logs_every_request_and_state_change_and_no_secret(logged: tuple[Actors, io.StringIO]) -> None:
    actors, captured = logged
    admin, agent, ver = actors.client("admin"), actors.client("agent"), actors.client("verifier")
    task = new_task(admin)
    attempt = agent.claim(task.id)
    agent.heartbeat(attempt.id)
    cand = submit(agent, attempt, {"src/answer.txt": b"42\n"})
    done = complete(agent, task, attempt, cand, [verify(ver, actors.world, cand).id])
    fresh = admin.rotate_token(actors.world.agent2.id).token  # a token issued mid-tour
    lines = _lines(captured)
    text = captured.getvalue()
    secrets = [*actors.tokens.values(), fresh, done.completion.signature]
    secrets.append(actors.world.coord.store.read(lambda tx: tx.meta.get("service_key")) or "missing")
    for secret in secrets:
        assert secret not in text
    assert "stl_" not in text and "Bearer" not in text
    requests = [line for line in lines if line["logger"] == "studiolo.request"]
    events = [line for line in lines if line["logger"] == "studiolo.event"]
    assert {tuple(sorted(r)) for r in requests} == {
        (
            "duration_ms",
            "level",
            "logger",
            "method",
            "msg",
            "principal",
            "request_id",
            "route",
            "status",
            "ts",
        )
    }
    assert len({r["request_id"] for r in requests}) == len(requests)  # one id per request
    me = [r for r in requests if r["route"] == "/v1/me"]  # a GET: the caller came from the route
    w = actors.world
    assert me and {r["principal"] for r in me} <= {p.id for p in (w.admin, w.agent, w.verifier)}
    kinds = {"attempt.claimed", "candidate.submitted", "receipt.recorded", "completion.accepted"}
    assert kinds <= {e["kind"] for e in events}
    by_request = {r["request_id"]: r for r in requests}
    toured = [e for e in events if e["kind"] in kinds]
    assert len(toured) == 4
    for e in toured:  # every state change names the request that caused it
        assert by_request[e["request_id"]]["method"] == "POST"
    direct = [e for e in events if e["request_id"] is None]  # the fixture's tokens: the door itself
    assert {e["kind"] for e in direct} <= {"principal.added", "token.issued", "token.rotated", "grant.added"}
    ledger = actors.world.coord.store.read(lambda tx: tx.audit.events(actors.world.project_id))
    recorded = {e.seq: e.data.get("x_request_id") for e in ledger}
    assert all(recorded[e["seq"]] == e["request_id"] for e in events if e["project_id"])
    assert actors.world.coord.verify_audit().ok


def test_the_request_id_header_is_the_one_in_the_audit_event(actors: Actors) -> None:
    admin = actors.client("admin")
    task = new_task(admin)
    headers = {"Authorization": f"Bearer {actors.tokens['agent']}"}
    with httpx.Client(base_url=actors.url, transport=actors.transport, headers=headers) as http:
        claimed = http.post(f"/v1/tasks/{task.id}/attempts", json={})
        refused = http.post(f"/v1/tasks/{task.id}/attempts", json={})  # already claimed
        spoofed = http.get("/v1/me", headers={"X-Request-Id": "chosen-by-the-caller"})
    assert claimed.status_code == 201 and refused.status_code == 409
    ids = [r.headers["x-request-id"] for r in (claimed, refused, spoofed)]
    assert len(set(ids)) == 3 and "chosen-by-the-caller" not in ids  # the service names requests
    events = actors.world.coord.store.read(lambda tx: tx.audit.events(actors.world.project_id))
    claim = [e for e in events if e.kind == "attempt.claimed"]
    assert [e.data["x_request_id"] for e in claim] == [ids[0]]


def test_the_other_studiolo_loggers_write_the_same_json_lines() -> None:
    stream = io.StringIO()
    handler = logs.to_stream(stream)
    try:
        logging.getLogger("studiolo.git.projector").warning("publish failed: %s", "disk full")
        logging.getLogger("studiolo.a2a.requester").debug("not at INFO")
    finally:
        logs.detach(handler)
    (line,) = _lines(stream)
    assert line["level"] == "warning" and line["logger"] == "studiolo.git.projector"
    assert line["msg"] == "publish failed: disk full" and line["ts"].endswith("Z")


def test_an_mcp_request_s_log_line_names_its_principal(world: World) -> None:
    """`/mcp` authenticates inside the SDK's app, not on the API's path: its log line still
    names the token's principal (and no line names one for a request without a token)."""
    stream = io.StringIO()
    app = create_app(
        world.coord, Settings(database_url=world.coord.store.url, log_format="json"), log_stream=stream
    )
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started and thread.is_alive():
            time.sleep(0.01)
        url = f"http://127.0.0.1:{server.config.port}"
        token = issue_tokens(world)["agent"]

        async def orient() -> None:
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
            async with http, McpClient(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
                assert not (await client.call_tool("orient", {})).is_error

        anyio.run(orient)
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        assert httpx.post(f"{url}/mcp", json=body).status_code == 401
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    mcp = [r for r in _lines(stream) if r["logger"] == "studiolo.request" and r["route"] == "/mcp"]
    assert {r["principal"] for r in mcp if r["status"] == 200} == {world.agent.id}
    assert [r["principal"] for r in mcp if r["status"] == 401] == [None]
