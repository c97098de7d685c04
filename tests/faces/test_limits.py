"""One value, one validator: a bounded field has one limit (`core.limits`), and the wire
model (what HTTP, the client, the CLI and MCP send) and the door refuse the same values."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from studiolo import InvalidRequest
from studiolo.api.requests import CompleteIn, HandoffIn, TaskIn
from studiolo.core import limits
from studiolo.service import make_request
from tests.faces.helpers import Actors
from tests.world import World

_COMPLETE = {
    "request_id": "r",
    "attempt_id": "att_abcdefgh",
    "fence": 1,
    "contract_hash": "sha256:" + "0" * 64,
    "candidate_id": "cnd_abcdefgh",
    "evidence": [],
}


_TASK = {"title": "t", "criteria": {"tests": "unit@1"}, "scope": ["src/**"]}


def _by_model(kind: str, fields: dict[str, Any]) -> None:
    """Build the wire model every face sends (HTTP validates with it; the client builds it)."""
    if kind == "task":
        TaskIn(**{**_TASK, **fields})
    elif kind == "complete":
        CompleteIn(**{**_COMPLETE, **fields})
    else:
        HandoffIn(**fields)


def _by_door(world: World, kind: str, fields: dict[str, Any]) -> None:
    """Call the door directly, as an in-process face that built no wire model would."""
    if kind == "task":
        world.coord.create_task(world.admin, world.project_id, **{**_TASK, **fields})
    elif kind == "complete":
        make_request(task_id="tsk_abcdefgh", **{**_COMPLETE, **fields})
    else:
        attempt = world.coord.claim(world.agent, world.new_task().id, 60)
        world.coord.handoff(world.agent, attempt.id, artifacts={}, **fields)


# (what is bounded, its one limit, which request, the field(s) at size n)
CASES: list[tuple[str, int, str, Callable[[int], dict[str, Any]]]] = [
    ("title", limits.TITLE, "task", lambda n: {"title": "t" * n}),
    ("description", limits.DESCRIPTION, "task", lambda n: {"description": "d" * n}),
    ("criterion id", limits.CRITERION_ID, "task", lambda n: {"criteria": {"c" * n: "unit@1"}}),
    ("request_id", limits.REQUEST_ID, "complete", lambda n: {"request_id": "r" * n}),
    ("contract_hash", limits.CONTRACT_HASH, "complete", lambda n: {"contract_hash": "h" * n}),
    ("evidence", limits.EVIDENCE, "complete", lambda n: {"evidence": ["rcp_abcdefgh"] * n}),
    ("handoff notes", limits.HANDOFF_NOTES, "handoff", lambda n: {"notes": "n" * n}),
    ("an obligation", limits.HANDOFF_NOTES, "handoff", lambda n: {"obligations": ["o" * n]}),
    ("obligations", limits.OBLIGATIONS, "handoff", lambda n: {"obligations": ["o"] * n}),
]


@pytest.mark.parametrize(("what", "limit", "kind", "sized"), CASES, ids=[c[0] for c in CASES])
def test_the_model_and_the_door_take_the_limit_and_refuse_one_more(
    world: World, what: str, limit: int, kind: str, sized: Callable[[int], dict[str, Any]]
) -> None:
    _by_model(kind, sized(limit))
    _by_door(world, kind, sized(limit))
    with pytest.raises(InvalidRequest) as by_model:
        _by_model(kind, sized(limit + 1))
    assert by_model.value.status == 422, what
    with pytest.raises(InvalidRequest) as by_door:
        _by_door(world, kind, sized(limit + 1))
    assert by_door.value.reason == "invalid_request", what


def test_http_refuses_a_description_the_door_would_refuse(actors: Actors, world: World) -> None:
    """Before: HTTP took 1,000,000 characters and the door 100,000 (a 400 after the body was
    parsed). Now the request's model refuses it (422) and nothing is written."""
    admin = actors.client("admin")
    before = len(admin.tasks())
    body = {"title": "t", "criteria": {"tests": "unit@1"}, "scope": ["src/**"]}
    url = f"/v1/projects/{world.project_id}/tasks"
    response = admin._http.post(url, json={**body, "description": "d" * (limits.DESCRIPTION + 1)})
    assert response.status_code == 422 and response.json()["reason"] == "invalid_request"
    assert "description" in response.json()["detail"]
    assert len(admin.tasks()) == before
    assert admin._http.post(url, json={**body, "description": "d" * limits.DESCRIPTION}).status_code == 201
