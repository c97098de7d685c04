"""What the A2A TCK and the spec check on the wire: camelCase metadata, a cacheable card,
and `ListTasks` most recently updated first, with `statusTimestampAfter` and timestamps."""

from __future__ import annotations

import re

import httpx
from a2a.types.a2a_pb2 import CancelTaskRequest, GetTaskRequest, ListTasksRequest, Task, TaskState
from google.protobuf.timestamp_pb2 import Timestamp

from tests.faces.a2a.conftest import Live, message, run, send

S = TaskState
_CAMEL = re.compile(r"^[a-z][a-zA-Z0-9]*$")


def test_the_status_message_metadata_is_camel_case(live: Live) -> None:
    async def go() -> Task:
        async with live.client("JSONRPC", streaming=False) as client:
            task = (await send(client, message("camel", live.skill)))[0].task
            return await client.get_task(GetTaskRequest(id=task.id))

    task = run(go())
    meta = dict(task.status.message.metadata)
    assert set(meta) == {"studioloFact", "studioloTaskId", "contractHash"}
    assert all(_CAMEL.match(k) for k in meta)
    assert str(meta["contractHash"]).startswith("sha256:")
    raw = httpx.get(f"{live.url}/a2a/rest/tasks/{task.id}", headers={**live.headers(), "A2A-Version": "1.0"})
    assert raw.status_code == 200, raw.text
    assert set(raw.json()["status"]["message"]["metadata"]) == set(meta)  # the JSON on the wire too


def test_the_card_has_cache_control_beside_its_etag(live: Live) -> None:
    r = httpx.get(f"{live.url}/.well-known/agent-card.json")
    assert r.status_code == 200 and r.headers["etag"]
    assert "max-age=" in r.headers["cache-control"]
    again = httpx.get(f"{live.url}/.well-known/agent-card.json", headers={"If-None-Match": r.headers["etag"]})
    assert again.status_code == 304 and again.headers["cache-control"] == r.headers["cache-control"]


def test_list_tasks_most_recently_updated_first_with_timestamps(live: Live) -> None:
    far = Timestamp()
    far.FromSeconds(4_000_000_000)  # the year 2096

    async def go() -> tuple[list[str], list[Task], list[Task], list[Task]]:
        async with live.client("JSONRPC", streaming=False) as client:
            ids = []
            for i in range(3):
                ids.append((await send(client, message(f"job {i}", live.skill)))[0].task.id)
                live.world.clock.advance(1.0)
            await client.cancel_task(CancelTaskRequest(id=ids[0]))  # the oldest changes last
            listed = list((await client.list_tasks(ListTasksRequest(page_size=50))).tasks)
            cancelled = next(t for t in listed if t.id == ids[0])
            after = ListTasksRequest(status_timestamp_after=cancelled.status.timestamp)
            since = list((await client.list_tasks(after)).tasks)
            future = list((await client.list_tasks(ListTasksRequest(status_timestamp_after=far))).tasks)
            return ids, listed, since, future

    ids, listed, since, future = run(go())
    assert all(t.status.HasField("timestamp") and t.status.timestamp.seconds > 0 for t in listed)
    assert [t.id for t in listed] == [ids[0], ids[2], ids[1]]  # the cancelled, then newest created
    assert listed[0].status.timestamp.ToSeconds() == listed[1].status.timestamp.ToSeconds() + 1
    stamps = [t.status.timestamp.ToNanoseconds() for t in listed]
    assert stamps == sorted(stamps, reverse=True)
    assert listed[0].status.state == S.TASK_STATE_CANCELED
    assert [t.id for t in since] == [ids[0]]  # nothing else changed since the cancel
    assert future == []  # a far-future bound filters everything out


def test_list_tasks_pages_follow_the_cursor(live: Live) -> None:
    async def go() -> tuple[list[str], list[str]]:
        async with live.client("JSONRPC", streaming=False) as client:
            for i in range(5):
                await send(client, message(f"page {i}", live.skill))
            whole = [t.id for t in (await client.list_tasks(ListTasksRequest(page_size=50))).tasks]
            paged: list[str] = []
            token = ""
            while True:
                page = await client.list_tasks(ListTasksRequest(page_size=2, page_token=token))
                paged += [t.id for t in page.tasks]
                token = page.next_page_token
                if not token:
                    return whole, paged

    whole, paged = run(go())
    assert len(whole) == 5 and paged == whole


def test_json_rpc_answers_at_the_cards_url_with_a_trailing_slash_too(live: Live) -> None:
    """The A2A TCK's client posts to the interface URL joined with "/": a redirect would reach
    it as an empty body. Both spellings answer the same; a token is still required."""
    body = {"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": "no-such-task"}}
    headers = {**live.headers(), "A2A-Version": "1.0"}
    answers = [httpx.post(f"{live.url}/a2a/jsonrpc{tail}", json=body, headers=headers) for tail in ("", "/")]
    assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]
    assert answers[0].json() == answers[1].json() and answers[1].json()["error"]["code"] == -32001
    anonymous = httpx.post(f"{live.url}/a2a/jsonrpc/", json=body, headers={"A2A-Version": "1.0"})
    assert anonymous.status_code == 401


def test_a_json_rpc_request_that_is_not_json_is_content_type_not_supported(live: Live) -> None:
    """TCK JSONRPC-SSE-002: the binding's error for a wrong Content-Type, not a parse error."""
    headers = {**live.headers(), "A2A-Version": "1.0"}
    body = b"{'jsonrpc': '2.0', 'id': 1, 'method': 'GetTask'}"  # Python's repr, not JSON
    for kind in ("text/plain", "application/x-www-form-urlencoded", "TEXT/PLAIN; charset=utf-8"):
        r = httpx.post(f"{live.url}/a2a/jsonrpc", content=body, headers={**headers, "Content-Type": kind})
        assert r.status_code == 200 and r.json()["error"]["code"] == -32005, (kind, r.text)
    for kind in ("application/json", "application/a2a+json"):  # JSON: parsed, and this is not JSON
        r = httpx.post(f"{live.url}/a2a/jsonrpc/", content=body, headers={**headers, "Content-Type": kind})
        assert r.json()["error"]["code"] == -32700, (kind, r.text)
    anonymous = httpx.post(f"{live.url}/a2a/jsonrpc", content=body, headers={"Content-Type": "text/plain"})
    assert anonymous.status_code == 401  # the token is checked first
