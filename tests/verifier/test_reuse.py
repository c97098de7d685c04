"""Evidence reuse: off by default; when a contract allows it, an explicit, audited link from
an existing receipt about the same bytes, dependencies, criterion and checker version."""

from __future__ import annotations

import pytest

from studiolo._exceptions import CompletionRejected, InvalidRequest, NotAuthorized
from studiolo.core.model import Attempt, Candidate, Receipt, Task
from tests.world import World

ANSWER = {"src/answer.txt": b"42\n"}
DEPS = {"src/input.txt": 1}


def _verified(world: World, reuse: bool) -> tuple[Receipt, Task, Attempt, Candidate]:
    """Task 1 verified by agent-a; task 2 (same bytes and dependencies) claimed by agent-b."""
    first = world.new_task("first", allow_evidence_reuse=reuse)
    a1 = world.coord.claim(world.agent, first.id)
    c1 = world.candidate(a1, ANSWER, deps=DEPS)
    receipt = world.receipt(c1)
    second = world.new_task("second", allow_evidence_reuse=reuse)
    a2 = world.coord.claim(world.agent2, second.id)
    c2 = world.candidate(a2, ANSWER, deps=DEPS, who=world.agent2)
    assert (c1.digest, c1.dependency_digest) == (c2.digest, c2.dependency_digest)
    return receipt, second, a2, c2


def test_reuse_is_off_by_default(world: World) -> None:
    receipt, task, attempt, cand = _verified(world, reuse=False)
    with pytest.raises(NotAuthorized, match="does not allow evidence reuse"):
        world.coord.reuse_receipt(world.agent2, cand.id, receipt.id)
    with pytest.raises(CompletionRejected) as refused:
        world.complete(task, attempt, cand, [receipt.id], who=world.agent2)
    assert refused.value.failed == ("evidence_not_bound", "evidence_missing")


def test_an_audited_link_makes_a_receipt_count(world: World) -> None:
    receipt, task, attempt, cand = _verified(world, reuse=True)
    with pytest.raises(CompletionRejected) as implicit:  # citing it directly is not reuse
        world.complete(task, attempt, cand, [receipt.id], who=world.agent2)
    assert implicit.value.failed == ("evidence_not_bound", "evidence_missing")

    link = world.coord.reuse_receipt(world.agent2, cand.id, receipt.id)
    assert link.reused and link.candidate_id == cand.id and link.id != receipt.id
    assert (link.signature, link.task_id) == (receipt.signature, receipt.task_id)
    assert world.coord.reuse_receipt(world.agent2, cand.id, receipt.id).id == link.id  # idempotent
    events = [e for e in world.coord.events(world.admin, world.project_id) if e.kind == "receipt.reused"]
    assert len(events) == 1
    assert (events[0].subject, events[0].data["source"]) == (link.id, receipt.id)
    assert events[0].actor == world.agent2.id

    outcome = world.complete(task, attempt, cand, [link.id], who=world.agent2)
    assert outcome.completion.receipt["evidence"] == [link.id]


def test_a_link_counts_only_for_its_candidate(world: World) -> None:
    receipt, task, attempt, cand = _verified(world, reuse=True)
    link = world.coord.reuse_receipt(world.agent2, cand.id, receipt.id)
    twin = world.candidate(attempt, ANSWER, deps=DEPS, who=world.agent2)
    with pytest.raises(CompletionRejected) as refused:
        world.complete(task, attempt, twin, [link.id], who=world.agent2)
    assert refused.value.failed == ("evidence_not_bound", "evidence_missing")
    with pytest.raises(InvalidRequest, match="original receipt") as chained:
        world.coord.reuse_receipt(world.agent2, twin.id, link.id)
    assert chained.value.reason == "evidence_not_bound"


def test_reuse_needs_the_same_bytes_and_dependencies(world: World) -> None:
    receipt, _task, attempt, _cand = _verified(world, reuse=True)
    other_bytes = world.candidate(attempt, {"src/answer.txt": b"41\n"}, deps=DEPS, who=world.agent2)
    other_deps = world.candidate(attempt, ANSWER, deps={}, who=world.agent2)
    for cand in (other_bytes, other_deps):
        with pytest.raises(InvalidRequest) as exc:
            world.coord.reuse_receipt(world.agent2, cand.id, receipt.id)
        assert exc.value.reason == "evidence_not_bound"


def test_reuse_needs_the_same_criterion_and_checker_version(world: World) -> None:
    world.coord.register_checker(
        world.admin, world.project_id, "unit", "2", "command", {"argv": ["true"]}, [world.verifier.id]
    )
    first = world.new_task("first", allow_evidence_reuse=True)
    a1 = world.coord.claim(world.agent, first.id)
    receipt = world.receipt(world.candidate(a1, ANSWER, deps=DEPS))
    second = world.new_task("second", allow_evidence_reuse=True, criteria={"tests": "unit@2"})
    a2 = world.coord.claim(world.agent2, second.id)
    c2 = world.candidate(a2, ANSWER, deps=DEPS, who=world.agent2)
    with pytest.raises(InvalidRequest) as exc:
        world.coord.reuse_receipt(world.agent2, c2.id, receipt.id)
    assert exc.value.reason == "evidence_not_bound"


def test_only_the_attempt_owner_links_and_only_trusted_receipts(world: World) -> None:
    receipt, _task, _attempt, cand = _verified(world, reuse=True)
    for stranger in (world.agent, world.verifier):
        with pytest.raises(NotAuthorized):
            world.coord.reuse_receipt(stranger, cand.id, receipt.id)
    world.coord.register_checker(world.admin, world.project_id, "unit", "1", "command", {}, [])
    with pytest.raises(NotAuthorized) as exc:
        world.coord.reuse_receipt(world.agent2, cand.id, receipt.id)
    assert exc.value.reason == "verifier_not_admitted"
