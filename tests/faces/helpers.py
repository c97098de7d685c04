"""Shared by the face tests: an in-process sync transport, the actors of a world with their
tokens, and the steps of a history done through the Python client."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from typing import Any

import anyio.from_thread
import httpx
from anyio.from_thread import BlockingPortal
from starlette.applications import Starlette

from studiolo.api import responses as s
from studiolo.client import Client, Completed
from studiolo.faces.http.app import create_app
from studiolo.settings import Settings
from tests.world import World

NAMES = ("admin", "agent", "agent2", "human", "verifier")


class PortalTransport(httpx.BaseTransport):
    """A blocking httpx transport into an ASGI app, through an anyio portal (like TestClient)."""

    def __init__(self, app: Starlette) -> None:
        self._asgi = httpx.ASGITransport(app=app)
        self._stack = ExitStack()
        self._portal: BlockingPortal = self._stack.enter_context(anyio.from_thread.start_blocking_portal())

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if not isinstance(request.stream, httpx.AsyncByteStream):
            request.stream = _AsyncOver(request.stream)

        async def call() -> httpx.Response:
            response = await self._asgi.handle_async_request(request)
            body = b"".join([chunk async for chunk in response.stream])  # type: ignore[union-attr]
            return httpx.Response(response.status_code, headers=response.headers, content=body)

        return self._portal.call(call)

    def close(self) -> None:
        """Clients sharing this transport close it when they close: keep the portal running."""

    def shutdown(self) -> None:
        self._stack.close()


class _AsyncOver(httpx.AsyncByteStream):
    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._stream:
            yield chunk


@dataclass
class Actors:
    """The world's principals with bearer tokens, and clients for them (in-process or socket)."""

    world: World
    tokens: dict[str, str]
    url: str = "http://studiolo.test"
    transport: httpx.BaseTransport | None = None
    _clients: list[Client] = field(default_factory=list)

    def client(self, name: str) -> Client:
        c = Client(self.url, self.tokens[name], project=self.world.project_id, transport=self.transport)
        self._clients.append(c)
        return c

    def close(self) -> None:
        for c in self._clients:
            c.close()


def issue_tokens(world: World) -> dict[str, str]:
    coord, admin = world.coord, world.admin
    who = {"admin": admin, "agent": world.agent, "agent2": world.agent2, "human": world.human}
    who["verifier"] = world.verifier
    return {name: coord.rotate_token(admin, p.id).token for name, p in who.items()}


def in_process(world: World, settings: Settings | None = None) -> AbstractContextManager[Actors]:
    from contextlib import contextmanager

    @contextmanager
    def run() -> Iterator[Actors]:
        app = create_app(world.coord, settings or Settings(database_url=world.coord.store.url))
        transport = PortalTransport(app)
        actors = Actors(world, issue_tokens(world), transport=transport)
        try:
            yield actors
        finally:
            actors.close()
            transport.shutdown()

    return run()


# steps of a history, through the client --------------------------------------------------
def new_task(
    admin: Client, title: str = "double the number", scope: tuple[str, ...] = ("src/**",)
) -> s.TaskOut:
    return admin.create_task(title, criteria={"tests": "unit@1"}, scope=scope)


def submit(
    c: Client, attempt: s.AttemptOut, files: dict[str, bytes | None], reads: tuple[str, ...] = ()
) -> s.CandidateOut:
    deps = {p: c.revision(p) for p in reads}
    digests = {p: (c.put_blob(b).digest if b is not None else None) for p, b in files.items()}
    bases = {p: c.revision(p) for p in files}
    return c.submit_candidate(attempt.id, digests, bases, deps)


def verify(v: Client, world: World, cand: s.CandidateOut, result: str = "pass") -> s.ReceiptOut:
    return v.sign_receipt(cand.id, "tests", result, world.verifier_key, issued_at_ms=int(time.time() * 1000))


def complete(
    c: Client,
    task: s.TaskOut,
    attempt: s.AttemptOut,
    cand: s.CandidateOut,
    evidence: list[str],
    request_id: str | None = None,
    **override: Any,
) -> Completed:
    args: dict[str, Any] = {
        "request_id": request_id or f"{attempt.id}:{cand.id}",
        "attempt_id": attempt.id,
        "fence": attempt.fence,
        "contract_hash": task.contract_hash,
        "candidate_id": cand.id,
        "evidence": evidence,
    }
    args.update(override)
    return c.complete(task.id, **args)
