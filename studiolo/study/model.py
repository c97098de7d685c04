"""Run the study in model mode: every mechanism on every schedule, plus controls."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from studiolo.study.controls import Control, run_controls
from studiolo.study.harness import execute
from studiolo.study.mechanisms import MECHANISMS
from studiolo.study.oracle import eligible
from studiolo.study.provenance import source_digest
from studiolo.study.result import OracleTotals, StudyResult
from studiolo.study.schedules import Schedule, all_schedules, summarize
from studiolo.study.setting import study_setup
from studiolo.study.table import Decision, MechanismResult, tabulate

__all__ = ["Progress", "StudySpace", "prepare", "rows", "run_model"]

Progress = Callable[[int, int], None]
"""``progress(done, total)``: executions finished so far out of the run's total."""

PROGRESS_EVERY = 250  # schedules between progress reports


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


def run_model(progress: Progress | None = None) -> StudyResult:
    """The report's bounded study in model mode (87,022 + 91 executions)."""
    space = prepare()
    total = len(MECHANISMS) * (len(space.schedules) + len(Control))
    per_schedule = _decide_all(space.schedules, total, progress)
    controls = run_controls()
    if progress is not None:
        progress(total, total)
    return StudyResult(
        mode="model",
        source_digest=source_digest(),
        schedules=summarize(space.schedules),
        oracle=space.oracle,
        mechanisms=rows(space, [m.mechanism_id for m in MECHANISMS], per_schedule),
        controls=controls,
    )


def _decide_all(
    schedules: Sequence[Schedule], total: int, progress: Progress | None
) -> list[tuple[Decision, ...]]:
    """Every mechanism's decision on every schedule, reporting progress as it goes."""
    setup, width = study_setup(), len(MECHANISMS)
    per_schedule = []
    for index, schedule in enumerate(schedules, 1):
        per_schedule.append(execute(schedule, MECHANISMS, setup))
        if progress is not None and (index % PROGRESS_EVERY == 0 or index == len(schedules)):
            progress(index * width, total)
    return per_schedule
