"""One test per completion predicate: a request that breaks only that predicate is rejected
with exactly its reason code and changes nothing but the audit log."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import pytest

from studiolo import CompletionRejected
from studiolo.core.canonical import digest_json
from studiolo.core.model import Attempt, Candidate, Task
from studiolo.core.reasons import Reason
from tests.service.snapshot import event_count, snapshot
from tests.world import World


@dataclass
class Ready:
    """A completion request that would be accepted as it stands."""

    task: Task
    attempt: Attempt
    cand: Candidate
    evidence: list[str]


def ready(world: World) -> Ready:
    task = world.new_task()
    attempt = world.coord.claim(world.agent, task.id, 60)
    cand = world.candidate(attempt, {"src/answer.txt": b"42\n"}, deps={"src/input.txt": 1})
    return Ready(task, attempt, cand, [world.receipt(cand).id])


def rejected(world: World, r: Ready, **kw: object) -> tuple[str, ...]:
    before, events = snapshot(world.coord.store), event_count(world.coord.store)
    with pytest.raises(CompletionRejected) as err:
        world.complete(r.task, r.attempt, r.cand, r.evidence, **kw)  # type: ignore[arg-type]
    assert snapshot(world.coord.store) == before, "a rejection changed more than the audit log"
    assert event_count(world.coord.store) == events + 1, "a rejection must be audited"
    assert err.value.reason == err.value.failed[0]
    return err.value.failed


def test_the_valid_request_is_accepted(world: World) -> None:
    r = ready(world)
    out = world.complete(r.task, r.attempt, r.cand, r.evidence)
    assert out.completion.receipt["revisions"] == {"src/answer.txt": 2}
    assert world.coord.task_view(world.admin, r.task.id).task.status.value == "completed"


def _unknown_task(w: World, r: Ready) -> dict[str, object]:
    r.task = Task(**{**r.task.__dict__, "id": "tsk_doesnotexist000"})
    return {}


def _invisible_task(w: World, r: Ready) -> dict[str, object]:
    w.coord.revoke_grant(w.admin, w.grants["agent_read"])
    return {}


def _cancelled(w: World, r: Ready) -> dict[str, object]:
    w.coord.cancel_task(w.admin, r.task.id, "no longer needed")
    return {}


def _other_caller(w: World, r: Ready) -> dict[str, object]:
    return {"who": w.agent2}


def _wrong_fence(w: World, r: Ready) -> dict[str, object]:
    return {"fence": r.attempt.fence + 1}


def _expired(w: World, r: Ready) -> dict[str, object]:
    w.clock.advance(61)
    return {}


def _foreign_candidate(w: World, r: Ready) -> dict[str, object]:
    other = w.new_task("a twin task")
    att = w.coord.claim(w.agent2, other.id, 60)
    twin = w.candidate(att, {"src/answer.txt": b"42\n"}, deps={"src/input.txt": 1}, who=w.agent2)
    assert twin.digest == r.cand.digest and twin.dependency_digest == r.cand.dependency_digest
    r.cand = twin
    return {}


def _outside_scope(w: World, r: Ready) -> dict[str, object]:
    # The door refuses such a candidate at submission (test_hostile), so write it straight
    # into the ledger, as an older server would have: the predicate must still refuse it.
    w.coord.grant(w.admin, w.project_id, w.agent.id, ["write", "complete"], ["ops/**"])
    files: dict[str, str | None] = {"ops/deploy.sh": w.put(b"rm -rf /\n")}
    bases, deps = {"ops/deploy.sh": 0}, {"src/input.txt": 1}
    cand = replace(
        r.cand,
        id="cnd_outsidescope00",
        files=files,
        bases=bases,
        file_deps=deps,
        digest=digest_json({"files": files}),
        dependency_digest=digest_json({"bases": bases, "files": deps, "collections": {}}),
    )
    w.coord.store.write(lambda tx: tx.content.add_candidate(w.project_id, cand))
    r.cand, r.evidence = cand, [w.receipt(cand).id]
    return {}


def _revoked(w: World, r: Ready) -> dict[str, object]:
    w.coord.revoke_grant(w.admin, w.grants["agent"])
    return {}


def _wrong_contract(w: World, r: Ready) -> dict[str, object]:
    return {"contract_hash": "sha256:" + "ab" * 32}


def _stale_dependency(w: World, r: Ready) -> dict[str, object]:
    w.edit("src/input.txt", b"22\n")
    return {}


def _stale_target(w: World, r: Ready) -> dict[str, object]:
    w.edit("src/answer.txt", b"7\n")
    return {}


def _file_where_a_directory_goes(w: World, r: Ready) -> dict[str, object]:
    files = {"src/answer.txt": b"42\n", "src/out/report.txt": b"ok\n"}
    cand = w.candidate(r.attempt, files, deps={"src/input.txt": 1})
    w.edit("src/out", b"a file, after the candidate\n")
    r.cand, r.evidence = cand, [w.receipt(cand).id]
    return {}


def _forged_receipt(w: World, r: Ready) -> dict[str, object]:
    r.evidence.append("rcp_forged0000000000000")
    return {}


def _receipt_for_other_bytes(w: World, r: Ready) -> dict[str, object]:
    other = w.candidate(r.attempt, {"src/answer.txt": b"41\n"}, deps={"src/input.txt": 1})
    r.evidence.append(w.receipt(other).id)
    return {}


def _shared_verdict(w: World, r: Ready) -> dict[str, object]:
    """A contract that requires a separate verdict; beside a separate pass, a shared one is cited."""
    r.task = w.coord.migrate_task(w.admin, r.task.id, separate_verdict=["tests"])
    r.evidence = [w.receipt(r.cand, verdict_isolation="separate").id, w.receipt(r.cand).id]
    return {}


def _no_receipt(w: World, r: Ready) -> dict[str, object]:
    r.evidence.clear()
    return {}


def _failing_receipt(w: World, r: Ready) -> dict[str, object]:
    r.evidence = [w.receipt(r.cand, result="fail").id]
    return {}


CASES: list[tuple[str, Callable[[World, Ready], dict[str, object]], Reason]] = [
    ("unknown task", _unknown_task, Reason.TASK_NOT_FOUND),
    ("task the caller can no longer read", _invisible_task, Reason.TASK_NOT_FOUND),
    ("cancelled task", _cancelled, Reason.TASK_NOT_ACTIVE),
    ("another principal", _other_caller, Reason.CALLER_NOT_ATTEMPT_OWNER),
    ("stale fence", _wrong_fence, Reason.ATTEMPT_SUPERSEDED),
    ("lease ran out", _expired, Reason.LEASE_EXPIRED),
    ("candidate of another attempt", _foreign_candidate, Reason.CANDIDATE_NOT_BOUND),
    ("write outside the pinned scope", _outside_scope, Reason.SCOPE_VIOLATION),
    ("write grant revoked", _revoked, Reason.NOT_AUTHORIZED),
    ("contract hash differs", _wrong_contract, Reason.CONTRACT_MISMATCH),
    ("declared input edited", _stale_dependency, Reason.DEPENDENCY_STALE),
    ("target edited", _stale_target, Reason.TARGET_BASE_STALE),
    ("a file where the candidate needs a directory", _file_where_a_directory_goes, Reason.PATH_CONFLICT),
    ("forged receipt id", _forged_receipt, Reason.EVIDENCE_UNTRUSTED),
    ("receipt for other bytes", _receipt_for_other_bytes, Reason.EVIDENCE_NOT_BOUND),
    ("shared verdict where a separate one is required", _shared_verdict, Reason.EVIDENCE_NOT_SEPARATE),
    ("no receipt", _no_receipt, Reason.EVIDENCE_MISSING),
    ("failing receipt", _failing_receipt, Reason.EVIDENCE_FAILED),
]


@pytest.mark.parametrize(("name", "breaker", "reason"), CASES, ids=[c[0] for c in CASES])
def test_breaking_one_predicate(
    world: World, name: str, breaker: Callable[[World, Ready], dict[str, object]], reason: Reason
) -> None:
    r = ready(world)
    kw = breaker(world, r)
    assert rejected(world, r, **kw) == (reason.value,)


def test_every_predicate_has_a_case() -> None:
    assert {c[2] for c in CASES} == set(Reason)


def test_all_failures_are_reported_in_order(world: World) -> None:
    r = ready(world)
    world.edit("src/input.txt", b"22\n")
    world.edit("src/answer.txt", b"7\n")
    failed = rejected(world, r, fence=r.attempt.fence + 1, contract_hash="sha256:" + "0" * 64)
    assert failed == ("attempt_superseded", "contract_mismatch", "dependency_stale", "target_base_stale")
