"""The report's §6.3 histories, and the counterexamples kept in results.json."""

from __future__ import annotations

from studiolo.study import StudyResult
from studiolo.study.harness import decide
from studiolo.study.mechanisms import mechanism
from studiolo.study.oracle import eligible
from studiolo.study.schedules import Event, Schedule
from studiolo.study.setting import study_setup

R, C, V, P, M = (
    Event.READ,
    Event.CANDIDATE,
    Event.TRUSTED_VERIFY,
    Event.PREFLIGHT,
    Event.COMMIT,
)


def accepts(mechanism_id: str, schedule: Schedule) -> bool:
    return decide(schedule, mechanism(mechanism_id), study_setup()).accepted


def test_a_valid_check_becomes_obsolete() -> None:
    late_edit = (R, C, V, P, Event.ARTIFACT_EDIT, M)
    assert not eligible(late_edit)
    assert accepts("split-preflight", late_edit)
    assert not accepts("full-atomic", late_edit)


def test_moving_the_artifact_edit_before_preflight_makes_split_reject() -> None:
    early_edit = (R, C, V, Event.ARTIFACT_EDIT, P, M)
    assert not accepts("split-preflight", early_edit)
    assert not accepts("full-atomic", early_edit)


def test_ownership_survives_but_the_dependency_does_not() -> None:
    stale_input = (R, C, Event.INPUT_EDIT, V, P, M)
    assert not eligible(stale_input)
    assert accepts("attempt-lease-only", stale_input)
    assert accepts("no-input-revision", stale_input)
    assert not accepts("full-atomic", stale_input)


def test_a_harmless_policy_publication_is_an_unnecessary_rejection() -> None:
    published_first = (Event.PUBLISH_POLICY, R, C, V, P, M)
    assert eligible(published_first)
    assert accepts("full-atomic", published_first)
    assert not accepts("latest-policy", published_first)


def test_revoke_between_check_and_commit() -> None:
    revoked = (R, C, V, P, Event.REVOKE, M)
    assert not accepts("full-atomic", revoked)
    assert accepts("split-preflight", revoked)
    assert accepts("no-authorization", revoked)
    assert accepts("full-atomic", (R, C, V, P, M, Event.REVOKE))


def test_artifact_edit_before_verification_spoils_the_evidence_too() -> None:
    """Why no-artifact-binding admits 134, not all 201 artifact-only histories."""
    spoiled = (R, C, Event.ARTIFACT_EDIT, V, P, M)
    assert not accepts("no-artifact-binding", spoiled)
    assert not accepts("no-evidence", spoiled)
    assert accepts("no-artifact-binding", (R, C, V, Event.ARTIFACT_EDIT, P, M))


def test_reassignment_renews_the_task_lease() -> None:
    """Why no-attempt-binding admits expire-then-reassign histories (667 = 424 + 243)."""
    both = (R, C, V, P, Event.EXPIRE, Event.REASSIGN, M)
    assert accepts("no-attempt-binding", both)
    assert not accepts("no-lease", both)
    assert not accepts("no-attempt-binding", (R, C, V, P, Event.EXPIRE, M))


def test_revoke_before_read_does_not_stop_the_worker() -> None:
    assert accepts("no-authorization", (Event.REVOKE, R, C, V, P, M))
    assert not accepts("full-atomic", (Event.REVOKE, R, C, V, P, M))


def test_kept_counterexamples_are_real_and_include_the_reports(study_result: StudyResult) -> None:
    for result in study_result.mechanisms:
        mid = result.row.mechanism
        examples = result.counterexamples
        assert len(examples.unsafe_accept) == min(3, result.row.unsafe_accept)
        assert len(examples.eligible_reject) == min(3, result.row.eligible_reject)
        for schedule in examples.unsafe_accept:
            assert accepts(mid, schedule) and not eligible(schedule)
        for schedule in examples.eligible_reject:
            assert not accepts(mid, schedule) and eligible(schedule)
    split = study_result.result("split-preflight").counterexamples.unsafe_accept
    assert (R, C, V, P, Event.ARTIFACT_EDIT, M) in split
    lease_only = study_result.result("attempt-lease-only").counterexamples.unsafe_accept
    assert (R, C, Event.INPUT_EDIT, V, P, M) in lease_only
    latest = study_result.result("latest-policy").counterexamples.eligible_reject
    assert (Event.PUBLISH_POLICY, R, C, V, P, M) in latest
