"""Run the study in model mode: every mechanism on every schedule, plus controls."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from studiolo.study.controls import Control, run_controls
from studiolo.study.harness import execute
from studiolo.study.mechanisms import MECHANISMS, Mechanism
from studiolo.study.oracle import eligible
from studiolo.study.provenance import source_digest
from studiolo.study.result import OracleTotals, StudyResult
from studiolo.study.schedules import Schedule, all_schedules, summarize
from studiolo.study.setting import study_setup
from studiolo.study.table import Decide, MechanismResult, tabulate
from studiolo.study.world import Setup

__all__ = ["Progress", "StudySpace", "prepare", "run_model", "run_rows"]

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


def run_rows(
    space: StudySpace,
    mechanism_ids: Sequence[str],
    decide_for: Callable[[str], Decide],
    advance: Callable[[int], None] | None = None,
) -> tuple[MechanismResult, ...]:
    """One tabulated row per mechanism, with decisions from ``decide_for(mechanism_id)``."""
    return tuple(
        tabulate(mid, space.schedules, space.labels, decide_for(mid), advance) for mid in mechanism_ids
    )


class _Counter:
    """Turns per-batch ``advance(n)`` calls into ``progress(done, total)`` calls."""

    def __init__(self, total: int, progress: Progress | None) -> None:
        self.total, self.done, self.progress = total, 0, progress

    def advance(self, n: int) -> None:
        self.done += n
        if self.progress is not None:
            self.progress(self.done, self.total)


def _model_decider(setup: Setup) -> Callable[[str], Decide]:
    by_id: dict[str, Mechanism] = {m.mechanism_id: m for m in MECHANISMS}

    def decide_for(mechanism_id: str) -> Decide:
        mechanism = by_id[mechanism_id]
        return lambda schedule: execute(schedule, mechanism, setup)

    return decide_for


def run_model(progress: Progress | None = None) -> StudyResult:
    """The report's bounded study in model mode (87,022 + 91 executions)."""
    space = prepare()
    ids = tuple(m.mechanism_id for m in MECHANISMS)
    total = len(ids) * (len(space.schedules) + len(Control))
    counter = _Counter(total, progress)
    rows = run_rows(space, ids, _model_decider(study_setup()), counter.advance)
    controls = run_controls()
    counter.advance(sum(len(c.accepted) for c in controls))
    return StudyResult(
        mode="model",
        source_digest=source_digest(),
        schedules=summarize(space.schedules),
        oracle=space.oracle,
        mechanisms=rows,
        controls=controls,
    )
