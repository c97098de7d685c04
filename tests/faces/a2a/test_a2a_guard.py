"""Who sees what, and what never shows as COMPLETED."""

from __future__ import annotations

import asyncio
import base64
import json

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types.a2a_pb2 import CancelTaskRequest, GetTaskRequest, ListTasksRequest, TaskState
from a2a.utils.errors import TaskNotFoundError
from a2a.utils.signing import InvalidSignaturesError

from studiolo.faces.a2a.card import STATUS_SKILL
from tests.faces.a2a.conftest import EXT, Live, in_thread, jwks_verifier, message, run, send, studiolo_task_id
from tests.faces.helpers import complete, submit, verify

S = TaskState


def test_401_without_a_token(live: Live) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
    for headers in ({}, {"Authorization": "Bearer stl_not-a-token"}, {"Authorization": "Basic abc"}):
        r = httpx.post(f"{live.url}/a2a/jsonrpc", json=body, headers={"A2A-Version": "1.0", **headers})
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        assert httpx.get(f"{live.url}/a2a/rest/tasks/x", headers=headers).status_code == 401
    assert httpx.get(f"{live.url}/.well-known/agent-card.json").status_code == 200  # the card is public


def test_the_card_is_signed_and_tampering_shows(live: Live) -> None:
    card = httpx.get(f"{live.url}/.well-known/agent-card.json").json()
    protected = card["signatures"][0]["protected"]
    header = json.loads(base64.urlsafe_b64decode(protected + "=" * (-len(protected) % 4)))
    assert header["alg"] == "EdDSA"
    assert [s["id"] for s in card["skills"]] == [live.skill, STATUS_SKILL]
    ext = card["capabilities"]["extensions"][0]
    assert (ext["uri"], ext["required"]) == (EXT, True)

    async def resolve(tamper: bool) -> None:
        async def hook(response: httpx.Response) -> None:
            if tamper and response.url.path.endswith("agent-card.json"):
                await response.aread()
                data = response.json()
                data["skills"][0]["id"] = "evil/skill"
                response._content = json.dumps(data).encode()

        async with httpx.AsyncClient(event_hooks={"response": [hook]}) as http:
            config = ClientConfig(httpx_client=http)
            client = await create_client(live.url, config, signature_verifier=jwks_verifier(live.url))
            await client.close()

    run(resolve(False))
    with pytest.raises(InvalidSignaturesError):
        run(resolve(True))


def test_another_projects_requester_sees_nothing(live: Live) -> None:
    coord, admin = live.world.coord, live.world.admin
    other = coord.create_project(admin, "other")
    stranger = coord.add_principal(admin, other.id, "stranger", "agent").principal
    coord.grant(admin, other.id, stranger.id, ["delegate", "read"], ["**"])
    stranger_token = coord.rotate_token(admin, stranger.id).token

    async def go() -> None:
        async with live.client("JSONRPC", streaming=False) as mine:
            task = (await send(mine, message("answer 42", live.skill)))[0].task
        for binding in ("JSONRPC", "HTTP+JSON"):
            async with live.client(binding, streaming=False, token=stranger_token) as theirs:
                with pytest.raises(TaskNotFoundError):
                    await theirs.get_task(GetTaskRequest(id=task.id))
                assert not (await theirs.list_tasks(ListTasksRequest())).tasks
        files = httpx.get(
            f"{live.url}/a2a/tasks/{task.id}/files/src/answer.txt", headers=live.headers(stranger_token)
        )
        assert files.status_code == 404

    run(go())


def test_intake_refuses_an_unknown_template(live: Live) -> None:
    async def go() -> TaskState:
        async with live.client("HTTP+JSON", streaming=True) as client:
            events = [e async for e in client.send_message(message("x", f"{live.world.project_id}/nope"))]
        return events[-1].task.status.state

    assert run(go()) == S.TASK_STATE_REJECTED


def test_a_refused_completion_never_shows_as_completed(live: Live) -> None:
    def failing_attempt(task_id: str) -> str:
        agent, verifier = live.actors.client("agent"), live.actors.client("verifier")
        task = agent.task(task_id).task
        attempt = agent.claim(task_id)
        cand = submit(agent, attempt, {"src/answer.txt": b"41\n"})
        receipt = verify(verifier, live.world, cand, "fail")
        try:
            complete(agent, task, attempt, cand, [receipt.id])  # type: ignore[arg-type]
        except Exception as exc:  # the contract refuses it
            return type(exc).__name__
        return "accepted"

    async def go() -> list[int]:
        states: list[int] = []
        async with live.client("JSONRPC", streaming=False) as client:
            task = (await send(client, message("answer 42", live.skill)))[0].task
            worker = in_thread(failing_attempt, studiolo_task_id(task))
            while worker[0].is_alive():
                states.append((await client.get_task(GetTaskRequest(id=task.id))).status.state)
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.2)  # several executor polls after the refusal
            final = await client.get_task(GetTaskRequest(id=task.id))
            states.append(final.status.state)
            assert not final.artifacts
        assert worker[1] != ["accepted"]
        return states

    states = run(go())
    assert S.TASK_STATE_COMPLETED not in states and states[-1] == S.TASK_STATE_WORKING


def test_a_message_without_the_manifest_extension_is_refused(live: Live) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "x"}]}},
    }
    headers = {"Authorization": f"Bearer {live.requester_token}", "A2A-Version": "1.0"}
    r = httpx.post(f"{live.url}/a2a/jsonrpc", json=body, headers=headers).json()
    assert "error" in r and "Extension" in r["error"]["message"] + json.dumps(r["error"].get("data"))
    r = httpx.post(
        f"{live.url}/a2a/jsonrpc", json=body, headers={**headers, "A2A-Extensions": EXT, "A2A-Version": "0.3"}
    )
    assert "error" in r.json()  # old clients: the SDK's VersionNotSupported


def test_list_tasks_filters_before_paging_so_pages_are_full(live: Live) -> None:
    async def go() -> tuple[list[str], list[list[str]], list[int]]:
        async with live.client("JSONRPC", streaming=False) as client:
            ids = [(await send(client, message(f"job {i}", live.skill)))[0].task.id for i in range(6)]
            everything = [t.id for t in (await client.list_tasks(ListTasksRequest(page_size=50))).tasks]
            for cancelled in everything[1::2]:  # interleaved with the ones still SUBMITTED
                await client.cancel_task(CancelTaskRequest(id=cancelled))
            pages: list[list[str]] = []
            totals: list[int] = []
            token = ""
            while True:
                req = ListTasksRequest(page_size=2, status=S.TASK_STATE_SUBMITTED, page_token=token)
                page = await client.list_tasks(req)
                pages.append([t.id for t in page.tasks])
                totals.append(page.total_size)
                assert all(t.status.state == S.TASK_STATE_SUBMITTED for t in page.tasks)
                token = page.next_page_token
                if not token:
                    assert sorted(everything) == sorted(ids)
                    return everything, pages, totals

    everything, pages, totals = run(go())
    submitted = everything[0::2]  # in the ledger's order
    assert pages == [submitted[0:2], submitted[2:3]]  # each page as full as it can be
    assert totals == [3, 3]
