"""The task-status skill through the SDK's own client on both bindings: the card lists it even
with no intake template, and the answer is one message (no A2A task) with the ledger's view."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from a2a.types.a2a_pb2 import Message, SendMessageRequest
from a2a.utils.errors import InvalidParamsError
from google.protobuf.json_format import MessageToDict

from studiolo.faces.a2a.card import STATUS_SKILL
from studiolo.faces.http.app import create_app
from studiolo.settings import Settings
from tests.faces.a2a.conftest import Live, message, run, send, work_task
from tests.world import World

BINDINGS = ["JSONRPC", "HTTP+JSON"]


def _ask(live: Live, binding: str, request: SendMessageRequest, token: str | None = None) -> Message:
    async def go() -> list[Any]:
        async with live.client(binding, streaming=False, token=token) as client:
            return await send(client, request)

    events = run(go())
    assert len(events) == 1 and events[0].WhichOneof("payload") == "message", events
    answer: Message = events[0].message
    return answer


def _data(answer: Message) -> dict[str, Any]:
    (part,) = [p for p in answer.parts if p.HasField("data")]
    found: dict[str, Any] = MessageToDict(part.data)
    return found


@pytest.mark.parametrize("binding", BINDINGS)
def test_the_status_of_a_task_before_and_after_its_completion(live: Live, binding: str) -> None:
    agent = live.actors.tokens["agent"]
    task = live.world.new_task("answer 42")
    before = _ask(live, binding, message(task.id, STATUS_SKILL), agent)
    assert not before.task_id  # a message, not a task
    shown = _data(before)
    assert shown["found"] is True and shown["view"]["task"]["status"] == "open"
    assert shown["view"]["completion"] is None
    assert "not completed" in before.parts[0].text

    completed = work_task(live, task.id)
    by_data = message("", STATUS_SKILL, {"task_id": task.id})
    after = _ask(live, binding, by_data, agent)
    view = _data(after)["view"]
    assert view["task"]["status"] == "completed"
    record = view["completion"]
    assert record["id"] == completed.completion.id
    assert record["signature"] == completed.completion.signature
    assert int(record["commit_version"]) == completed.completion.commit_version
    http_view = live.actors.client("agent").task(task.id)
    assert record["signature"] == http_view.completion.signature  # the same record the API serves
    assert f"commit {completed.completion.commit_version}" in after.parts[0].text


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_task_the_caller_may_not_read_is_not_found(live: Live, binding: str) -> None:
    task = live.world.new_task("private")
    # the requester holds a delegate grant only: it may not read the project's tasks
    for asked in (task.id, "tsk_0000000000000000"):
        answer = _ask(live, binding, message(asked, STATUS_SKILL))
        assert _data(answer) == {"task_id": asked, "found": False}
        assert "no such task" in answer.parts[0].text


def test_a_status_question_without_a_task_id_is_invalid(live: Live) -> None:
    agent = live.actors.tokens["agent"]
    for request in (message("  ", STATUS_SKILL), message("../../etc/passwd", STATUS_SKILL)):
        with pytest.raises(InvalidParamsError):
            _ask(live, "JSONRPC", request, agent)


def test_the_card_lists_the_status_skill_beside_the_templates(live: Live) -> None:
    card = httpx.get(f"{live.url}/.well-known/agent-card.json").json()
    ids = [s["id"] for s in card["skills"]]
    assert ids == [live.skill, STATUS_SKILL]


def test_with_no_intake_template_the_card_still_has_a_skill(world: World) -> None:
    """The A2A spec requires `skills`; a ledger with no template open still answers status."""
    app = create_app(world.coord, Settings(database_url=world.coord.store.url))

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://studiolo.test") as http:
            return await http.get("/.well-known/agent-card.json")

    card = run(go()).json()
    assert [s["id"] for s in card["skills"]] == [STATUS_SKILL]
    assert card["skills"][0]["name"] and card["skills"][0]["description"] and card["skills"][0]["tags"]
