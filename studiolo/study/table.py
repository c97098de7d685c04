"""Tabulate decisions against the oracle's labels: one row per mechanism.

Nothing here knows how a decision was made.  A model run and an engine run
both hand :func:`tabulate` one :class:`Decision` per schedule and get the same
row shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from studiolo.study.schedules import Schedule

__all__ = [
    "COUNTEREXAMPLES_PER_KIND",
    "Counterexamples",
    "Decision",
    "MechanismResult",
    "MechanismRow",
    "Outcome",
    "ReplayCheck",
    "ReplayTally",
    "classify",
    "tabulate",
]

COUNTEREXAMPLES_PER_KIND = 3


class Outcome(StrEnum):
    SAFE_ACCEPT = "safe_accept"
    UNSAFE_ACCEPT = "unsafe_accept"
    SAFE_REJECT = "safe_reject"
    ELIGIBLE_REJECT = "eligible_reject"


def classify(accepted: bool, eligible: bool) -> Outcome:
    if accepted:
        return Outcome.SAFE_ACCEPT if eligible else Outcome.UNSAFE_ACCEPT
    return Outcome.ELIGIBLE_REJECT if eligible else Outcome.SAFE_REJECT


@dataclass(frozen=True)
class ReplayCheck:
    """Replays after all environment events (report §6.4).

    The identical request must return the original receipt with the
    terminal-write count still one; the same request id with a changed
    candidate digest must be rejected.
    """

    identical_returned_receipt: bool
    changed_digest_rejected: bool


@dataclass(frozen=True)
class Decision:
    """One execution's decision; ``replay`` is None unless it was accepted."""

    accepted: bool
    replay: ReplayCheck | None = None


@dataclass(frozen=True)
class MechanismRow:
    mechanism: str
    safe_accept: int
    unsafe_accept: int
    safe_reject: int
    eligible_reject: int

    @property
    def total(self) -> int:
        return self.safe_accept + self.unsafe_accept + self.safe_reject + self.eligible_reject

    @property
    def accepted(self) -> int:
        return self.safe_accept + self.unsafe_accept

    def count(self, outcome: Outcome) -> int:
        value: int = getattr(self, outcome.value)
        return value


@dataclass(frozen=True)
class ReplayTally:
    """Replay checks run after every accepted execution, and how many passed."""

    accepted_runs: int
    identical_returned_receipt: int
    changed_digest_rejected: int

    @property
    def ok(self) -> bool:
        return (
            self.identical_returned_receipt == self.accepted_runs
            and self.changed_digest_rejected == self.accepted_runs
        )


@dataclass(frozen=True)
class Counterexamples:
    """The first histories (shortest first) with an unsafe accept or an eligible reject."""

    unsafe_accept: tuple[Schedule, ...]
    eligible_reject: tuple[Schedule, ...]


@dataclass(frozen=True)
class MechanismResult:
    row: MechanismRow
    replays: ReplayTally
    counterexamples: Counterexamples


def tabulate(
    mechanism: str,
    schedules: Sequence[Schedule],
    labels: Sequence[bool],
    decisions: Sequence[Decision],
) -> MechanismResult:
    """Count one mechanism's decisions (one per schedule) against the oracle's labels.

    ``schedules`` must be ordered shortest first so the kept counterexamples
    are the shortest ones.
    """
    counts = dict.fromkeys(Outcome, 0)
    examples: dict[Outcome, list[Schedule]] = {o: [] for o in Outcome}
    replays: list[ReplayCheck] = []
    for schedule, eligible, decision in zip(schedules, labels, decisions, strict=True):
        outcome = classify(decision.accepted, eligible)
        counts[outcome] += 1
        if len(examples[outcome]) < COUNTEREXAMPLES_PER_KIND:
            examples[outcome].append(schedule)
        if decision.replay is not None:
            replays.append(decision.replay)
    return MechanismResult(
        row=MechanismRow(mechanism, *(counts[o] for o in Outcome)),
        replays=_tally(replays),
        counterexamples=Counterexamples(
            tuple(examples[Outcome.UNSAFE_ACCEPT]), tuple(examples[Outcome.ELIGIBLE_REJECT])
        ),
    )


def _tally(replays: Sequence[ReplayCheck]) -> ReplayTally:
    return ReplayTally(
        accepted_runs=len(replays),
        identical_returned_receipt=sum(r.identical_returned_receipt for r in replays),
        changed_digest_rejected=sum(r.changed_digest_rejected for r in replays),
    )
