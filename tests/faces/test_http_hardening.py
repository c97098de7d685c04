"""Issue 9, the HTTP server's findings: slow sockets, bodies read before the caller is known,
event streams that outlive their token. Real uvicorn sockets where the finding was about them."""

from __future__ import annotations

import contextlib
import gc
import json
import resource
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import httpx
import pytest
from starlette.types import Receive, Scope, Send

from studiolo import client as client_module
from studiolo.faces.http.limits import BodyCaps, InFlightLimit
from studiolo.faces.http.server import (
    GC_OLD_THRESHOLD,
    GC_YOUNG_THRESHOLD,
    ServerThread,
    raise_open_files_limit,
    settle_heap,
)
from studiolo.settings import Settings
from tests.faces.helpers import Actors, complete, in_process, issue_tokens, new_task, submit, verify
from tests.world import World

HALF_REQUEST = b"POST /v1/blobs HTTP/1.1\r\nHost: studiolo\r\nContent-Type: application/oct"


@contextlib.contextmanager
def _serving(world: World, **overrides: Any) -> Iterator[tuple[Actors, ServerThread]]:
    settings = Settings(database_url=world.coord.store.url, **overrides)
    with ServerThread(world.coord, settings) as server:
        actors = Actors(world, issue_tokens(world), url=server.url)
        try:
            yield actors, server
        finally:
            actors.close()


def _connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))


