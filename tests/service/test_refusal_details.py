"""Every failed predicate says what it found (SPEC §8): for each breaking case of
test_predicates, the refusal's details name the fact behind it (which path moved and who
moved it, which grant was revoked and by whom, who holds the task, the lease deadline against
the commit time, which receipt failed), the audit event keeps the same details whole, and a
caller sees nothing outside its read scope. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from studiolo import CompletionRejected
from studiolo.core.reasons import Reason
from studiolo.service._refusal import SERVICE_ADMIN
from tests.service.test_predicates import CASES, Ready, ready
from tests.world import FakeClock, World, build_world

Detail = dict[str, Any]


@pytest.fixture
def any_world(store_url: str, tmp_path: Path, clock: FakeClock) -> Iterator[World]:
    world = build_world(tmp_path, clock, url=store_url)
    yield world
    world.coord.store.dispose()


def refusal(w: World, r: Ready, **kw: Any) -> tuple[CompletionRejected, dict[str, Any]]:
    """The refusal the caller got, and the data of the `completion.rejected` event."""
    with pytest.raises(CompletionRejected) as err:
        w.complete(r.task, r.attempt, r.cand, r.evidence, **kw)
    (event,) = w.coord.store.read(lambda tx: tx.audit.events(after=tx.audit.last()[0] - 1, limit=1))
    assert event.kind == "completion.rejected"
    return err.value, dict(event.data)


def one(details: tuple[Detail, ...], reason: Reason) -> Detail:
    (d,) = [d for d in details if d["reason"] == reason.value]
    assert d["text"], "every detail has its sentence"
    return d


# what each case's detail must say ---------------------------------------------------------
def _inactive(w: World, r: Ready, d: Detail) -> None:
    assert d["facts"]["status"] == "cancelled"
    assert d["change"]["by"] == w.admin.id and d["change"]["by_name"] == SERVICE_ADMIN
    assert (d["change"]["cause"], d["change"]["note"]) == ("task.cancelled", "no longer needed")


def _not_owner(w: World, r: Ready, d: Detail) -> None:
    f = d["facts"]
    assert (f["owner"], f["owner_name"], f["caller"]) == (w.agent.id, "agent-a", w.agent2.id)
    assert "agent-a" in d["text"]


def _superseded(w: World, r: Ready, d: Detail) -> None:
    f = d["facts"]
    assert (f["fence"], f["attempt_fence"]) == (r.attempt.fence + 1, r.attempt.fence)
    assert (f["holder"], f["holder_name"], f["current_attempt_id"]) == (w.agent.id, "agent-a", r.attempt.id)


def _lease(w: World, r: Ready, d: Detail) -> None:
    f = d["facts"]
    assert f["lease_deadline"] == r.attempt.lease_deadline
    assert f["committed_at"] == w.clock() and f["committed_at"] > f["lease_deadline"]
    assert f["restored"] is False


def _unbound(w: World, r: Ready, d: Detail) -> None:
    f = d["facts"]
    assert f["found"] and (f["candidate_attempt_id"], f["candidate_task_id"]) == (
        r.cand.attempt_id,
        r.cand.task_id,
    )
    assert f["attempt_id"] == r.attempt.id and f["candidate_task_id"] != r.task.id


def _scope(w: World, r: Ready, d: Detail) -> None:
    assert [i["path"] for i in d["items"]] == ["ops/deploy.sh"]
    assert d["facts"]["scope"] == ["src/**", "docs/**"]


def _unauthorized(w: World, r: Ready, d: Detail) -> None:
    missing = {(i["action"], i["path"]) for i in d["items"] if i["kind"] == "missing_grant"}
    assert missing == {("complete", None), ("write", "src/answer.txt"), ("complete", "src/answer.txt")}
    (revoked,) = [i for i in d["items"] if i["kind"] == "revoked_grant"]
    assert revoked["grant_id"] == w.grants["agent"]
    assert revoked["change"]["by"] == w.admin.id and revoked["change"]["cause"] == "grant.revoked"


def _contract(w: World, r: Ready, d: Detail) -> None:
    assert d["facts"] == {"requested": "sha256:" + "ab" * 32, "pinned": r.task.contract_hash}


def _moved(path: str) -> Callable[[World, Ready, Detail], None]:
    def check(w: World, r: Ready, d: Detail) -> None:
        (m,) = d["moved"]
        assert (m["path"], m["declared"], m["current"], m["hidden"]) == (path, 1, 2, False)
        assert (m["change"]["by"], m["change"]["by_name"], m["change"]["cause"]) == (
            w.human.id,
            "editor",
            "edit",
        )
        assert d["text"].startswith(f"{path} changed from revision 1 to 2 by editor at ")
        (edit,) = [
            e for e in w.coord.events(w.admin, w.project_id, limit=1000) if e.seq == m["change"]["seq"]
        ]
        assert (edit.kind, edit.subject, edit.data["revision"]) == ("artifact.edited", path, 2)

    return check


def _untrusted(w: World, r: Ready, d: Detail) -> None:
    assert [(i["receipt_id"], i["problem"]) for i in d["items"]] == [("rcp_forged0000000000000", "not_found")]


def _not_bound(w: World, r: Ready, d: Detail) -> None:
    (i,) = d["items"]
    assert i["receipt_id"] == r.evidence[-1] and i["differs"] == ["candidate_digest"]


def _not_separate(w: World, r: Ready, d: Detail) -> None:
    (i,) = d["items"]
    assert (i["receipt_id"], i["criterion"]) == (r.evidence[-1], "tests")
    assert d["text"].startswith(f"Receipt {r.evidence[-1]} for criterion tests was computed where")


def _missing(w: World, r: Ready, d: Detail) -> None:
    (i,) = d["items"]
    recorded = w.coord.receipts(w.agent, r.cand.id)
    assert (i["criterion"], i["checker"], i["uncited_pass"]) == ("tests", "unit@1", recorded[0].id)


def _failed(w: World, r: Ready, d: Detail) -> None:
    (i,) = d["items"]
    assert (i["criterion"], i["receipt_id"], i["cited"]) == ("tests", r.evidence[0], True)
    assert (i["issuer"], i["issuer_name"]) == (w.verifier.id, "ci")


def _path_conflict(w: World, r: Ready, d: Detail) -> None:
    assert [(i["kind"], i["path"]) for i in d["items"]] == [
        ("file", "src/out"),
        ("file_under_it", "src/out/report.txt"),
    ]
    assert "src/out, src/out/report.txt" in d["text"]


EXPECT: dict[Reason, Callable[[World, Ready, Detail], None]] = {
    Reason.TASK_NOT_ACTIVE: _inactive,
    Reason.CALLER_NOT_ATTEMPT_OWNER: _not_owner,
    Reason.ATTEMPT_SUPERSEDED: _superseded,
    Reason.LEASE_EXPIRED: _lease,
    Reason.CANDIDATE_NOT_BOUND: _unbound,
    Reason.SCOPE_VIOLATION: _scope,
    Reason.NOT_AUTHORIZED: _unauthorized,
    Reason.CONTRACT_MISMATCH: _contract,
    Reason.DEPENDENCY_STALE: _moved("src/input.txt"),
    Reason.TARGET_BASE_STALE: _moved("src/answer.txt"),
    Reason.PATH_CONFLICT: _path_conflict,
    Reason.EVIDENCE_UNTRUSTED: _untrusted,
    Reason.EVIDENCE_NOT_BOUND: _not_bound,
    Reason.EVIDENCE_NOT_SEPARATE: _not_separate,
    Reason.EVIDENCE_MISSING: _missing,
    Reason.EVIDENCE_FAILED: _failed,
}


def test_every_predicate_has_an_expectation() -> None:
    assert set(EXPECT) == set(Reason) - {Reason.TASK_NOT_FOUND}


@pytest.mark.parametrize(("name", "breaker", "reason"), CASES, ids=[c[0] for c in CASES])
def test_the_detail_says_what_changed(
    any_world: World, name: str, breaker: Callable[[World, Ready], dict[str, object]], reason: Reason
) -> None:
    w = any_world
    r = ready(w)
    exc, event = refusal(w, r, **breaker(w, r))
    if reason is Reason.TASK_NOT_FOUND:  # nothing to tell whoever may not see the task
        assert exc.details == () and "details" not in event
        return
    assert [d["reason"] for d in exc.details] == list(exc.failed) == [reason.value]
    EXPECT[reason](w, r, one(exc.details, reason))
    # The agent reads every path: it sees what the audit event keeps.
    assert list(exc.details) == event["details"]


def test_a_reassignment_names_the_new_holder_and_who_reassigned(any_world: World) -> None:
    w = any_world
    r = ready(w)
    w.coord.reassign(w.admin, r.task.id, w.agent2.id, 60)
    exc, _ = refusal(w, r)
    d = one(exc.details, Reason.ATTEMPT_SUPERSEDED)
    assert (d["facts"]["attempt_status"], d["facts"]["holder"]) == ("superseded", w.agent2.id)
    assert (d["change"]["by"], d["change"]["cause"]) == (w.admin.id, "attempt.reassigned")
    assert "agent-b holds the task now" in d["text"]


def test_a_release_and_a_reclaim_after_expiry_are_named(any_world: World) -> None:
    w = any_world
    r = ready(w)
    w.clock.advance(61)
    w.coord.claim(w.agent2, r.task.id, 60)
    exc, _ = refusal(w, r)
    d = one(exc.details, Reason.ATTEMPT_SUPERSEDED)
    assert (d["change"]["by"], d["change"]["cause"]) == (w.agent2.id, "attempt.claimed")
    assert exc.failed == ("attempt_superseded", "lease_expired")
    lease = one(exc.details, Reason.LEASE_EXPIRED)["facts"]
    assert lease["committed_at"] - lease["lease_deadline"] == 1


def test_a_migration_is_named(any_world: World) -> None:
    w = any_world
    r = ready(w)
    w.coord.migrate_task(w.admin, r.task.id, scope=["src/**"])
    exc, _ = refusal(w, r)
    d = one(exc.details, Reason.CONTRACT_MISMATCH)
    assert (d["change"]["by"], d["change"]["cause"]) == (w.admin.id, "task.migrated")
    assert d["facts"]["requested"] == r.task.contract_hash != d["facts"]["pinned"]


def test_a_completion_by_another_names_it(any_world: World) -> None:
    w = any_world
    r = ready(w)
    done = w.complete(r.task, r.attempt, r.cand, r.evidence)
    exc, _ = refusal(w, r, request_id="again")
    d = one(exc.details, Reason.TASK_NOT_ACTIVE)
    assert (d["facts"]["status"], d["change"]["cause"]) == ("completed", done.completion.id)
    assert d["change"]["by"] == w.agent.id


def test_a_collection_that_moved_is_named(any_world: World) -> None:
    w = any_world
    task = w.new_task()
    attempt = w.coord.claim(w.agent, task.id, 60)
    cand = w.candidate(attempt, {"src/answer.txt": b"42\n"}, collections={"src/": 2})
    w.edit("src/new.txt", b"new\n")
    exc, _ = refusal(w, Ready(task, attempt, cand, [w.receipt(cand).id]))
    (m,) = one(exc.details, Reason.DEPENDENCY_STALE)["moved"]
    assert (m["path"], m["collection"], m["declared"], m["current"]) == ("src/", True, 2, 3)


# read scope: never name what the caller may not read --------------------------------------
def _narrow_reader(w: World) -> None:
    """The agent may read `src/**` only, from now on."""
    w.coord.revoke_grant(w.admin, w.grants["agent_read"])
    w.coord.grant(w.admin, w.project_id, w.agent.id, ["read"], ["src/**"])


def test_a_path_outside_the_read_scope_is_not_named(any_world: World) -> None:
    w = any_world
    w.edit("secret/key.txt", b"k1\n")
    w.edit("docs/plan.md", b"p1\n")
    task = w.new_task()
    attempt = w.coord.claim(w.agent, task.id, 60)
    deps = {"src/input.txt": 1, "secret/key.txt": 1}
    files: dict[str, bytes | None] = {"src/answer.txt": b"42\n", "docs/plan.md": b"p2\n"}
    cand = w.candidate(attempt, files, deps=deps, collections={"secret/": 1})
    r = Ready(task, attempt, cand, [w.receipt(cand).id])
    _narrow_reader(w)
    for path in ("secret/key.txt", "docs/plan.md", "src/input.txt"):
        w.edit(path, b"moved\n", who=w.human)
    exc, event = refusal(w, r)
    assert exc.failed == ("dependency_stale", "target_base_stale")
    deps_seen = one(exc.details, Reason.DEPENDENCY_STALE)["moved"]
    visible = [m for m in deps_seen if not m["hidden"]]
    hidden = [m for m in deps_seen if m["hidden"]]
    assert [m["path"] for m in visible] == ["src/input.txt"]
    assert [(m["collection"], m["note"]) for m in hidden] == [
        (False, "a declared dependency you may not read"),
        (True, "a declared dependency you may not read"),
    ]
    assert all(m["path"] is m["declared"] is m["current"] is m["change"] is None for m in hidden)
    (target,) = one(exc.details, Reason.TARGET_BASE_STALE)["moved"]
    assert (target["path"], target["note"]) == (None, "a target you may not read")
    shown = json.dumps(exc.details)
    assert "secret" not in shown and "docs/plan.md" not in shown
    # The audit event keeps it all, and names its paths so a feed withholds it from this reader.
    whole = json.dumps(event["details"])
    assert "secret/key.txt" in whole and "secret/" in event["paths"] and "docs/plan.md" in whole
    seen = w.coord.events(w.agent, w.project_id, after=0, limit=1000)
    assert seen[-1].kind == "withheld" and "secret" not in json.dumps([dict(e.data) for e in seen])
    # The task view lists refusals with their details, as each reader may see them.
    (mine,) = w.coord.task_view(w.agent, task.id).rejections
    assert mine.data["details"] == list(exc.details) and mine.data["paths"] == ["src/input.txt"]
    (whole_view,) = w.coord.task_view(w.admin, task.id).rejections
    assert whole_view.data["details"] == event["details"]


def test_a_write_outside_the_read_scope_is_not_named(any_world: World) -> None:
    w = any_world
    r = ready(w)
    cand = w.candidate(r.attempt, {"src/answer.txt": b"42\n", "docs/out.md": b"x\n"})
    r.cand, r.evidence = cand, [w.receipt(cand).id]
    _narrow_reader(w)
    w.coord.grant(w.admin, w.project_id, w.agent.id, ["write", "complete"], ["src/**"])
    docs = w.grants["agent"]  # write and complete on src/** and docs/**
    w.coord.revoke_grant(w.admin, docs)
    exc, event = refusal(w, r)
    d = one(exc.details, Reason.NOT_AUTHORIZED)
    missing = [i for i in d["items"] if i["kind"] == "missing_grant"]
    # write and complete on docs/out.md are missing, and named only as paths it may not read
    assert [(i["action"], i["path"], i["note"]) for i in missing] == [
        ("write", None, "a path you may not read"),
        ("complete", None, "a path you may not read"),
    ]
    (revoked,) = [i for i in d["items"] if i["kind"] == "revoked_grant"]
    assert revoked["grant_id"] == docs and "docs/" not in json.dumps(exc.details)
    assert "docs/out.md" in json.dumps(event["details"])


_PATHS = (
    "src/input.txt",
    "src/answer.txt",
    "ops/deploy.sh",
    "src/out",
    "src/out/report.txt",
)  # every path the cases name


@pytest.mark.parametrize(
    ("name", "breaker", "reason"),
    [c for c in CASES if c[2] is not Reason.TASK_NOT_FOUND],
    ids=[c[0] for c in CASES if c[2] is not Reason.TASK_NOT_FOUND],
)
def test_no_predicate_names_a_path_the_caller_may_not_read(
    any_world: World, name: str, breaker: Callable[[World, Ready], dict[str, object]], reason: Reason
) -> None:
    """Every case again, by an agent that may read `docs/**` only (it still sees the task)."""
    w = any_world
    r = ready(w)
    w.coord.revoke_grant(w.admin, w.grants["agent_read"])
    w.coord.grant(w.admin, w.project_id, w.agent.id, ["read"], ["docs/**"])
    exc, event = refusal(w, r, **breaker(w, r))
    assert exc.failed[0] == reason.value and [d["reason"] for d in exc.details] == list(exc.failed)
    shown = json.dumps(exc.details)
    assert not [p for p in _PATHS if p in shown], shown
    named = [p for p in _PATHS if p in json.dumps(event["details"])]
    assert sorted(named) == event["paths"]  # the audit event keeps them, and lists them
    hidden = [e for d in exc.details for e in [*d["items"], *d["moved"]] if e["hidden"]]
    assert len(hidden) == len([e for d in event["details"] for e in [*d["items"], *d["moved"]] if e["path"]])
