"""The requester side's durable state machine at the door: trust anchors, delegation, the
finalization through the completion transaction, the review queue (no network here)."""

from __future__ import annotations

import hashlib

import pytest

from studiolo._exceptions import Conflict, InvalidRequest, NotAuthorized, NotFound
from studiolo.core.model import TaskStatus
from studiolo.core.quiescence import TaskState
from studiolo.core.remote import (
    TRANSITIONS,
    RemoteDelegation,
    RemoteFile,
    RemoteResult,
    RemoteState,
    can_move,
)
from studiolo.keys import ServiceKey
from tests.auditcheck import check, load_deadlines, load_events
from tests.world import World

KEY = ServiceKey.generate()


def _setup(world: World) -> tuple[str, RemoteDelegation]:
    c = world.coord
    c.add_remote_org(world.admin, world.project_id, "acme", {"k1": KEY.public})
    task = world.new_task(criteria={"remote": "a2a-acme@1"}, scope=["remote/**"])
    d = c.delegate_remote(
        world.admin,
        task.id,
        "acme",
        agent_url="http://acme.test/a2a",
        card_digest="sha256:" + "0" * 64,
        card_kid="k1",
    )
    return task.id, d


def _result(state: TaskState = TaskState.COMPLETED, missing: tuple[str, ...] = ()) -> RemoteResult:
    files = (RemoteFile("file:out.txt", "../../etc/out.txt", b"42\n"), RemoteFile("r", "out.txt", b"receipt"))
    return RemoteResult(state, b'{"manifest": 1}', files, missing, "k1")


def _working(world: World) -> tuple[str, RemoteDelegation]:
    task_id, d = _setup(world)
    world.coord.remote_sent(d.id, "remote-1", "TASK_STATE_WORKING")
    world.coord.remote_terminal(d.id, TaskState.COMPLETED)
    return task_id, d


def test_a_quiesced_completed_result_completes_the_task_once(world: World) -> None:
    c = world.coord
    task_id, d = _working(world)
    assert c.remote_state(d.id).state is RemoteState.AWAITING
    done = c.remote_finish(d.id, _result())
    assert done.state is RemoteState.FINALIZED and done.completion_id
    view = c.task_view(world.admin, task_id)
    assert view.task.status is TaskStatus.COMPLETED
    paths = sorted(a.path for a in c.list_artifacts(world.admin, world.project_id, "remote/"))
    # Remote names never choose the path: no directories, only the file name, made unique.
    assert paths == [f"remote/acme/{d.id}/2-out.txt", f"remote/acme/{d.id}/out.txt"]
    with pytest.raises(Conflict):
        c.remote_finish(d.id, _result())
    kinds = [e.kind for e in c.events(world.admin, world.project_id) if e.subject == d.id]
    assert kinds.count("a2a.remote.state") == 3 and "a2a.remote.delegated" in kinds
    assert c.verify_audit().ok
    # An independent replay of the log re-derives the contract at the remote result's commit.
    url = c.store.url
    assert check(load_events(url), load_deadlines(url)) == []


def test_a_late_result_after_reassignment_is_refused_by_the_contract(world: World) -> None:
    c = world.coord
    task_id, d = _working(world)
    c.grant(world.admin, world.project_id, world.agent.id, ["write", "claim", "complete"], ["remote/**"])
    c.reassign(world.admin, task_id, world.agent.id)
    out = c.remote_finish(d.id, _result())
    assert out.state is RemoteState.REFUSED and "attempt_superseded" in (out.reason or "")
    assert c.task_view(world.admin, task_id).task.status is TaskStatus.CLAIMED
    assert c.list_artifacts(world.admin, world.project_id, "remote/") == []


def test_a_revoked_grant_refuses_the_result(world: World) -> None:
    c = world.coord
    _, d = _working(world)
    org = c.remote_org(world.admin, world.project_id, "acme")
    for g in c.list_grants(world.admin, world.project_id):
        if g.principal_id == org.agent_id:
            c.revoke_grant(world.admin, g.id)
    out = c.remote_finish(d.id, _result())
    # Without any grant the agent cannot even see the task: the first predicate refuses.
    assert out.state is RemoteState.REFUSED and out.reason == "task_not_found"
    assert c.list_artifacts(world.admin, world.project_id, "remote/") == []


