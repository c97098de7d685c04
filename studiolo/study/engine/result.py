"""What an engine run produces: the study's shape plus the comparison with the model."""

from __future__ import annotations

from dataclasses import dataclass

from studiolo.study.engine.compare import RowComparison
from studiolo.study.result import StudyResult
from studiolo.study.table import MechanismRow

__all__ = ["EXPECTED_FULL_ATOMIC", "EngineResult"]

# SPEC §4: the engine's full-atomic row, exactly.
EXPECTED_FULL_ATOMIC = (470, 0, 6224, 0)


@dataclass(frozen=True)
class EngineResult:
    """An engine run.

    ``study`` has the model file's shape (``mode="engine"``); ``oracle_agreement`` counts the
    schedules on which full-atomic's decision equals the oracle's label; ``reasons`` tallies,
    per mechanism, why it rejected (the first failing predicate, or the harness rule);
    ``transactions`` counts the real completion transactions the run needed.
    """

    study: StudyResult
    comparisons: tuple[RowComparison, ...]
    oracle_agreement: int
    reasons: tuple[tuple[str, tuple[tuple[str, int], ...]], ...]
    transactions: tuple[tuple[str, int], ...]

    @property
    def full_atomic_exact(self) -> bool:
        row: MechanismRow = self.study.row("full-atomic")
        counts = (row.safe_accept, row.unsafe_accept, row.safe_reject, row.eligible_reject)
        return counts == EXPECTED_FULL_ATOMIC

    @property
    def oracle_agrees(self) -> bool:
        return self.oracle_agreement == self.study.schedules.schedules

    @property
    def differences_explained(self) -> bool:
        return all(c.same or c.explained for c in self.comparisons)

    @property
    def ok(self) -> bool:
        """Everything SPEC §4 asks of the engine mode holds."""
        study = self.study
        return (
            self.full_atomic_exact
            and self.oracle_agrees
            and self.differences_explained
            and study.schedules.ok
            and study.rows_sum_to_schedules
            and study.replays_ok
            and study.controls_match
        )
