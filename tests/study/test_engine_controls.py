"""The seven negative controls through the real door, for every mechanism (report §6.4)."""

from __future__ import annotations

import pytest

from studiolo import InvalidRequest
from studiolo.study import StudyResult
from studiolo.study.controls import Control, ControlResult
from studiolo.study.engine.controls import DRAFT, run_controls
from studiolo.study.engine.explore import ledger
from studiolo.study.engine.session import Session, WorkerState
from studiolo.study.schedules import Event


@pytest.fixture(scope="module")
def controls() -> tuple[ControlResult, ...]:
    return run_controls()


def test_every_control_behaves_as_the_report_expects(controls: tuple[ControlResult, ...]) -> None:
    assert [c.control for c in controls] == list(Control)
    assert all(c.matches for c in controls)
    assert sum(len(c.accepted) for c in controls) == 91


def test_the_engine_decides_every_control_as_the_model_does(
    controls: tuple[ControlResult, ...], study_result: StudyResult
) -> None:
    model = {c.control: c.accepted for c in study_result.controls}
    for control in controls:
        assert control.accepted == model[control.control], control.control


def test_full_atomic_accepts_only_the_inadequate_checker(controls: tuple[ControlResult, ...]) -> None:
    accepted = {c.control for c in controls if dict(c.accepted)["full-atomic"]}
    assert accepted == {Control.INADEQUATE_CHECKER}


def test_the_door_refuses_to_record_a_receipt_for_other_bytes() -> None:
    """Why the wrong-digest control cites a receipt the evidence store never admitted."""
    with ledger() as (project, store):
        session = Session(project, store)
        state = session.apply(Event.CANDIDATE, session.apply(Event.READ, WorkerState()))
        assert state.candidate is not None
        other = session.stage(DRAFT, 1)
        criterion = project.task.contract.criteria[0]
        body = session.receipt_body(state.candidate, criterion, True, digest=other.digest)
        with pytest.raises(InvalidRequest) as refused:
            session.coordinator().submit_receipt(
                project.verifier, state.candidate.id, body, session.sign(body)
            )
        assert refused.value.reason == "evidence_not_bound"
