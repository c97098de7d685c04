"""The report's histories (§4.2, §4.3, §6.3, §6.4) through the real completion transaction."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from studiolo import CompletionRejected, Conflict
from studiolo.store import schema
from tests.service.snapshot import event_count
from tests.service.test_predicates import Ready, ready
from tests.world import World


def reasons_of(world: World, r: Ready, **kw: object) -> tuple[str, ...]:
    with pytest.raises(CompletionRejected) as err:
        world.complete(r.task, r.attempt, r.cand, r.evidence, **kw)  # type: ignore[arg-type]
    return err.value.failed


def test_a_valid_check_becomes_obsolete(world: World) -> None:
    # read → candidate → trusted-verify → preflight → artifact-edit → commit
    r = ready(world)
    world.edit("src/answer.txt", b"100\n")  # another writer changes the target after the check
    assert reasons_of(world, r) == ("target_base_stale",)


def test_input_edited_before_verification(world: World) -> None:
    # read → candidate → input-edit → trusted-verify → preflight → commit
    task = world.new_task()
    att = world.coord.claim(world.agent, task.id, 60)
    cand = world.candidate(att, {"src/answer.txt": b"42\n"}, deps={"src/input.txt": 1})
    world.edit("src/input.txt", b"50\n")
    receipt = world.receipt(cand)  # a genuine observation of the original snapshot
    assert reasons_of(world, Ready(task, att, cand, [receipt.id])) == ("dependency_stale",)


def test_harmless_policy_publication_is_still_accepted(world: World) -> None:
    task = world.new_task()
    assert task.contract.policy_version == 1
    world.coord.publish_policy(world.admin, world.project_id, "Behaviour v2: new defaults.")
    att = world.coord.claim(world.agent, task.id, 60)
    cand = world.candidate(att, {"src/answer.txt": b"42\n"}, deps={"src/input.txt": 1})
    out = world.complete(task, att, cand, [world.receipt(cand).id])
    assert out.completion.receipt["contract_hash"] == task.contract_hash
    assert world.new_task("a later task").contract.policy_version == 2


def test_revocation_before_commit_rejects(world: World) -> None:
    r = ready(world)
    world.coord.revoke_grant(world.admin, world.grants["agent"])
    assert reasons_of(world, r) == ("not_authorized",)


def test_revocation_after_commit_does_not_undo_it(world: World) -> None:
    r = ready(world)
    out = world.complete(r.task, r.attempt, r.cand, r.evidence, request_id="req-stays")
    world.coord.revoke_grant(world.admin, world.grants["agent"])
    view = world.coord.task_view(world.admin, r.task.id)
    assert view.fact.value == "accepted" and view.still_current is True
    again = world.complete(r.task, r.attempt, r.cand, r.evidence, request_id="req-stays")
    assert again.replay and again.completion.signature == out.completion.signature


def test_replaced_attempt_returning_late(world: World) -> None:
    r = ready(world)
    world.coord.reassign(world.admin, r.task.id, world.agent2.id, 60)
    assert reasons_of(world, r) == ("attempt_superseded",)


def test_expired_then_reassigned_attempt(world: World) -> None:
    r = ready(world)
    world.clock.advance(120)
    newer = world.coord.claim(world.agent2, r.task.id, 60)
    assert newer.fence == r.attempt.fence + 1
    assert reasons_of(world, r) == ("attempt_superseded", "lease_expired")


def test_migration_is_explicit(world: World) -> None:
    r = ready(world)
    migrated = world.coord.migrate_task(world.admin, r.task.id, scope=["src/**"])
    assert migrated.contract_hash != r.task.contract_hash
    assert reasons_of(world, r) == ("contract_mismatch", "evidence_not_bound", "evidence_missing")


# The report's directed negative controls (§6.4) -------------------------------------------


def test_control_untrusted_receipt_id(world: World) -> None:
    r = ready(world)
    r.evidence = ["rcp_untrusted0000000000"]
    assert reasons_of(world, r) == ("evidence_untrusted", "evidence_missing")


def test_control_evidence_for_the_wrong_candidate(world: World) -> None:
    r = ready(world)
    other = world.candidate(r.attempt, {"src/answer.txt": b"40\n"}, deps={"src/input.txt": 1})
    r.evidence = [world.receipt(other).id]
    assert reasons_of(world, r) == ("evidence_not_bound", "evidence_missing")


def test_control_evidence_with_the_wrong_digest(world: World) -> None:
    r = ready(world)
    with world.coord.store.engine.begin() as conn:  # an altered evidence record
        row = conn.execute(schema.receipts.select()).first()
        assert row is not None
        body = row.body.replace(r.cand.digest, "sha256:" + "1" * 64)
        conn.execute(update(schema.receipts).where(schema.receipts.c.id == row.id).values(body=body))
    assert reasons_of(world, r) == ("evidence_untrusted", "evidence_not_bound", "evidence_missing")


def test_control_evidence_for_the_wrong_task(world: World) -> None:
    r = ready(world)
    other = world.new_task("another task")
    att = world.coord.claim(world.agent2, other.id, 60)
    twin = world.candidate(att, {"src/answer.txt": b"42\n"}, deps={"src/input.txt": 1}, who=world.agent2)
    r.evidence = [world.receipt(twin).id]
    assert reasons_of(world, r) == ("evidence_not_bound", "evidence_missing")


def test_control_wrong_contract(world: World) -> None:
    r = ready(world)
    other = world.new_task("another contract")
    assert reasons_of(world, r, contract_hash=other.contract_hash) == ("contract_mismatch",)


def test_control_checker_rejects_the_answer(world: World) -> None:
    r = ready(world)
    r.evidence = [world.receipt(r.cand, result="fail").id]
    assert reasons_of(world, r) == ("evidence_failed",)


def test_control_inadequate_checker_accepts_a_wrong_answer(world: World) -> None:
    """Evidence binding cannot repair an unsound criterion: 999 passes an integer check."""
    coord, pid = world.coord, world.project_id
    coord.register_checker(world.admin, pid, "is-integer", "1", "command", {}, [world.verifier.id])
    task = world.new_task("double 21", criteria={"answer": "is-integer@1"})
    att = coord.claim(world.agent, task.id, 60)
    cand = world.candidate(att, {"src/answer.txt": b"999\n"}, deps={"src/input.txt": 1})
    receipt = world.receipt(cand, criterion="answer", checker="is-integer@1")
    out = world.complete(task, att, cand, [receipt.id])
    assert out.completion.receipt["revisions"] == {"src/answer.txt": 2}


# Idempotency -----------------------------------------------------------------------------


def test_identical_replay_returns_the_original_and_writes_nothing(world: World) -> None:
    r = ready(world)
    first = world.complete(r.task, r.attempt, r.cand, r.evidence, request_id="req-x")
    events = event_count(world.coord.store)
    world.edit("src/input.txt", b"99\n")  # environment events after the commit
    events = event_count(world.coord.store)
    again = world.complete(r.task, r.attempt, r.cand, r.evidence, request_id="req-x")
    assert again.replay and not first.replay
    assert again.completion.receipt == first.completion.receipt
    assert event_count(world.coord.store) == events


def test_same_request_id_with_a_changed_candidate_conflicts(world: World) -> None:
    r = ready(world)
    other = world.candidate(r.attempt, {"src/answer.txt": b"43\n"}, deps={"src/input.txt": 1})
    world.complete(r.task, r.attempt, r.cand, r.evidence, request_id="req-y")
    with pytest.raises(Conflict) as err:
        world.complete(r.task, r.attempt, other, r.evidence, request_id="req-y")
    assert err.value.reason == "request_id_conflict" and err.value.status == 409


def test_replay_to_a_caller_who_can_no_longer_read(world: World) -> None:
    r = ready(world)
    world.complete(r.task, r.attempt, r.cand, r.evidence, request_id="req-z")
    world.coord.revoke_grant(world.admin, world.grants["agent_read"])
    with pytest.raises(CompletionRejected) as err:
        world.complete(r.task, r.attempt, r.cand, r.evidence, request_id="req-z")
    assert err.value.failed == ("task_not_found",) and err.value.status == 404
