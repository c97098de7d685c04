"""A `/v1` request with a token the process already knows makes one threadpool hop: the
route's own. Authentication is answered on the event loop (the auth signal, `_auth.py`) and the
response is validated and rendered inside the route's call (`rendered.py`), with the same
answer as before (status, headers, body)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio.to_thread
import httpx
import pytest

from tests.faces.helpers import Actors


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The name of every function sent to the threadpool (what `run_in_threadpool` uses)."""
    seen: list[str] = []
    run_sync = anyio.to_thread.run_sync

    async def counting(func: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(getattr(func, "__name__", repr(func)))
        return await run_sync(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counting)
    yield seen


def _http(actors: Actors, who: str) -> httpx.Client:
    headers = {"Authorization": f"Bearer {actors.tokens[who]}"}
    return httpx.Client(base_url=actors.url, transport=actors.transport, headers=headers)


def test_a_known_caller_costs_one_threadpool_hop_per_request(actors: Actors, hops: list[str]) -> None:
    admin, agent = _http(actors, "admin"), _http(actors, "agent")
    task = admin.post(
        f"/v1/projects/{actors.world.project_id}/tasks",
        json={"title": "one hop", "criteria": {"tests": "unit@1"}, "scope": ["src/**"]},
    )
    assert task.status_code == 201, task.text
    assert agent.get("/v1/me").status_code == 200  # the agent's token, now cached
    hops.clear()
    for method, path, body in (
        ("GET", "/v1/me", None),
        ("GET", f"/v1/tasks/{task.json()['id']}", None),
        ("POST", f"/v1/tasks/{task.json()['id']}/attempts", {}),  # a body: authenticated first
    ):
        answer = agent.request(method, path, json=body)
        assert answer.status_code in (200, 201), answer.text
        assert answer.headers["content-type"] == "application/json"
        assert int(answer.headers["content-length"]) == len(answer.content)
        assert len(hops) == 1, (path, hops)
        hops.clear()


def test_an_unknown_token_is_still_refused_with_the_same_problem(actors: Actors) -> None:
    headers = {"Authorization": "Bearer stl_not_a_token"}
    with httpx.Client(base_url=actors.url, transport=actors.transport, headers=headers) as http:
        for answer in (http.get("/v1/me"), http.post("/v1/tasks/tsk_x/attempts", json={})):
            assert answer.status_code == 401
            assert answer.headers["www-authenticate"] == "Bearer"
            assert answer.headers["content-type"] == "application/problem+json"
            assert answer.json()["reason"] == "unauthenticated"
