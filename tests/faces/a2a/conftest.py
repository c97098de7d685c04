"""A live Studiolo (real socket) with a requester, an intake template, and the SDK's client."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import jwt
import pytest
from a2a.client import ClientConfig, create_client
from a2a.client.client import Client as A2AClient
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, Task
from a2a.utils.signing import create_signature_verifier
from google.protobuf.json_format import ParseDict

from studiolo.client import Client
from studiolo.core.canonical import canonical_json
from studiolo.core.remote import MANIFEST_EXTENSION
from studiolo.faces.http.app import create_app
from studiolo.faces.http.server import ServerThread, free_port
from studiolo.settings import Settings
from tests.faces.helpers import Actors, complete, issue_tokens, submit, verify
from tests.world import World

EXT = MANIFEST_EXTENSION


@dataclass
class Live:
    world: World
    actors: Actors
    url: str
    requester_token: str
    skill: str

    def headers(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.requester_token}", "A2A-Extensions": EXT}

    @asynccontextmanager
    async def client(
        self, binding: str, streaming: bool, token: str | None = None
    ) -> AsyncIterator[A2AClient]:
        """The SDK's client; the card it uses is verified with nothing but the JWKS."""
        async with httpx.AsyncClient(headers=self.headers(token), timeout=30) as http:
            config = ClientConfig(
                streaming=streaming,
                polling=not streaming,
                httpx_client=http,
                supported_protocol_bindings=[binding],
            )
            client = await create_client(self.url, config, signature_verifier=jwks_verifier(self.url))
            try:
                yield client
            finally:
                await client.close()


@pytest.fixture
def live(world: World, monkeypatch: pytest.MonkeyPatch) -> Iterator[Live]:
    coord, admin, pid = world.coord, world.admin, world.project_id
    requester = coord.add_principal(admin, pid, "partner-org", "agent").principal
    coord.grant(admin, pid, requester.id, ["delegate"], ["src/**"])
    port = free_port()
    settings = Settings(database_url=coord.store.url, public_url=f"http://127.0.0.1:{port}")
    monkeypatch.setattr("studiolo.faces.http.server.create_app", _fast_app)
    with ServerThread(coord, settings, port=port) as server:
        actors = Actors(world, issue_tokens(world), url=server.url)
        token = coord.rotate_token(admin, requester.id).token
        body = {"description": "fix code under src/", "criteria": {"tests": "unit@1"}, "scope": ["src/**"]}
        auth = {"Authorization": f"Bearer {actors.tokens['admin']}"}
        r = httpx.put(f"{server.url}/a2a/admin/projects/{pid}/intakes/fix", json=body, headers=auth)
        assert r.status_code == 200, r.text
        try:
            yield Live(world, actors, server.url, token, r.json()["skill"])
        finally:
            actors.close()


def _fast_app(coordinator: Any, settings: Settings) -> Any:
    return create_app(coordinator, settings, event_poll_seconds=0.02)


def jwks_verifier(url: str) -> Any:
    """Verify a card with nothing but the service's JWKS."""
    keys = httpx.get(f"{url}/.well-known/jwks.json").json()["keys"]

    def key_for(kid: str | None, _jku: str | None) -> Any:
        return jwt.PyJWK({k: v for k, v in next(k for k in keys if k["kid"] == kid).items()})

    return create_signature_verifier(key_for, ["EdDSA"])


def verify_manifest(url: str, envelope_text: str) -> dict[str, Any]:
    """The manifest check another implementation would do: JWKS + RFC 8785 + Ed25519."""
    envelope = json.loads(envelope_text)
    manifest, jws = envelope["manifest"], envelope["jws"]
    header = json.loads(base64.urlsafe_b64decode(jws["protected"] + "=" * (-len(jws["protected"]) % 4)))
    assert header["alg"] == "EdDSA"
    keys = httpx.get(f"{url}/.well-known/jwks.json").json()["keys"]
    jwk = jwt.PyJWK(next(k for k in keys if k["kid"] == header["kid"]))
    payload = base64.urlsafe_b64encode(canonical_json(manifest)).rstrip(b"=").decode()
    token = f"{jws['protected']}.{payload}.{jws['signature']}"
    jwt.api_jws.decode_complete(token, key=jwk, algorithms=["EdDSA"])  # raises if it does not verify
    return dict(manifest)


def message(text: str, skill: str | None, data: dict[str, Any] | None = None) -> SendMessageRequest:
    msg = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)])
    if data:
        msg.parts.append(ParseDict({"data": data}, Part()))
    if skill:
        msg.metadata.update({"skill": skill, "title": text[:40]})
    return SendMessageRequest(message=msg)


def work_task(live: Live, task_id: str, result: str = "pass", files: dict[str, bytes] | None = None) -> Any:
    """A Studiolo agent and verifier do the delegated task through the HTTP API."""
    agent: Client = live.actors.client("agent")
    verifier: Client = live.actors.client("verifier")
    task = agent.task(task_id).task
    attempt = agent.claim(task_id)
    cand = submit(agent, attempt, files or {"src/answer.txt": b"42\n"})
    receipt = verify(verifier, live.world, cand, result)
    return complete(agent, task, attempt, cand, [receipt.id])  # type: ignore[arg-type]


def studiolo_task_id(task: Task) -> str:
    return str(dict(task.status.message.metadata)["studioloTaskId"])


def in_thread(fn: Any, *args: Any) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(fn(*args))
        except Exception as exc:  # reported to the test, not swallowed
            out.append(exc)

    t = threading.Thread(target=run)
    t.start()
    return t, out


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def send(client: A2AClient, request: SendMessageRequest) -> list[Any]:
    """Every StreamResponse of one send (a single Task when polling)."""
    return [event async for event in client.send_message(request)]
