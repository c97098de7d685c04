"""What the service sends to remote agents (issue 32): only to the organisation's configured
origins, never to a non-public address the organisation does not name (blind SSRF); and under
a total deadline, on the event loop, so a slow remote stalls nobody else (items 5 and 10)."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from studiolo._exceptions import InvalidRequest
from studiolo.core.remote import parse_origins
from studiolo.faces.http.server import ServerThread, free_port
from studiolo.keys import ServiceKey
from studiolo.settings import Settings
from studiolo.workers.a2a.capped import CappedTransport, DeadlineExceeded
from studiolo.workers.a2a.origins import OriginGuard, OriginRefused
from tests.faces.helpers import issue_tokens
from tests.world import add_project, build_world

KEY = ServiceKey.generate()


# origins ------------------------------------------------------------------------------
def test_origins_are_scheme_host_port_and_nothing_else() -> None:
    assert parse_origins(["https://Agent.Acme.example", "http://127.0.0.1:8123/", "https://a.b:443"]) == (
        "https://agent.acme.example:443",
        "http://127.0.0.1:8123",
        "https://a.b:443",
    )
    for bad in ["ftp://a.b", "https://a.b/x", "https://a.b/?q", "https://u:p@a.b", "a.b", "https://a.b#f"]:
        with pytest.raises(ValueError):
            parse_origins([bad])


def _guard(origins: list[str], resolved: list[str], seen: list[str]) -> OriginGuard:
    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, content=b"ok")

    async def resolve(host: str) -> list[str]:
        return resolved

    return OriginGuard(httpx.MockTransport(answer), parse_origins(origins), resolve=resolve)


async def _get(guard: OriginGuard, url: str) -> httpx.Response:
    async with httpx.AsyncClient(transport=guard) as http:
        return await http.get(url)


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "10.1.2.3", "192.168.0.7", "169.254.169.254", "::1", "fd00::1", "::ffff:10.0.0.1"],
)
def test_a_host_name_that_resolves_to_a_non_public_address_is_refused(address: str) -> None:
    seen: list[str] = []
    guard = _guard(["https://agent.acme.example"], [address], seen)
    with pytest.raises(OriginRefused):
        asyncio.run(_get(guard, "https://agent.acme.example/.well-known/agent-card.json"))
    assert seen == []  # nothing was sent


def test_a_public_address_on_a_configured_origin_passes() -> None:
    seen: list[str] = []
    guard = _guard(["https://agent.acme.example"], ["93.184.215.14"], seen)
    assert asyncio.run(_get(guard, "https://agent.acme.example/x")).status_code == 200
    assert seen == ["https://agent.acme.example/x"]


def test_an_origin_that_names_a_private_address_may_reach_it() -> None:
    seen: list[str] = []
    guard = _guard(["http://10.0.0.5:9000"], [], seen)
    assert asyncio.run(_get(guard, "http://10.0.0.5:9000/a2a")).status_code == 200
    with pytest.raises(OriginRefused):  # the same host on another port is another origin
        asyncio.run(_get(guard, "http://10.0.0.5:9001/metrics"))
    assert seen == ["http://10.0.0.5:9000/a2a"]


@pytest.mark.parametrize(
    "url", ["https://evil.example/x", "http://agent.acme.example/x", "https://agent.acme.example:8443/x"]
)
def test_another_origin_is_refused(url: str) -> None:
    seen: list[str] = []
    with pytest.raises(OriginRefused):
        asyncio.run(_get(_guard(["https://agent.acme.example"], ["93.184.215.14"], seen), url))
    assert seen == []


@dataclass
class Canary:
    """An HTTP server on loopback that records every request line it is sent."""

    url: str
    lines: list[str] = field(default_factory=list)


@contextmanager
def canary() -> Iterator[Canary]:
    sock = socket.create_server(("127.0.0.1", 0))
    found = Canary(f"http://127.0.0.1:{sock.getsockname()[1]}")

    def serve() -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            with conn:
                found.lines.append(conn.recv(4096).split(b"\r\n", 1)[0].decode())
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield found
    finally:
        sock.close()
        t.join(timeout=5)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Any, str, dict[str, str]]]:
    world = build_world(tmp_path, time.time)
    c = world.coord
    c.add_remote_org(world.admin, world.project_id, "acme", {KEY.kid: KEY.public})
    task = world.new_task("attest", criteria={"attested": "a2a-acme@1"}, scope=["remote/**"])
    settings = Settings(database_url=c.store.url, a2a_requester=False, a2a_request_timeout=3.0)
    with ServerThread(c, settings) as server:
        token = issue_tokens(world)["admin"]
        yield world, server.url, {"task": task.id, "token": token}


def test_a_delegation_off_the_organisations_origins_sends_nothing(served: Any) -> None:
    """The finding: `agent_url` `http://host/x?` made the service GET its own /metrics. Now
    the URL must be on one of the organisation's origins, and a loopback one must be named."""
    world, url, ids = served
    auth = {"Authorization": f"Bearer {ids['token']}"}
    with canary() as c:
        for agent_url in [f"{url}/metrics?", f"{c.url}/x?", "http://169.254.169.254/latest/meta-data/?"]:
            r = httpx.post(
                f"{url}/v1/tasks/{ids['task']}/delegations",
                json={"org": "acme", "agent_url": agent_url},
                headers=auth,
            )
            assert r.status_code == 400 and "names no origins" in r.json()["detail"], r.text
        world.coord.set_remote_origins(world.admin, world.project_id, "acme", ["https://agent.acme.example"])
        r = httpx.post(
            f"{url}/v1/tasks/{ids['task']}/delegations",
            json={"org": "acme", "agent_url": f"{c.url}/x?"},
            headers=auth,
        )
        assert r.status_code == 400 and "not on an origin" in r.json()["detail"]
        assert c.lines == []  # not one request reached it
        world.coord.set_remote_origins(world.admin, world.project_id, "acme", [c.url])  # named: allowed
        r = httpx.post(
            f"{url}/v1/tasks/{ids['task']}/delegations",
            json={"org": "acme", "agent_url": c.url},
            headers=auth,
        )
        assert r.status_code == 400 and "no agent card" in r.json()["detail"]
        assert c.lines == ["GET /.well-known/agent-card.json HTTP/1.1"]