def _closed_by_server(sock: socket.socket, wait: float) -> bool:
    """True once the server has closed the socket (EOF or reset); False if still open after `wait`."""
    sock.settimeout(wait)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def _still_open(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        sock.recv(1)
    except BlockingIOError:
        return True
    except ConnectionResetError:
        return False
    return False


def _response_head(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Read one response's status, headers and (Content-Length) body from a raw socket."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before a response: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    while len(body) < int(headers.get("content-length", "0")):
        body += sock.recv(65536)
    return int(lines[0].split()[1]), headers, body


# slowloris -------------------------------------------------------------------------------
def test_slowloris_1000_half_requests_do_not_refuse_a_task(world: World) -> None:
    """1,000 sockets from 20 addresses each send half a request and hold it. The server still
    completes a task for a legitimate client, refuses a 51st socket from one address, and closes
    every half request at its header deadline even though each trickles another byte."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 3000:
        pytest.skip(f"the hard limit on open files ({hard}) is too low for 2 x 1,000 sockets")
    raise_open_files_limit(4096)  # client and server sockets both live in this process
    with _serving(world, header_timeout_seconds=10.0, max_connections_per_address=50) as (live, server):
        sources = [f"127.0.0.{i}" for i in range(2, 22)]
        held = [_connect(server.port, src) for src in sources for _ in range(50)]
        try:
            for sock in held:
                sock.sendall(HALF_REQUEST)
            surplus = _connect(server.port, sources[0])
            assert _closed_by_server(surplus, 5), "the 51st connection from one address stays open"
            surplus.close()

            admin, agent, ver = live.client("admin"), live.client("agent"), live.client("verifier")
            task = new_task(admin)
            attempt = agent.claim(task.id)
            cand = submit(agent, attempt, {"src/answer.txt": b"42\n"})
            receipt = verify(ver, live.world, cand)
            done = complete(agent, task, attempt, cand, [receipt.id])
            assert done.completion.revisions == {"src/answer.txt": 2}
            assert sum(_still_open(s) for s in held) == len(held), "the task did not run while they were held"

            for sock in held:
                sock.setblocking(True)
                sock.sendall(b"e")  # a trickle does not extend the header deadline
            assert all(_closed_by_server(s, 20) for s in held), "a half request outlived its deadline"
        finally:
            for sock in held:
                sock.close()


def test_a_body_that_stops_arriving_is_cut_off(world: World) -> None:
    with _serving(world, body_timeout_seconds=1.0) as (live, server):
        sock = _connect(server.port)
        with sock:
            head = (
                "POST /v1/blobs HTTP/1.1\r\nHost: studiolo\r\n"
                f"Authorization: Bearer {live.tokens['agent']}\r\n"
                "Content-Type: application/octet-stream\r\nContent-Length: 1000\r\n\r\n"
            )
            sock.sendall(head.encode() + b"x" * 10)
            assert _closed_by_server(sock, 15), "a stalled body kept its connection"


# keep-alive ------------------------------------------------------------------------------
HEALTH = b"GET /healthz HTTP/1.1\r\nHost: studiolo\r\n\r\n"


def test_an_idle_connection_lives_for_the_keep_alive_not_the_header_deadline(world: World) -> None:
    """Between requests a connection may idle past the header deadline (an agent's heartbeat
    reuses it); past the keep-alive time it is closed."""
    with _serving(world, header_timeout_seconds=1.0, keep_alive_seconds=4.0) as (_, server):
        sock = _connect(server.port)
        with sock:
            sock.sendall(HEALTH)
            assert _response_head(sock)[0] == 200
            assert not _closed_by_server(sock, 2.5), "closed at the header deadline while idle"
            sock.sendall(HEALTH)
            assert _response_head(sock)[0] == 200  # the same connection, reused
            assert _closed_by_server(sock, 15), "an idle connection outlived its keep-alive"


def test_a_next_request_that_stalls_has_the_header_deadline(world: World) -> None:
    with _serving(world, header_timeout_seconds=1.0, keep_alive_seconds=60.0) as (_, server):
        sock = _connect(server.port)
        with sock:
            sock.sendall(HEALTH)
            assert _response_head(sock)[0] == 200
            sock.sendall(HALF_REQUEST)
            assert _closed_by_server(sock, 15), "a half request after a response kept its connection"


def test_idle_connections_count_against_the_per_address_cap(world: World) -> None:
    with _serving(world, max_connections_per_address=2, keep_alive_seconds=60.0) as (_, server):
        idle = [_connect(server.port, "127.0.0.9") for _ in range(2)]
        try:
            for sock in idle:
                sock.sendall(HEALTH)
                assert _response_head(sock)[0] == 200
            surplus = _connect(server.port, "127.0.0.9")
            assert _closed_by_server(surplus, 5), "a third connection beside two idle ones stayed open"
            surplus.close()
            assert all(_still_open(s) for s in idle)
        finally:
            for sock in idle:
                sock.close()


@pytest.mark.slow
def test_the_client_reuses_its_connection_across_a_heartbeat_period(world: World) -> None:
    """The Python client keeps an idle connection longer than httpx's 5 s default and shorter
    than the server's keep-alive: two calls 6 s apart share one connection."""
    assert Settings().keep_alive_seconds > client_module._KEEP_ALIVE_SECONDS
    with _serving(world) as (live, _):
        http = live.client("agent")._http

        def local_port() -> object:
            response = http.get("/healthz")
            return response.extensions["network_stream"].get_extra_info("client_addr")

        first = local_port()
        time.sleep(6)
        assert local_port() == first


# authenticate before the body; caps per route -------------------------------------------
def test_large_json_without_a_token_is_401_before_the_body_is_read(world: World) -> None:
    with _serving(world) as (_, server), _connect(server.port) as sock:
        head = (
            f"POST /v1/tasks/tsk_x/complete HTTP/1.1\r\nHost: studiolo\r\nContent-Type: application/json\r\n"
            f"Content-Length: {16 * 1024 * 1024}\r\n\r\n"
        )
        sock.sendall(head.encode() + b'{"request_id": "' + b"a" * 1000)  # 1 KB of the 16 MiB
        sock.settimeout(10)
        status, headers, body = _response_head(sock)  # answered while 16 MiB are still unsent
    assert status == 401 and headers["content-type"] == "application/problem+json"
    assert headers["www-authenticate"] == "Bearer"
    assert json.loads(body)["reason"] == "unauthenticated"


def test_a_bad_token_with_a_body_is_401(actors: Actors) -> None:
    with httpx.Client(base_url=actors.url, transport=actors.transport) as http:
        r = http.post("/v1/blobs", content=b"x", headers={"Authorization": "Bearer stl_nope"})
    assert r.status_code == 401 and r.json()["reason"] == "unauthenticated"


def test_an_oversized_completion_is_413_before_its_body_is_sent(world: World) -> None:
    with _serving(world, max_completion_bytes=4096) as (live, server), _connect(server.port) as sock:
        head = (
            f"POST /v1/tasks/tsk_x/complete HTTP/1.1\r\nHost: studiolo\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {live.tokens['agent']}\r\nContent-Length: 4097\r\n\r\n"
        )
        sock.sendall(head.encode())
        sock.settimeout(10)
        status, headers, body = _response_head(sock)
    assert status == 413 and headers["content-type"] == "application/problem+json"
    assert json.loads(body)["reason"] == "payload_too_large"


def test_body_caps_are_per_route_declared_or_streamed(world: World) -> None:
    settings = Settings(
        database_url=world.coord.store.url, max_completion_bytes=2048, max_candidate_bytes=8192
    )
    payload = b'{"pad": "' + b"p" * 4000 + b'"}'  # above the completion cap, below the candidates cap

    def streamed() -> Iterator[bytes]:
        yield from (payload[:2000], payload[2000:])

    with in_process(world, settings) as a, httpx.Client(base_url=a.url, transport=a.transport) as http:
        http.headers["Authorization"] = f"Bearer {a.tokens['agent']}"
        json_type = {"Content-Type": "application/json"}
        declared = http.post("/v1/tasks/tsk_x/complete", content=payload, headers=json_type)
        chunked = http.post("/v1/tasks/tsk_x/complete", content=streamed(), headers=json_type)
        candidate = http.post("/v1/attempts/att_x/candidates", content=payload, headers=json_type)
    for r in (declared, chunked):
        assert r.status_code == 413 and r.json()["reason"] == "payload_too_large"
    assert candidate.status_code == 422  # read and parsed: the candidates cap is larger


def test_body_caps_from_settings() -> None:
    caps = BodyCaps.from_settings(Settings(max_request_bytes=10_000_000, max_blob_bytes=20_000_000))
    assert caps.for_request("POST", "/v1/blobs") == 10_000_000  # the global ceiling bounds every route
    assert caps.for_request("POST", "/v1/tasks/t1/complete") == Settings.max_completion_bytes
    assert caps.for_request("POST", "/v1/attempts/a1/candidates") == Settings.max_candidate_bytes
    assert caps.for_request("PUT", "/v1/projects/p/artifacts/x") == Settings.max_json_bytes
    assert caps.for_request("POST", "/mcp") == Settings.max_candidate_bytes  # files inline
    assert caps.for_request("POST", "/a2a/jsonrpc") == Settings.max_json_bytes
    assert caps.for_request("POST", "/ui/sign-in") == Settings.max_json_bytes


@pytest.mark.parametrize("path", ["/mcp", "/a2a/jsonrpc", "/a2a/rest/message:send"])
def test_large_json_without_a_token_is_401_before_the_body_is_read_on_mcp_and_a2a(
    world: World, path: str
) -> None:
    declared = 512 * 1024  # under each route's cap: only the missing token refuses it
    with _serving(world) as (_, server), _connect(server.port) as sock:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: studiolo\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nA2A-Version: 1.0\r\n"
            f"Content-Length: {declared}\r\n\r\n"
        )
        sock.sendall(head.encode() + b'{"jsonrpc": "2.0", "id": "' + b"a" * 1000)
        sock.settimeout(10)
        status, headers, _ = _response_head(sock)  # answered while the rest is still unsent
    assert status == 401 and headers["www-authenticate"].startswith("Bearer")


CAPPED = [("/mcp", "max_candidate_bytes"), ("/a2a/jsonrpc", "max_json_bytes")]


@pytest.mark.parametrize(("path", "cap"), CAPPED)
def test_mcp_and_a2a_bodies_are_capped_even_with_a_token(world: World, path: str, cap: str) -> None:
    with _serving(world, **{cap: 4096}) as (live, server), _connect(server.port) as sock:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: studiolo\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {live.tokens['agent']}\r\nContent-Length: 4097\r\n\r\n"
        )
        sock.sendall(head.encode())
        sock.settimeout(10)
        status, _, body = _response_head(sock)
    assert status == 413 and json.loads(body)["reason"] == "payload_too_large"


