"""The pure rules of retention and legal holds (`core/retention.py`), property by property."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from studiolo.core.retention import (
    MAX_PERIOD,
    Hold,
    RetainedKind,
    RetentionPolicy,
    Tombstone,
    expired,
    holding,
    sweepable,
    utc_text,
)

_times = st.floats(min_value=0, max_value=4e9, allow_nan=False)
_periods = st.none() | st.floats(min_value=0, max_value=MAX_PERIOD, allow_nan=False)
_ids = st.sampled_from(["tsk_a", "tsk_b", "tsk_c"])
_holds = st.lists(
    st.builds(
        Hold,
        id=st.sampled_from(["hld_1", "hld_2"]),
        project_id=st.sampled_from(["prj_a", "prj_b"]),
        task_id=st.none() | _ids,
        reason=st.just("litigation"),
        placed_by=st.just("prn_admin"),
        placed_at=_times,
        released_at=st.none() | _times,
    ),
    max_size=4,
)


@given(period=_periods, since=_times, now=_times)
def test_expired_exactly_when_the_period_has_run(period: float | None, since: float, now: float) -> None:
    assert expired(period, since, now) == (period is not None and since + period <= now)
    if period is None:
        assert not expired(period, since, now)  # no period: kept for ever
    elif since + period <= now:
        assert expired(period, since, now + 1.0)  # once expired, it stays expired


@given(
    period=_periods,
    since=_times,
    now=_times,
    holds=_holds,
    project=st.sampled_from(["prj_a", "prj_b"]),
    task=_ids,
)
def test_a_hold_wins_over_retention(
    period: float | None, since: float, now: float, holds: list[Hold], project: str, task: str
) -> None:
    held = any(h.released_at is None and h.project_id == project and h.task_id in (None, task) for h in holds)
    assert sweepable(period, since, now, holds, project, task) == (expired(period, since, now) and not held)
    assert (holding(holds, project, [task]) is not None) == held


def test_a_project_hold_covers_every_task_and_a_released_hold_nothing() -> None:
    project = Hold("hld_1", "prj_a", None, "audit", "prn_x", 1.0)
    task = Hold("hld_2", "prj_a", "tsk_a", "audit", "prn_x", 1.0)
    released = Hold("hld_3", "prj_a", None, "audit", "prn_x", 1.0, released_at=2.0, released_by="prn_x")
    assert project.covers("prj_a", "tsk_z") and project.covers("prj_a", None)
    assert not project.covers("prj_b", "tsk_z")  # another project's evidence
    assert task.covers("prj_a", "tsk_a") and not task.covers("prj_a", "tsk_b")
    assert not task.covers("prj_a", None)
    assert not released.covers("prj_a", "tsk_a") and holding([released], "prj_a", ["tsk_a"]) is None


@pytest.mark.parametrize(
    "periods",
    [
        {"nonsense": 1.0},
        {"candidates": -1},
        {"candidates": float("nan")},
        {"candidates": float("inf")},
        {"candidates": True},
        {"candidates": "3600"},
        {"verifier_logs": MAX_PERIOD * 2},
    ],
)
def test_a_policy_takes_known_kinds_and_finite_periods_only(periods: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        RetentionPolicy.checked(periods)  # type: ignore[arg-type]


def test_a_policy_reads_by_kind() -> None:
    policy = RetentionPolicy.checked({"candidates": 60, "delegations": None})
    assert policy.period(RetainedKind.CANDIDATES) == 60.0
    assert policy.period(RetainedKind.DELEGATIONS) is None
    assert policy.period(RetainedKind.VERIFIER_LOGS) is None


@given(st.floats(min_value=-1e10, max_value=2.5e11, allow_nan=False))
def test_utc_text_is_the_calendar(seconds: float) -> None:
    expected = datetime.fromtimestamp(int(seconds // 1), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert utc_text(seconds) == expected.rjust(20, "0")


def test_a_tombstone_says_when_who_and_why() -> None:
    stone = Tombstone(
        "prj_a", "sha256:" + "0" * 64, 12, ("src/key.pem",), "src/key.pem", "a leaked key", "prn_x", 0.0
    )
    assert stone.text() == "bytes deleted 1970-01-01T00:00:00Z by prn_x: a leaked key"
