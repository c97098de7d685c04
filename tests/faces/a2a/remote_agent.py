"""The other organisation: a real A2A agent built with a2a-sdk (its own server, task store and
executor), whose card is signed with the SDK's signer and whose artifact manifest is signed
with its own key. Scenarios decide what it declares, when detached bytes become available,
whether they match, and how the task ends."""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import jwt
import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Artifact,
    Part,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.signing import create_agent_card_signer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from studiolo.core.canonical import canonical_json
from studiolo.core.remote import MANIFEST_EXTENSION, MANIFEST_ID
from studiolo.faces.http.server import free_port
from studiolo.jws import sign_detached
from studiolo.keys import ServiceKey


@dataclass
class Scenario:
    """inline: sent in the task; detached: named only in the manifest, served at /files/<name>
    once released (`serve` overrides the bytes served: tampering, or a file served short).

    `chunks`: each inline artifact is sent in that many parts (`append`); `sent` overrides the
    inline bytes sent (tampering). `held` is what appears only `lag` seconds after the terminal
    state (never, when `lag` is None): "manifest" (the manifest and the inline artifacts, as the
    a2a-sdk emits them when an executor ends before adding artifacts) or "last_chunk" (the last
    part of every inline artifact: still growing)."""

    inline: dict[str, bytes] = field(default_factory=lambda: {"summary.txt": b"attested\n"})
    detached: dict[str, bytes] = field(default_factory=dict)
    serve: dict[str, bytes] = field(default_factory=dict)
    released: set[str] = field(default_factory=set)
    end: str = "complete"  # complete | fail | cancel
    chunks: int = 1
    sent: dict[str, bytes] = field(default_factory=dict)
    held: str = ""  # "" | "manifest" | "last_chunk"
    lag: float | None = 0.0
    manifest_key: ServiceKey | None = None  # None: the card key
    streaming: bool = False  # the card says it streams (SubscribeToTask works while it runs)
    work_seconds: float = 0.0  # how long it works before its artifacts and terminal state
    fetches: list[str] = field(default_factory=list)
    messages: list[Any] = field(default_factory=list)

    def release(self, name: str) -> None:
        self.released.add(name)


@dataclass
class RemoteAgent:
    url: str
    key: ServiceKey
    scenario: Scenario
    store: InMemoryTaskStore = field(default_factory=InMemoryTaskStore)

    @property
    def pinned(self) -> dict[str, str]:
        return {self.key.kid: self.key.public}


