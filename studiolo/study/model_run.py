"""The model run: every mechanism's model (`mechanisms.py`) decides every schedule of the
space, plus the negative controls; the table the report publishes (`results.json`)."""

from __future__ import annotations

from collections.abc import Sequence

from studiolo.study.controls import Control, run_controls
from studiolo.study.harness import execute
from studiolo.study.mechanisms import MECHANISMS
from studiolo.study.provenance import source_digest
from studiolo.study.result import StudyResult
from studiolo.study.schedules import Schedule, summarize
from studiolo.study.setting import study_setup
from studiolo.study.space import Progress, prepare, rows
from studiolo.study.table import Decision

__all__ = ["run_model"]

PROGRESS_EVERY = 250  # schedules between progress reports


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
