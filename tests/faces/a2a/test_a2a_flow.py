"""The SDK's real client against the A2A face over a socket: a delegated task goes SUBMITTED
→ WORKING → COMPLETED while a Studiolo agent and verifier work it through the API, and every
artifact and the signed manifest arrive before COMPLETED."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import time
from typing import Any

import httpx
import pytest
from a2a.types.a2a_pb2 import GetTaskRequest, SubscribeToTaskRequest, Task, TaskState
from a2a.utils.errors import TaskNotFoundError

from studiolo.core.remote import MANIFEST_EXTENSION, MANIFEST_ID
from studiolo.faces.a2a.mapping import RECEIPT_ID
from studiolo.faces.http.server import ServerThread, free_port
from studiolo.settings import Settings
from tests.faces.a2a.conftest import (
    Live,
    in_thread,
    message,
    run,
    send,
    studiolo_task_id,
    verify_manifest,
    work_task,
)

BINDINGS = ["JSONRPC", "HTTP+JSON"]
S = TaskState


def _check_artifacts(
    live: Live, artifacts: list[Any], file_id: str = "file:src/answer.txt"
) -> dict[str, Any]:
    """Every artifact is listed in the manifest with its SHA-256 and size; the manifest is last."""
    assert artifacts[-1].artifact_id == MANIFEST_ID
    assert list(artifacts[-1].extensions) == [MANIFEST_EXTENSION]
    manifest = verify_manifest(live.url, artifacts[-1].parts[0].text)
    listed = {e["artifact_id"]: e for e in manifest["artifacts"]}
    assert set(listed) == {a.artifact_id for a in artifacts[:-1]}
    for a in artifacts[:-1]:
        part = a.parts[0]
        if part.HasField("raw"):
            data = part.raw
        elif part.HasField("url"):
            data = httpx.get(part.url, headers=live.headers()).content
        else:
            data = part.text.encode()
        assert hashlib.sha256(data).hexdigest() == listed[a.artifact_id]["sha256"]
        assert len(data) == listed[a.artifact_id]["size"]
    assert RECEIPT_ID in listed and file_id in listed
    return manifest


@pytest.mark.parametrize("binding", BINDINGS)
def test_streaming_submitted_working_completed(live: Live, binding: str) -> None:
    async def go() -> tuple[list[tuple[str, Any]], Any]:
        events: list[tuple[str, Any]] = []
        worker = None
        async with live.client(binding, streaming=True) as client:
            async for ev in client.send_message(message("answer 42", live.skill)):
                kind = ev.WhichOneof("payload")
                events.append((kind, getattr(ev, kind)))
                if kind == "task" and worker is None:
                    worker = in_thread(work_task, live, studiolo_task_id(ev.task))
        assert worker is not None
        await asyncio.to_thread(worker[0].join)
        return events, worker[1]

    events, worked = run(go())
    assert not isinstance(worked[0], Exception), worked
    states = [e.status.state for k, e in events if k in ("task", "status_update")]
    assert states[0] == S.TASK_STATE_SUBMITTED and states[-1] == S.TASK_STATE_COMPLETED
    assert S.TASK_STATE_WORKING in states
    assert states.count(S.TASK_STATE_COMPLETED) == 1
    # every artifact (and the manifest) strictly before the terminal status
    kinds = [k for k, _ in events]
    last_status = len(kinds) - 1
    assert kinds[last_status] == "status_update"
    artifacts = [e.artifact for k, e in events if k == "artifact_update"]
    assert all(i < last_status for i, k in enumerate(kinds) if k == "artifact_update")
    _check_artifacts(live, artifacts)


@pytest.mark.parametrize("binding", BINDINGS)
def test_polling_completed_task_carries_every_artifact(live: Live, binding: str) -> None:
    async def go() -> list[Task]:
        async with live.client(binding, streaming=False) as client:
            first = (await send(client, message("answer 42", live.skill)))[0].task
            seen = [first]
            worker = in_thread(work_task, live, studiolo_task_id(first))
            while seen[-1].status.state not in (S.TASK_STATE_COMPLETED, S.TASK_STATE_FAILED):
                await asyncio.sleep(0.02)
                seen.append(await client.get_task(GetTaskRequest(id=first.id)))
            await asyncio.to_thread(worker[0].join)
        return seen

    seen = run(go())
    assert seen[0].status.state == S.TASK_STATE_SUBMITTED
    assert seen[-1].status.state == S.TASK_STATE_COMPLETED
    for t in seen[:-1]:
        assert not t.artifacts  # nothing authoritative before the contract held
    _check_artifacts(live, list(seen[-1].artifacts))


def test_resubscribe_and_a_large_file_as_a_url_part(live: Live) -> None:
    big = bytes(range(256)) * 1200  # 300 KiB: above the inline bound, served by Studiolo

    async def go() -> list[tuple[str, Any]]:
        async with live.client("HTTP+JSON", streaming=True) as client:
            first = await client.get_task(GetTaskRequest(id=await _started(live)))
            worker = in_thread(work_task, live, studiolo_task_id(first), "pass", {"src/big.bin": big})
            events = []
            async for ev in client.subscribe(SubscribeToTaskRequest(id=first.id)):
                kind = ev.WhichOneof("payload")
                events.append((kind, getattr(ev, kind)))
            await asyncio.to_thread(worker[0].join)
        return events

    events = run(go())
    kinds = [k for k, _ in events]
    assert kinds[0] == "task" and kinds[-1] == "status_update"
    assert events[-1][1].status.state == S.TASK_STATE_COMPLETED
    artifacts = [e.artifact for k, e in events if k == "artifact_update"]
    big_part = next(a for a in artifacts if a.artifact_id == "file:src/big.bin").parts[0]
    assert big_part.HasField("url") and not big_part.raw
    manifest = _check_artifacts(live, artifacts, "file:src/big.bin")
    assert {e["delivery"] for e in manifest["artifacts"]} == {"inline", "url"}


async def _started(live: Live) -> str:
    """A delegation sent by a polling client that then goes away."""
    async with live.client("JSONRPC", streaming=False) as client:
        return str((await send(client, message("a big one", live.skill)))[0].task.id)


def test_only_an_admin_defines_intakes(live: Live) -> None:
    url = f"{live.url}/a2a/admin/projects/{live.world.project_id}/intakes/sneaky"
    body = {"criteria": {"tests": "unit@1"}, "scope": ["**"]}
    r = httpx.put(url, json=body, headers={"Authorization": f"Bearer {live.requester_token}"})
    assert r.status_code == 403 and r.json()["reason"] == "not_authorized"


def test_an_intake_body_is_the_wire_model(live: Live) -> None:
    """The server validates the body with `IntakeIn`, the model the client sends."""
    url = f"{live.url}/a2a/admin/projects/{live.world.project_id}/intakes/strict"
    auth = {"Authorization": f"Bearer {live.actors.tokens['admin']}"}
    good = {"criteria": {"tests": "unit@1"}, "scope": ["src/**"]}
    for bad in ({**good, "scopes": ["**"]}, {**good, "description": 7}, {**good, "policy_version": "1"}):
        r = httpx.put(url, json=bad, headers=auth)
        assert r.status_code == 422 and r.json()["reason"] == "invalid_request", (bad, r.text)
    r = httpx.put(url, content=b"[]", headers=auth)
    assert r.status_code == 422 and r.json()["reason"] == "invalid_request"
    r = httpx.put(url, json=good, headers=auth)
    assert r.status_code == 200 and r.json()["scope"] == ["src/**"], r.text


def test_resubscribe_after_a_restart_follows_the_ledger(live: Live) -> None:
    """A fresh app on the same ledger (a restart) has no executor following the task: the
    resubscribe starts one, and the stream still ends artifacts-then-COMPLETED."""
    task_id = asyncio.run(_started(live))
    port = free_port()
    settings = Settings(database_url=live.world.coord.store.url, public_url=f"http://127.0.0.1:{port}")
    with ServerThread(live.world.coord, settings, port=port) as restarted:
        again = dataclasses.replace(live, url=restarted.url)

        async def go() -> list[tuple[str, Any]]:
            events: list[tuple[str, Any]] = []
            async with again.client("JSONRPC", streaming=True) as client:
                worker = None
                async for ev in client.subscribe(SubscribeToTaskRequest(id=task_id)):
                    kind = ev.WhichOneof("payload")
                    events.append((kind, getattr(ev, kind)))
                    if worker is None:
                        worker = in_thread(work_task, again, studiolo_task_id(ev.task))
                assert worker is not None
                await asyncio.to_thread(worker[0].join)
            return events

        events = run(asyncio.wait_for(go(), 60))  # before: the stream waited forever
    assert events[0][0] == "task" and events[-1][0] == "status_update"
    assert events[-1][1].status.state == S.TASK_STATE_COMPLETED
    _check_artifacts(live, [e.artifact for k, e in events if k == "artifact_update"])


def test_a_requester_losing_its_grant_never_sees_failed(live: Live) -> None:
    """The executor's follow loop loses sight of the task: the stream ends with "task not
    found" (what GetTask answers that requester), never a FAILED the ledger does not hold."""
    coord, admin, world = live.world.coord, live.world.admin, live.world
    requester = coord.authenticate(live.requester_token)

    async def go() -> tuple[list[Any], BaseException | None, Task]:
        events: list[Any] = []
        ended: BaseException | None = None
        async with live.client("JSONRPC", streaming=True) as client:
            try:
                async for ev in client.send_message(message("answer 42", live.skill)):
                    events.append(ev)
                    if len(events) == 1:
                        for g in coord.list_grants(admin, world.project_id):
                            if g.principal_id == requester.id:
                                coord.revoke_grant(admin, g.id)
            except Exception as exc:  # the stream's end, examined below
                ended = exc
            with pytest.raises(TaskNotFoundError):
                await client.get_task(GetTaskRequest(id=events[0].task.id))
        async with live.client("JSONRPC", streaming=False, token=live.actors.tokens["admin"]) as adm:
            seen = await adm.get_task(GetTaskRequest(id=events[0].task.id))
        return events, ended, seen

    events, ended, seen = run(asyncio.wait_for(go(), 60))
    assert isinstance(ended, TaskNotFoundError), ended
    states = [getattr(ev, ev.WhichOneof("payload")).status.state for ev in events]
    assert S.TASK_STATE_FAILED not in states
    assert seen.status.state == S.TASK_STATE_SUBMITTED  # the admin still sees the ledger's state


def test_revoking_the_requesters_token_ends_its_open_stream(live: Live) -> None:
    """As with the API's event stream: a revoked token's stream ends within a second or so."""
    coord, admin = live.world.coord, live.world.admin
    requester = coord.authenticate(live.requester_token)

    async def go() -> tuple[int, float]:
        seen = 0
        revoked_at = 0.0
        async with live.client("JSONRPC", streaming=True) as client:
            try:
                async for _ev in client.send_message(message("answer 42", live.skill)):
                    seen += 1
                    if seen == 1:
                        coord.revoke_tokens(admin, requester.id)
                        revoked_at = time.monotonic()
            except Exception:  # the transport's view of a closed stream; the timing is the point
                pass
        return seen, time.monotonic() - revoked_at

    seen, after = run(asyncio.wait_for(go(), 30))  # before: the stream ran until the timeout
    assert seen >= 1 and after < 5, after
