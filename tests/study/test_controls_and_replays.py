from __future__ import annotations

import dataclasses

import pytest

from studiolo.study import StudyResult
from studiolo.study.controls import Control, ControlResult
from studiolo.study.harness import decide, execute
from studiolo.study.ledger import CompletionStatus, Ledger
from studiolo.study.mechanisms import MECHANISMS, mechanism
from studiolo.study.schedules import MAIN_CHAIN, Event, all_schedules
from studiolo.study.setting import study_setup
from studiolo.study.world import CompletionRequest, World

INVALID = [c for c in Control if c is not Control.INADEQUATE_CHECKER]
EVIDENCE_CASES = {
    Control.UNTRUSTED_RECEIPT,
    Control.WRONG_CANDIDATE,
    Control.WRONG_DIGEST,
    Control.CHECKER_REJECTS,
}


def _control(result: StudyResult, control: Control) -> ControlResult:
    return next(c for c in result.controls if c.control is control)


def _accepted(result: StudyResult, control: Control, mechanism_id: str) -> bool:
    return dict(_control(result, control).accepted)[mechanism_id]


def test_seven_controls_for_each_of_thirteen_mechanisms(study_result: StudyResult) -> None:
    assert [c.control for c in study_result.controls] == list(Control)
    for control in study_result.controls:
        assert [m for m, _ in control.accepted] == [m.mechanism_id for m in MECHANISMS]
        assert control.matches, control


@pytest.mark.parametrize("control", INVALID)
def test_full_atomic_rejects_the_six_invalid_submissions(study_result: StudyResult, control: Control) -> None:
    assert not _accepted(study_result, control, "full-atomic")


def test_full_atomic_accepts_the_inadequate_checker(study_result: StudyResult) -> None:
    assert _accepted(study_result, Control.INADEQUATE_CHECKER, "full-atomic")


@pytest.mark.parametrize("control", INVALID)
def test_omitted_obligations_admit_their_cases(study_result: StudyResult, control: Control) -> None:
    assert _accepted(study_result, control, "no-evidence") == (control in EVIDENCE_CASES)
    assert _accepted(study_result, control, "no-contract-binding") == (control not in EVIDENCE_CASES)
    assert _accepted(study_result, control, "report-only")


def test_replays_pass_for_every_accepted_execution(study_result: StudyResult) -> None:
    for result in study_result.mechanisms:
        replays = result.replays
        assert replays.accepted_runs == result.row.accepted
        assert replays.identical_returned_receipt == replays.accepted_runs
        assert replays.changed_digest_rejected == replays.accepted_runs
    assert study_result.result("full-atomic").replays.accepted_runs == 470


def _quiescent_request(world: World) -> CompletionRequest:
    """The worker's honest steps, driven through the world's own API."""
    attempt, revision = world.attempt, world.input_revision
    data = str(2 * world.input_at(revision)).encode()
    candidate = world.stage_candidate(attempt.attempt_id, data, revision)
    world.write_working_copy(data)
    receipts = world.verify(candidate.candidate_id, world.setup.pinned_hash, world.working_copy)
    return CompletionRequest(
        request_id="request-1",
        principal=attempt.principal,
        attempt_id=attempt.attempt_id,
        fence=attempt.fence,
        contract_hash=world.setup.pinned_hash,
        candidate_id=candidate.candidate_id,
        candidate_digest=candidate.digest,
        input_revision=revision,
        evidence_ids=receipts,
    )


def test_the_ledger_replays_and_rejects_a_changed_request() -> None:
    world, ledger = World.new(study_setup()), Ledger()
    full = mechanism("full-atomic")
    request = _quiescent_request(world)
    first = ledger.complete(request, lambda: full.evaluate(world, request).accepted)
    world.revoke_worker()  # later events neither undo the receipt nor block its replay
    again = ledger.complete(request, lambda: full.evaluate(world, request).accepted)
    changed = dataclasses.replace(request, candidate_digest="sha256:" + "0" * 64)
    conflict = ledger.complete(changed, lambda: True)
    assert first.status is CompletionStatus.ACCEPTED
    assert again.status is CompletionStatus.REPLAYED and again.receipt == first.receipt
    assert conflict.status is CompletionStatus.CONFLICT
    assert ledger.terminal_writes == 1


def test_a_rejected_request_writes_nothing() -> None:
    world, ledger = World.new(study_setup()), Ledger()
    request = _quiescent_request(world)
    world.expire_lease()
    full = mechanism("full-atomic")
    outcome = ledger.complete(request, lambda: full.evaluate(world, request).accepted)
    assert outcome.status is CompletionStatus.REJECTED
    assert ledger.terminal_writes == 0 and not ledger.entries


def test_sharing_one_world_changes_no_decision() -> None:
    """Each mechanism alone decides exactly as it does in the batched execution."""
    setup = study_setup()
    for schedule in all_schedules()[::11]:
        together = execute(schedule, MECHANISMS, setup)
        alone = tuple(decide(schedule, m, setup) for m in MECHANISMS)
        assert together == alone, schedule


def test_an_accepted_execution_carries_passing_replays() -> None:
    decision = decide((*MAIN_CHAIN, Event.EXPIRE), mechanism("full-atomic"), study_setup())
    assert decision.accepted
    assert decision.replay is not None
    assert decision.replay.identical_returned_receipt
    assert decision.replay.changed_digest_rejected