# requests in flight, not sockets ----------------------------------------------------------
def test_the_in_flight_limit_counts_requests_until_their_response_starts() -> None:
    gate, streaming = anyio.Event(), anyio.Event()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["path"] == "/slow":
            await gate.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        if scope["path"] == "/stream":
            await send({"type": "http.response.body", "body": b"started", "more_body": True})
            streaming.set()
            await gate.wait()
        await send({"type": "http.response.body", "body": b"ok"})

    async def main() -> list[int]:
        limited = InFlightLimit(app, max_requests=2)
        transport = httpx.ASGITransport(app=limited)
        statuses: list[int] = []
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:

            async def get(path: str) -> None:
                statuses.append((await http.get(path)).status_code)

            async with anyio.create_task_group() as tg:
                tg.start_soon(get, "/stream")
                with anyio.fail_after(5):
                    await streaming.wait()
                    assert limited.active == 0  # a started response holds no slot
                    tg.start_soon(get, "/slow")
                    tg.start_soon(get, "/slow")
                    while limited.active < 2:
                        await anyio.sleep(0.01)
                refused = await http.get("/fast")
                assert refused.status_code == 503 and refused.json()["reason"] == "overloaded"
                assert refused.headers["retry-after"] == "1"
                gate.set()
            await get("/fast")
        assert limited.active == 0
        return statuses

    assert anyio.run(main) == [200, 200, 200, 200]


