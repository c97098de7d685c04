"""docs/a2a.md's state table, row by row, against `a2a_state` on real ledger states."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from a2a.types.a2a_pb2 import TaskState

from studiolo.core.model import Task, TaskStatus
from studiolo.faces.a2a.mapping import STATE_TABLE, a2a_state
from studiolo.service import DelegatedView, DelegationRequest
from tests.world import World

DOC = Path(__file__).resolve().parents[3] / "docs" / "a2a.md"


def _doc_rows() -> list[tuple[str, str, str]]:
    text = DOC.read_text()
    section = text.split("## State mapping", 1)[1].split("\n\n| Ledger", 1)[1]
    rows = [r for r in section.split("\n\n", 1)[0].splitlines()[2:] if r.startswith("|")]
    return [tuple(c.strip() for c in r.strip("|").split("|")) for r in rows]  # type: ignore[misc]


def test_the_doc_table_is_the_code_table() -> None:
    assert _doc_rows() == list(STATE_TABLE)


def _delegate(world: World) -> DelegatedView:
    coord, admin, pid = world.coord, world.admin, world.project_id
    requester = coord.add_principal(admin, pid, "partner", "agent").principal
    coord.grant(admin, pid, requester.id, ["delegate"], ["src/**"])
    coord.define_intake(admin, pid, "fix", description="", criteria={"tests": "unit@1"}, scope=["src/**"])
    q = DelegationRequest("a2a-1", "ctx-1", "fix", "t", "do it", {}, {"messageId": "m"})
    return coord.delegate(requester, q)


def _state_after(world: World, steps: str) -> tuple[int, str]:
    v = _delegate(world)
    assert v.view is not None
    tid, who = v.view.task.id, v.delegation.requester_id
    requester = world.coord.store.read(lambda tx: tx.access.principal(who))
    assert requester is not None
    if steps == "refused":
        q = DelegationRequest("a2a-2", "ctx-1", "nope", "t", "", {}, {})
        return a2a_state(world.coord.delegate(requester, q))
    if steps == "cancelled":
        world.coord.cancel_task(world.admin, tid)
    if steps == "no-record":  # a ledger claiming completion without the record
        return a2a_state(
            dataclasses.replace(v, view=dataclasses.replace(v.view, completion=None, task=_done(v)))
        )
    if steps in ("claimed", "candidate", "verified", "accepted"):
        task = world.coord.task_view(world.admin, tid).task
        att = world.coord.claim(world.agent, tid)
        if steps != "claimed":
            cand = world.candidate(att, {"src/answer.txt": b"42\n"})
            if steps != "candidate":
                r = world.receipt(cand)
                if steps == "accepted":
                    world.complete(task, att, cand, [r.id])
    return a2a_state(world.coord.delegated(requester, "a2a-1"))


def _done(v: DelegatedView) -> Task:
    assert v.view is not None
    return dataclasses.replace(v.view.task, status=TaskStatus.COMPLETED)


_STEPS = {
    ("(intake refused)", "—"): "refused",
    ("open", "open"): "open",
    ("claimed", "claimed"): "claimed",
    ("claimed", "candidate prepared"): "candidate",
    ("claimed", "verified"): "verified",
    ("completed", "accepted completion"): "accepted",
    ("completed", "no completion record"): "no-record",
    ("cancelled", "cancelled"): "cancelled",
}


@pytest.mark.parametrize("row", STATE_TABLE, ids=[f"{r[0]}/{r[1]}" for r in STATE_TABLE])
def test_each_row_holds_on_the_ledger(world: World, row: tuple[str, str, str]) -> None:
    status, fact, expected = row
    state, text = _state_after(world, _STEPS[(status, fact)])
    assert TaskState.Name(state) == expected
    if expected == "TASK_STATE_WORKING":
        assert text == fact  # the strongest fact is in the status message
    if re.match(r"^(open|claimed)$", status):
        assert text in ("open", "claimed", "candidate prepared", "verified")
