"""The study's space: every schedule with the oracle's label, and the table rows built
from decisions on it. Shared by the model run (`model_run.py`) and the engine run
(`engine/run.py`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from studiolo.study.oracle import eligible
from studiolo.study.result import OracleTotals
from studiolo.study.schedules import Schedule, all_schedules
from studiolo.study.table import Decision, MechanismResult, tabulate

__all__ = ["Progress", "StudySpace", "prepare", "rows"]

Progress = Callable[[int, int], None]
"""``progress(done, total)``: executions finished so far out of the run's total."""


@dataclass(frozen=True)
class StudySpace:
    """The schedules and the oracle's label for each: shared by model and engine runs."""

    schedules: tuple[Schedule, ...]
    labels: tuple[bool, ...]

    @property
    def oracle(self) -> OracleTotals:
        eligible_count = sum(self.labels)
        return OracleTotals(eligible_count, len(self.labels) - eligible_count)


def prepare() -> StudySpace:
    """Enumerate the schedules and label every decision with the oracle."""
    schedules = all_schedules()
    return StudySpace(schedules, tuple(eligible(s) for s in schedules))


def rows(
    space: StudySpace,
    mechanism_ids: Sequence[str],
    per_schedule: Sequence[Sequence[Decision]],
) -> tuple[MechanismResult, ...]:
    """One row per mechanism from ``per_schedule[i][j]``: schedule i, mechanism j."""
    return tuple(
        tabulate(mid, space.schedules, space.labels, [d[j] for d in per_schedule])
        for j, mid in enumerate(mechanism_ids)
    )
