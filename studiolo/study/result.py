"""The value a study run produces, whatever made the decisions (model or engine)."""

from __future__ import annotations

from dataclasses import dataclass

from studiolo.study.controls import ControlResult
from studiolo.study.schedules import ScheduleSummary
from studiolo.study.table import MechanismResult, MechanismRow

__all__ = ["OracleTotals", "StudyResult"]


@dataclass(frozen=True)
class OracleTotals:
    eligible: int
    ineligible: int


@dataclass(frozen=True)
class StudyResult:
    """Everything ``results.json`` records, as typed values.

    ``mode`` names what made the decisions ("model" here; an engine run fills
    the same shape).  ``source_digest`` identifies the study source that
    produced the result.
    """

    mode: str
    source_digest: str
    schedules: ScheduleSummary
    oracle: OracleTotals
    mechanisms: tuple[MechanismResult, ...]
    controls: tuple[ControlResult, ...]

    def row(self, mechanism_id: str) -> MechanismRow:
        return self.result(mechanism_id).row

    def result(self, mechanism_id: str) -> MechanismResult:
        for result in self.mechanisms:
            if result.row.mechanism == mechanism_id:
                return result
        raise KeyError(mechanism_id)

    @property
    def primary_executions(self) -> int:
        return sum(result.row.total for result in self.mechanisms)

    @property
    def control_executions(self) -> int:
        return sum(len(control.accepted) for control in self.controls)

    @property
    def rows_sum_to_schedules(self) -> bool:
        return all(r.row.total == self.schedules.schedules for r in self.mechanisms)

    @property
    def replays_ok(self) -> bool:
        return all(r.replays.ok for r in self.mechanisms)

    @property
    def controls_match(self) -> bool:
        return all(control.matches for control in self.controls)