def test_over_the_limit_requests_queue_in_order_and_a_full_or_stale_queue_is_refused() -> None:
    """Two slots, two places in the queue: the queued requests get the freed slots oldest
    first; a fifth is refused at once (queue full); a waiter whose wait runs out gets 503."""
    gates = {name: anyio.Event() for name in ("a", "b", "c", "d")}
    started: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        name = scope["path"].strip("/")
        started.append(name)
        if name in gates:
            await gates[name].wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": name.encode()})

    async def until(condition: Callable[[], bool]) -> None:
        with anyio.fail_after(5):
            while not condition():
                await anyio.sleep(0.005)

    def client(limit: InFlightLimit) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.ASGITransport(app=limit), base_url="http://t")

    async def queue() -> dict[str, int]:
        limited = InFlightLimit(app, max_requests=2, max_waiting=2, wait_seconds=5)
        statuses: dict[str, int] = {}
        async with client(limited) as http:

            async def get(path: str) -> None:
                statuses[path] = (await http.get(path)).status_code

            async with anyio.create_task_group() as tg:
                for name, waiting in (("a", 0), ("b", 0), ("c", 1), ("d", 2)):  # c, then d, queue

                    def arrived(n: str = name, w: int = waiting) -> bool:
                        return limited.waiting == w if w else n in started  # running, or queued

                    tg.start_soon(get, f"/{name}")
                    await until(arrived)
                assert (limited.active, limited.waiting, started) == (2, 2, ["a", "b"])
                refused = await http.get("/e")  # the queue is full
                assert refused.status_code == 503 and refused.json()["reason"] == "overloaded"
                gates["b"].set()  # b's slot goes to c, the oldest waiter
                await until(lambda: started == ["a", "b", "c"])
                gates["a"].set()
                await until(lambda: started == ["a", "b", "c", "d"])
                assert (limited.active, limited.waiting) == (2, 0)
                gates["c"].set()
                gates["d"].set()
        assert (limited.active, limited.waiting) == (0, 0)
        return statuses

    async def stale() -> int:
        short = InFlightLimit(app, max_requests=1, max_waiting=4, wait_seconds=0.05)
        gates["a"] = anyio.Event()
        async with client(short) as http, anyio.create_task_group() as tg:
            tg.start_soon(http.get, "/a")
            await until(lambda: short.active == 1)
            status = (await http.get("/x")).status_code  # waits 50 ms, then is refused
            with anyio.move_on_after(0.01):  # a client that goes away while it waits
                await http.get("/y")
            assert short.waiting == 0 and "x" not in started and "y" not in started
            gates["a"].set()
        assert (short.active, short.waiting) == (0, 0)
        return status

    assert anyio.run(queue) == {"/a": 200, "/b": 200, "/c": 200, "/d": 200}
    assert anyio.run(stale) == 503


