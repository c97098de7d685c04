"""docs/study.md stays true: its tables and its alternative counts are recomputed here."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from studiolo.study import StudyResult
from studiolo.study.schedules import MAIN_CHAIN, Event, Schedule, all_schedules

DOC = Path(__file__).resolve().parents[2] / "docs" / "study.md"


def _table_rows(title_cell: str) -> list[list[str]]:
    """Rows of the markdown table whose header starts with ``title_cell``."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {title_cell} |"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def _number(cell: str) -> int:
    return int(cell.replace(",", ""))


def test_results_table_matches_the_model(study_result: StudyResult) -> None:
    rows = _table_rows("mechanism")
    assert [r[0] for r in rows] == [m.row.mechanism for m in study_result.mechanisms]
    for cells in rows:
        row = study_result.row(cells[0])
        assert [_number(c) for c in cells[1:5]] == [
            row.safe_accept,
            row.unsafe_accept,
            row.safe_reject,
            row.eligible_reject,
        ], cells[0]


def test_negative_control_table_matches_the_model(study_result: StudyResult) -> None:
    rows = {r[0].split(" ")[0]: r[1:] for r in _table_rows("control")}
    for control in study_result.controls:
        outcomes = dict(control.accepted)
        cells = rows[str(control.control)]
        named = ("full-atomic", "no-evidence", "no-contract-binding")
        for cell, mechanism in zip(cells[:3], named, strict=True):
            assert cell == ("accept" if outcomes[mechanism] else "reject"), control.control
        assert {outcomes["attempt-lease-only"], outcomes["report-only"]} == {cells[3] == "accept"}
        others = {m: a for m, a in outcomes.items() if m not in {*named, "attempt-lease-only"}}
        others.pop("report-only")
        assert set(others.values()) == {cells[4] == "accept"}


def test_engine_mode_section_exists() -> None:
    assert re.search(r"^## Engine mode$", DOC.read_text(encoding="utf-8"), re.MULTILINE)


# -- the alternative counts quoted under "Modelling choices" -------------------------


def _harmful(
    schedule: Schedule, *, input_ok: bool = True, artifact_ok: bool = True
) -> list[tuple[Event, int]]:
    commit = schedule.index(Event.COMMIT)
    found: list[tuple[Event, int]] = []
    for position, event in enumerate(schedule[:commit]):
        if event in MAIN_CHAIN or event is Event.PUBLISH_POLICY:
            continue
        if input_ok and event is Event.INPUT_EDIT and position < schedule.index(Event.READ):
            continue
        before_candidate = position < schedule.index(Event.CANDIDATE)
        if artifact_ok and event is Event.ARTIFACT_EDIT and before_candidate:
            continue
        found.append((event, position))
    return found


def _count(predicate: Callable[[Schedule], bool]) -> int:
    return sum(1 for schedule in all_schedules() if predicate(schedule))


def _only(*events: Event) -> Callable[[Schedule], bool]:
    return lambda s: {e for e, _ in _harmful(s)} == set(events)


def _after_preflight_without(*excluded: Event) -> Callable[[Schedule], bool]:
    def check(s: Schedule) -> bool:
        harmful = _harmful(s)
        late = all(position > s.index(Event.PREFLIGHT) for _, position in harmful)
        return bool(harmful) and late and not any(e in excluded for e, _ in harmful)

    return check


def _no_expire_or_reassign(spoiled_allowed: bool) -> Callable[[Schedule], bool]:
    def check(s: Schedule) -> bool:
        harmful = _harmful(s)
        events = {e for e, _ in harmful}
        spoiled = any(e is Event.ARTIFACT_EDIT and p < s.index(Event.TRUSTED_VERIFY) for e, p in harmful)
        clean = not events & {Event.EXPIRE, Event.REASSIGN}
        return bool(harmful) and clean and (spoiled_allowed or not spoiled)

    return check


def _revoked_after_read(schedule: Schedule) -> bool:
    return schedule.index(Event.REVOKE) > schedule.index(Event.READ)


ALTERNATIVES: list[tuple[str, Callable[[Schedule], bool]]] = [
    ("379 eligible", lambda s: not _harmful(s, input_ok=False)),
    ("324 eligible", lambda s: not _harmful(s, artifact_ok=False)),
    ("201 artifact-only", _only(Event.ARTIFACT_EDIT)),
    ("718 split", _after_preflight_without()),
    ("324 split re-checking attempt and lease", _after_preflight_without(Event.EXPIRE, Event.REASSIGN)),
    ("170 split re-checking grant too", _after_preflight_without(Event.EXPIRE, Event.REASSIGN, Event.REVOKE)),
    ("1914 attempt-lease-only", _no_expire_or_reassign(spoiled_allowed=True)),
    ("1673 with evidence", _no_expire_or_reassign(spoiled_allowed=False)),
    ("424 reassign-only", _only(Event.REASSIGN)),
    ("243 expire-then-reassign", _only(Event.EXPIRE, Event.REASSIGN)),
    ("512 revoke-only", _only(Event.REVOKE)),
    ("389 revoke after read", lambda s: _only(Event.REVOKE)(s) and _revoked_after_read(s)),
]


@pytest.mark.parametrize(("claim", "predicate"), ALTERNATIVES, ids=[a[0] for a in ALTERNATIVES])
def test_documented_alternative_counts(claim: str, predicate: Callable[[Schedule], bool]) -> None:
    expected = int(claim.split(" ")[0])
    assert _count(predicate) == expected
    assert f"{expected:,}" in DOC.read_text(encoding="utf-8"), "quoted in docs/study.md"