def test_integrity_failure_keeps_evidence_and_releases_the_task(world: World) -> None:
    c = world.coord
    task_id, d = _working(world)
    bad = b"tampered bytes"
    out = c.remote_integrity_failed(d.id, {"code": "hash_mismatch", "artifact": "file:x"}, [bad])
    assert out.state is RemoteState.INTEGRITY_FAILED and out.reason == "hash_mismatch"
    digest = "sha256:" + hashlib.sha256(bad).hexdigest()
    assert digest in out.evidence["blobs"] and c.get_blob(world.admin, digest) == bad
    assert c.collect_garbage(world.admin, older_than=-1) == 0  # evidence is referenced
    assert c.task_view(world.admin, task_id).task.status is TaskStatus.OPEN
    with pytest.raises(Conflict):
        c.remote_finish(d.id, _result())


def test_indeterminate_then_an_operator_finalizes_with_what_verified(world: World) -> None:
    c = world.coord
    task_id, d = _working(world)
    partial = RemoteResult(TaskState.COMPLETED, b'{"m": 2}', _result().files[:1], ("big",), "k1")
    c.remote_indeterminate(d.id, "missing_artifacts", partial)
    queue = c.remote_review_queue(world.admin, world.project_id)
    assert [q.id for q in queue] == [d.id] and queue[0].evidence["missing"] == ["big"]
    with pytest.raises(InvalidRequest):
        c.review_remote(world.admin, d.id, "maybe")
    out = c.review_remote(world.admin, d.id, "finalize", "checked with acme by phone")
    assert out.state is RemoteState.FINALIZED
    assert c.task_view(world.admin, task_id).task.status is TaskStatus.COMPLETED
    assert c.remote_review_queue(world.admin, world.project_id) == []
    with pytest.raises(Conflict):
        c.review_remote(world.admin, d.id, "reject")


def test_indeterminate_then_rejected(world: World) -> None:
    c = world.coord
    task_id, d = _working(world)
    c.remote_indeterminate(d.id, "no_manifest", RemoteResult(TaskState.COMPLETED, b"", ()))
    out = c.review_remote(world.admin, d.id, "reject", "no artifact")
    assert out.state is RemoteState.REJECTED
    assert c.task_view(world.admin, task_id).task.status is TaskStatus.OPEN


def test_an_operator_cannot_turn_a_failed_remote_into_a_completion(world: World) -> None:
    c = world.coord
    task_id, d = _working(world)
    c.remote_indeterminate(d.id, "missing_artifacts", _result(TaskState.FAILED))
    out = c.review_remote(world.admin, d.id, "finalize")
    assert out.state is RemoteState.REFUSED
    assert c.task_view(world.admin, task_id).task.status is TaskStatus.OPEN


@pytest.mark.parametrize(
    ("state", "end"),
    [(TaskState.FAILED, RemoteState.REMOTE_FAILED), (TaskState.CANCELED, RemoteState.REMOTE_CANCELED)],
)
def test_remote_failed_or_canceled_ends_without_completion(
    world: World, state: TaskState, end: RemoteState
) -> None:
    c = world.coord
    task_id, d = _working(world)
    out = c.remote_finish(d.id, _result(state))
    assert out.state is end and out.evidence["remote_state"] == state.value
    assert c.task_view(world.admin, task_id).task.status is TaskStatus.OPEN


def test_unpinned_card_key_and_other_refusals(world: World) -> None:
    c = world.coord
    c.add_remote_org(world.admin, world.project_id, "acme", {"k1": KEY.public})
    task = world.new_task(criteria={"remote": "a2a-acme@1"}, scope=["remote/**"])
    kw = {"agent_url": "http://acme.test", "card_digest": "sha256:" + "0" * 64}
    with pytest.raises(NotAuthorized):
        c.delegate_remote(world.admin, task.id, "acme", card_kid="other", **kw)
    local = world.new_task(scope=["remote/**"])  # a criterion not checked by the org
    with pytest.raises(InvalidRequest):
        c.delegate_remote(world.admin, local.id, "acme", card_kid="k1", **kw)
    outside = world.new_task(criteria={"remote": "a2a-acme@1"}, scope=["src/**"])
    with pytest.raises(InvalidRequest):
        c.delegate_remote(world.admin, outside.id, "acme", card_kid="k1", **kw)
    with pytest.raises(NotAuthorized):
        c.delegate_remote(world.agent, task.id, "acme", card_kid="k1", **kw)
    c.delegate_remote(world.admin, task.id, "acme", card_kid="k1", **kw)
    with pytest.raises(Conflict):
        c.delegate_remote(world.admin, task.id, "acme", card_kid="k1", **kw)
    with pytest.raises(Conflict):
        c.add_remote_org(world.admin, world.project_id, "acme", {"k1": KEY.public})
    with pytest.raises(InvalidRequest):
        c.add_remote_org(world.admin, world.project_id, "other", {"k1": "not-a-key"})