class _Executor(AgentExecutor):
    def __init__(self, agent: RemoteAgent) -> None:
        self.agent = agent
        self._late: list[asyncio.Task[None]] = []  # held-back artifacts, kept until they land

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        s = self.agent.scenario
        s.messages.append(context.message)
        assert context.task_id is not None and context.context_id is not None
        up = TaskUpdater(event_queue, context.task_id, context.context_id)
        if context.current_task is None:
            submitted = TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)
            first = Task(id=context.task_id, context_id=context.context_id, status=submitted)
            first.history.append(context.message)
            await event_queue.enqueue_event(first)
        await up.start_work()
        await asyncio.sleep(s.work_seconds)
        if s.held != "manifest":
            for name, data in s.inline.items():
                parts = _chunks(s.sent.get(name, data), s.chunks)
                for i, chunk in enumerate(parts[:-1] if s.held == "last_chunk" else parts):
                    part = Part(raw=chunk, filename=name)
                    await up.add_artifact([part], artifact_id=f"file:{name}", name=name, append=i > 0)
            await up.add_artifact(
                [Part(text=self._manifest(context.task_id), media_type="application/json")],
                artifact_id=MANIFEST_ID,
                name="signed artifact manifest",
                extensions=[MANIFEST_EXTENSION],
            )
        await {"complete": up.complete, "fail": up.failed, "cancel": up.cancel}[s.end]()
        if s.held and s.lag is not None:
            self._late.append(asyncio.create_task(self._after(context, s.lag)))

    async def _after(self, context: RequestContext, lag: float) -> None:
        """What was held back appears in the (already terminal) task `lag` seconds later."""
        await asyncio.sleep(lag)
        s = self.agent.scenario
        assert context.task_id is not None
        task = await self.agent.store.get(context.task_id, context.call_context)
        assert task is not None
        if s.held == "last_chunk":
            for art in task.artifacts:
                name = art.artifact_id.removeprefix("file:")
                if name in s.inline:
                    last = _chunks(s.sent.get(name, s.inline[name]), s.chunks)[-1]
                    art.parts.append(Part(raw=last, filename=name))
        else:
            for name, data in s.inline.items():
                parts = [Part(raw=c, filename=name) for c in _chunks(s.sent.get(name, data), s.chunks)]
                task.artifacts.append(Artifact(artifact_id=f"file:{name}", name=name, parts=parts))
            manifest = Part(text=self._manifest(context.task_id), media_type="application/json")
            task.artifacts.append(
                Artifact(artifact_id=MANIFEST_ID, parts=[manifest], extensions=[MANIFEST_EXTENSION])
            )
        await self.agent.store.save(task, context.call_context)

    def _manifest(self, task_id: str) -> str:
        s = self.agent.scenario
        entries = [_entry(f"file:{n}", n, d, "inline") for n, d in s.inline.items()]
        for n, d in s.detached.items():
            entries.append(_entry(f"detached:{n}", n, d, "detached") | {"url": f"{self.agent.url}/files/{n}"})
        m = {"type": "studiolo.a2a.artifact-manifest/v1", "a2a_task_id": task_id, "artifacts": entries}
        jws = sign_detached(s.manifest_key or self.agent.key, canonical_json(m))
        return canonical_json({"manifest": m, "jws": jws}).decode()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def _chunks(data: bytes, n: int) -> list[bytes]:
    """`data` in `n` consecutive parts (the last takes the remainder)."""
    step = max(1, len(data) // n)
    return [data[i * step : (i + 1) * step if i < n - 1 else len(data)] for i in range(n)]


def _entry(aid: str, name: str, data: bytes, delivery: str) -> dict[str, Any]:
    return {
        "artifact_id": aid,
        "name": name,
        "sha256": hashlib.sha256(data).hexdigest(),
        "size": len(data),
        "delivery": delivery,
    }


def _card(url: str, key: ServiceKey, streaming: bool) -> AgentCard:
    card = AgentCard(
        name="Acme attestation",
        description="attests compliance bundles",
        version="1.0",
        supported_interfaces=[
            AgentInterface(url=f"{url}/a2a/jsonrpc", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["application/octet-stream"],
        skills=[AgentSkill(id="attest", name="attest", description="attest a bundle", tags=["attest"])],
    )
    private = {
        "kty": "OKP",
        "crv": "Ed25519",
        "x": key.public,
        "d": key.to_text(),
        "kid": key.kid,
        "alg": "EdDSA",
    }
    signer = create_agent_card_signer(
        jwt.PyJWK(private), {"kid": key.kid, "alg": "EdDSA", "jku": None, "typ": "JOSE"}
    )
    return signer(card)


def _files(agent: RemoteAgent) -> Any:
    async def serve(request: Request) -> Response:
        s = agent.scenario
        name = request.path_params["name"]
        s.fetches.append(name)
        if name not in s.released or name not in s.detached:
            return Response(status_code=404)
        return Response(s.serve.get(name, s.detached[name]), media_type="application/octet-stream")

    return serve


@contextmanager
def remote_agent(scenario: Scenario, key: ServiceKey | None = None) -> Iterator[RemoteAgent]:
    """Serve the agent on a real socket in a thread for the duration of the block."""
    port = free_port()
    agent = RemoteAgent(f"http://127.0.0.1:{port}", key or ServiceKey.generate(), scenario)
    card = _card(agent.url, agent.key, scenario.streaming)
    handler = DefaultRequestHandler(_Executor(agent), agent.store, card)
    routes: list[Any] = [Route("/files/{name}", _files(agent), methods=["GET"])]
    routes += create_jsonrpc_routes(handler, "/a2a/jsonrpc")
    routes += create_agent_card_routes(card)
    app = Starlette(routes=routes)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the remote agent did not start"
        time.sleep(0.01)
    try:
        yield agent
    finally:
        server.should_exit = True
        thread.join(timeout=10)