# a slow remote ---------------------------------------------------------------------------
@dataclass
class Slow:
    url: str
    connections: int = 0


@contextmanager
def slow_card_server(interval: float = 0.2) -> Iterator[Slow]:
    """Answers 200 with a 1 MB body, then sends it a byte every `interval` seconds."""
    port = free_port()
    slow = Slow(f"http://127.0.0.1:{port}")
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    tasks: set[asyncio.Task[None]] = set()

    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        slow.connections += 1
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"
            )
            while not stop.is_set():
                writer.write(b" ")
                await writer.drain()
                await asyncio.sleep(interval)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
            await asyncio.shield(writer.wait_closed())

    async def main(ready: threading.Event) -> None:
        server = await asyncio.start_server(trickle, "127.0.0.1", port, backlog=256)
        ready.set()
        async with server:
            await stop.wait()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    ready = threading.Event()
    t = threading.Thread(target=lambda: loop.run_until_complete(main(ready)), daemon=True)
    t.start()
    assert ready.wait(10)
    try:
        yield slow
    finally:
        loop.call_soon_threadsafe(stop.set)
        t.join(timeout=10)
        loop.close()


def test_the_card_fetch_has_a_total_deadline() -> None:
    async def go(url: str) -> None:
        transport = CappedTransport(httpx.AsyncHTTPTransport(), 2_000_000, deadline=1.0)
        async with httpx.AsyncClient(transport=transport, timeout=30) as http:
            await http.get(url)  # each read is quick: only the total deadline can end it

    with slow_card_server(0.05) as slow, pytest.raises(DeadlineExceeded):
        asyncio.run(go(slow.url))


def test_a_slow_card_server_does_not_stall_another_projects_reads(tmp_path: Path) -> None:
    """48 delegations to a card server sending a byte every 0.2 s (more than the 40 threads
    of the request pool) while another project's `GET /tasks` is served: it answers while
    every delegation is still waiting on the remote, and each delegation ends at its deadline."""
    world = build_world(tmp_path, time.time)
    c = world.coord
    c.add_remote_org(world.admin, world.project_id, "acme", {KEY.kid: KEY.public})
    task = world.new_task("attest", criteria={"attested": "a2a-acme@1"}, scope=["remote/**"])
    other = add_project(c, world.admin, time.time, "other")
    other.new_task("unrelated")
    settings = Settings(database_url=c.store.url, a2a_requester=False, a2a_request_timeout=20.0)
    token = issue_tokens(world)["admin"]
    auth = {"Authorization": f"Bearer {token}"}
    answers: list[tuple[float, int]] = []
    with slow_card_server() as slow, ServerThread(c, settings) as server:
        c.set_remote_origins(world.admin, world.project_id, "acme", [slow.url])

        def delegate() -> None:
            body = {"org": "acme", "agent_url": slow.url}
            r = httpx.post(
                f"{server.url}/v1/tasks/{task.id}/delegations", json=body, headers=auth, timeout=120
            )
            answers.append((time.monotonic(), r.status_code))

        threads = [threading.Thread(target=delegate) for _ in range(48)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while slow.connections < 48 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert slow.connections == 48  # every delegation is waiting on the remote at once
        r = httpx.get(f"{server.url}/v1/projects/{other.project_id}/tasks", headers=auth, timeout=30)
        listed = time.monotonic()
        assert r.status_code == 200 and len(r.json()) == 1
        assert answers == []  # answered while all 48 still waited
        for t in threads:
            t.join(timeout=120)
    assert len(answers) == 48 and all(code == 400 for _, code in answers)
    assert all(at > listed for at, _ in answers)


def test_resolution_sees_real_addresses() -> None:
    """The default resolver (the event loop's getaddrinfo): loopback is not public."""
    guard = OriginGuard(httpx.MockTransport(lambda r: httpx.Response(200)), ("http://localhost.test:80",))
    with pytest.raises((OriginRefused, httpx.ConnectError)):
        asyncio.run(_get(guard, "http://localhost.test/x"))
    assert not ipaddress.ip_address("127.0.0.1").is_global


def test_check_origin_refuses_an_organisation_without_origins(tmp_path: Path) -> None:
    from studiolo.workers.a2a.requester import check_origin

    world = build_world(tmp_path, time.time)
    org = world.coord.add_remote_org(world.admin, world.project_id, "acme", {KEY.kid: KEY.public})
    with pytest.raises(InvalidRequest) as err:
        check_origin("https://agent.acme.example", org)
    assert "names no origins" in err.value.detail