def test_out_of_order_reports_are_refused(world: World) -> None:
    c = world.coord
    _, d = _setup(world)
    with pytest.raises(Conflict):
        c.remote_finish(d.id, _result())
    with pytest.raises(Conflict):
        c.remote_terminal(d.id, TaskState.COMPLETED)
    c.remote_sent(d.id, "remote-1", "TASK_STATE_SUBMITTED")
    with pytest.raises(Conflict):
        c.remote_sent(d.id, "remote-1", "TASK_STATE_SUBMITTED")
    assert [p.id for p, _ in c.pending_remote()] == [d.id]


def test_the_transition_table() -> None:
    for src in RemoteState:
        for dst in RemoteState:
            assert can_move(src, dst) == (dst in TRANSITIONS.get(src, frozenset()))
        if src.final:
            assert not any(can_move(src, dst) for dst in RemoteState)
    # Every state but the first is reachable, and from every non-final state an end is.
    reach = {RemoteState.DELEGATED}
    for _ in RemoteState:
        reach |= {dst for src in reach for dst in TRANSITIONS.get(src, frozenset())}
    assert reach == set(RemoteState)


def test_revoking_the_organisation_refuses_a_result_in_flight(world: World) -> None:
    c = world.coord
    _, d = _working(world)
    org = c.revoke_remote_org(world.admin, world.project_id, "acme")
    assert not org.live
    out = c.remote_finish(d.id, _result())
    assert (
        out.state is RemoteState.REFUSED and c.list_artifacts(world.admin, world.project_id, "remote/") == []
    )
    other = world.new_task(criteria={"remote": "a2a-acme@1"}, scope=["remote/**"])
    with pytest.raises(NotFound):
        c.remote_org_for_task(world.admin, other.id, "acme")


def test_a_contract_changed_while_the_remote_works_refuses_the_result(world: World) -> None:
    c = world.coord
    task_id, d = _working(world)
    c.migrate_task(world.admin, task_id, scope=["remote/**", "docs/**"])  # the inputs were edited
    out = c.remote_finish(d.id, _result())
    assert out.state is RemoteState.REFUSED and "contract_mismatch" in (out.reason or "")


def test_keepalive_renews_the_lease_only_when_half_is_gone(world: World) -> None:
    c = world.coord
    task_id, d = _working(world)
    before = c.attempt(world.admin, d.attempt_id).lease_deadline
    assert c.remote_keepalive(d.id) and c.attempt(world.admin, d.attempt_id).lease_deadline == before
    world.clock.advance(c.settings.max_lease_seconds * 0.6)
    assert c.remote_keepalive(d.id)
    assert c.attempt(world.admin, d.attempt_id).lease_deadline > before
    c.grant(world.admin, world.project_id, world.agent.id, ["write", "claim", "complete"], ["remote/**"])
    c.reassign(world.admin, task_id, world.agent.id)
    assert not c.remote_keepalive(d.id)


def test_one_requester_lease_per_ledger(world: World) -> None:
    c = world.coord
    assert c.requester_lease("a", 10.0) and c.requester_lease("a", 10.0)  # taken, renewed
    assert not c.requester_lease("b", 10.0)
    world.clock.advance(11.0)  # "a" died: its lease ran out
    assert c.requester_lease("b", 10.0) and not c.requester_lease("a", 10.0)
    c.requester_release("a")  # not the holder: nothing changes
    assert not c.requester_lease("a", 10.0)
    c.requester_release("b")  # a clean stop hands over at once
    assert c.requester_lease("a", 10.0)