# event streams ------------------------------------------------------------------------------
def _stream_until_end(http: httpx.Client, url: str, token: str, on_open: object) -> tuple[list[str], float]:
    """Follow a stream; call `on_open()` once it is open; return its lines and the seconds from
    `on_open` to the stream's end. A stream that stays quiet for 5 s fails the read."""
    lines: list[str] = []
    headers = {"Authorization": f"Bearer {token}"}
    with http.stream("GET", url, headers=headers, timeout=httpx.Timeout(10, read=5)) as r:
        assert r.status_code == 200
        it = r.iter_lines()
        lines.append(next(it))
        assert callable(on_open)
        on_open()
        start = time.monotonic()
        lines.extend(it)
        return lines, time.monotonic() - start


@pytest.mark.parametrize("revoke", ["token", "grant"])
def test_revocation_ends_an_open_event_stream(world: World, revoke: str) -> None:
    with _serving(world) as (live, _), httpx.Client(base_url=live.url) as http:
        admin = live.client("admin")
        url = f"/v1/projects/{world.project_id}/events/stream"

        def revoke_now() -> None:
            if revoke == "token":
                admin.revoke_tokens(world.agent.id)
            else:
                admin.revoke_grant(world.grants["agent_read"])

        lines, seconds = _stream_until_end(http, url, live.tokens["agent"], revoke_now)
    assert "event: error" in lines
    error = json.loads(lines[lines.index("event: error") + 1].removeprefix("data: "))
    assert error["reason"] == ("unauthenticated" if revoke == "token" else "not_authorized")
    assert seconds < 5  # ended by the revocation (polled every 0.5 s), not by a timeout


def test_event_streams_are_capped_per_principal(world: World) -> None:
    with _serving(world, max_streams_per_principal=2) as (live, _), httpx.Client(base_url=live.url) as http:
        url = f"/v1/projects/{world.project_id}/events/stream"
        agent = {"Authorization": f"Bearer {live.tokens['agent']}"}
        with contextlib.ExitStack() as open_streams:
            first = open_streams.enter_context(http.stream("GET", url, headers=agent))
            second = open_streams.enter_context(http.stream("GET", url, headers=agent))
            assert (first.status_code, second.status_code) == (200, 200)
            third = http.get(url, headers=agent)
            assert third.status_code == 429 and third.headers["content-type"] == "application/problem+json"
            assert third.json()["reason"] == "too_many_streams"
            other = {"Authorization": f"Bearer {live.tokens['agent2']}"}
            with http.stream("GET", url, headers=other) as theirs:
                assert theirs.status_code == 200  # the cap is per principal
            first.close()  # hanging up gives the slot back
            deadline = time.monotonic() + 10
            while (again := http.get(f"{url}?timeout=0.1", headers=agent)).status_code == 429:
                assert time.monotonic() < deadline, "a closed stream kept its slot"
                time.sleep(0.1)
            assert again.status_code == 200


def test_settle_heap_freezes_start_up_and_raises_the_thresholds() -> None:
    """What `serve` does before serving (so full collections do not scan start-up's objects)."""
    before = gc.get_threshold()
    try:
        settle_heap()
        assert gc.get_freeze_count() > 10_000  # the modules and everything built so far
        assert gc.get_threshold() == (GC_YOUNG_THRESHOLD, before[1], GC_OLD_THRESHOLD)
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
