"""Every count the report publishes (SPEC §4), from one full model run."""

from __future__ import annotations

import pytest

from studiolo.study import StudyResult, compare, reproduced
from studiolo.study.harness import decide
from studiolo.study.mechanisms import MECHANISMS, mechanism
from studiolo.study.oracle import eligible
from studiolo.study.schedules import all_schedules
from studiolo.study.setting import study_setup

UNSAFE_ACCEPTS = {
    "full-atomic": 0,
    "split-preflight": 718,
    "attempt-lease-only": 1914,
    "no-attempt-binding": 667,
    "no-fence": 0,
    "no-lease": 517,
    "no-input-revision": 328,
    "no-authorization": 512,
    "no-artifact-binding": 134,
    "no-evidence": 0,
    "no-contract-binding": 0,
    "latest-policy": 0,
    "report-only": 6224,
}


def test_mechanism_ids_are_exactly_the_specified_thirteen(study_result: StudyResult) -> None:
    ids = [m.row.mechanism for m in study_result.mechanisms]
    assert ids == list(UNSAFE_ACCEPTS)
    assert [m.mechanism_id for m in MECHANISMS] == ids


def test_schedule_and_execution_totals(study_result: StudyResult) -> None:
    assert study_result.schedules.scenarios == 42
    assert study_result.schedules.schedules == 6694
    assert study_result.primary_executions == 87022
    assert study_result.control_executions == 91
    assert (study_result.oracle.eligible, study_result.oracle.ineligible) == (470, 6224)


def test_every_row_sums_to_6694(study_result: StudyResult) -> None:
    for result in study_result.mechanisms:
        assert result.row.total == 6694, result.row
    assert study_result.rows_sum_to_schedules


@pytest.mark.parametrize(("mechanism_id", "unsafe"), UNSAFE_ACCEPTS.items())
def test_unsafe_accepts(study_result: StudyResult, mechanism_id: str, unsafe: int) -> None:
    assert study_result.row(mechanism_id).unsafe_accept == unsafe


def test_full_atomic_accepts_exactly_the_eligible(study_result: StudyResult) -> None:
    row = study_result.row("full-atomic")
    assert (row.safe_accept, row.unsafe_accept, row.safe_reject, row.eligible_reject) == (
        470,
        0,
        6224,
        0,
    )


def test_full_atomic_decides_like_the_oracle_on_every_schedule() -> None:
    setup, full = study_setup(), mechanism("full-atomic")
    for schedule in all_schedules():
        assert decide(schedule, full, setup).accepted == eligible(schedule), schedule


def test_latest_policy_only_adds_eligible_rejections(study_result: StudyResult) -> None:
    row = study_result.row("latest-policy")
    assert row.eligible_reject == 236
    assert row.unsafe_accept == 0
    assert row.safe_reject == study_result.row("full-atomic").safe_reject


def test_only_latest_policy_rejects_eligible_work(study_result: StudyResult) -> None:
    for result in study_result.mechanisms:
        if result.row.mechanism != "latest-policy":
            assert result.row.eligible_reject == 0, result.row


def test_report_only_accepts_everything(study_result: StudyResult) -> None:
    row = study_result.row("report-only")
    assert (row.safe_accept, row.unsafe_accept, row.safe_reject, row.eligible_reject) == (
        470,
        6224,
        0,
        0,
    )


def test_every_published_comparison_matches(study_result: StudyResult) -> None:
    mismatches = [c for c in compare(study_result) if not c.matches]
    assert mismatches == []
    assert reproduced(study_result)
