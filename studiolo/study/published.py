"""The report's published counts, and how a result compares with them.

These numbers are the target the model is checked against, copied from the
report (§6.1, §6.2, §6.4); nothing in the model reads them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from studiolo.study.result import StudyResult
from studiolo.study.table import Outcome

__all__ = ["Comparison", "compare", "reproduced"]

Getter = Callable[[StudyResult], int]

# The per-shape ordering counts of §6.1, keyed by ``Scenario.shape``.
_ORDERINGS = (
    ("none", 1),
    ("1 event", 6),
    ("2 events", 42),
    ("2 events, expire before reassign", 21),
    ("3 events", 336),
    ("3 events, expire before reassign", 168),
)

# Ineligible decisions each mechanism admits (§6.2).
_UNSAFE_ACCEPTS = (
    ("full-atomic", 0),
    ("split-preflight", 718),
    ("attempt-lease-only", 1914),
    ("no-attempt-binding", 667),
    ("no-fence", 0),
    ("no-lease", 517),
    ("no-input-revision", 328),
    ("no-authorization", 512),
    ("no-artifact-binding", 134),
    ("no-evidence", 0),
    ("no-contract-binding", 0),
    ("latest-policy", 0),
)


@dataclass(frozen=True)
class Comparison:
    claim: str
    published: int
    computed: int

    @property
    def matches(self) -> bool:
        return self.published == self.computed


def _cell(mechanism: str, outcome: Outcome) -> Getter:
    return lambda result: result.row(mechanism).count(outcome)


def _orderings(shape: str) -> Getter:
    def get(result: StudyResult) -> int:
        found = [s.orderings_each for s in result.schedules.shapes if s.shape == shape]
        return found[0] if found else -1

    return get


def _claims() -> tuple[tuple[str, int, Getter], ...]:
    space: tuple[tuple[str, int, Getter], ...] = (
        ("scenarios", 42, lambda r: r.schedules.scenarios),
        *((f"orderings: {shape}", n, _orderings(shape)) for shape, n in _ORDERINGS),
        ("schedules", 6694, lambda r: r.schedules.schedules),
        ("primary executions", 87022, lambda r: r.primary_executions),
        ("negative-control executions", 91, lambda r: r.control_executions),
        ("oracle eligible", 470, lambda r: r.oracle.eligible),
        ("oracle ineligible", 6224, lambda r: r.oracle.ineligible),
    )
    rows: tuple[tuple[str, int, Getter], ...] = (
        ("full-atomic safe_accept", 470, _cell("full-atomic", Outcome.SAFE_ACCEPT)),
        ("full-atomic eligible_reject", 0, _cell("full-atomic", Outcome.ELIGIBLE_REJECT)),
        *((f"{m} unsafe_accept", n, _cell(m, Outcome.UNSAFE_ACCEPT)) for m, n in _UNSAFE_ACCEPTS),
        ("latest-policy eligible_reject", 236, _cell("latest-policy", Outcome.ELIGIBLE_REJECT)),
        ("full-atomic replays passed", 470, _replays_passed("full-atomic")),
    )
    return space + rows


def _replays_passed(mechanism: str) -> Getter:
    def get(result: StudyResult) -> int:
        tally = result.result(mechanism).replays
        return min(tally.identical_returned_receipt, tally.changed_digest_rejected)

    return get


def compare(result: StudyResult) -> tuple[Comparison, ...]:
    """Every published count beside the count ``result`` computed."""
    return tuple(Comparison(claim, n, get(result)) for claim, n, get in _claims())


def reproduced(result: StudyResult) -> bool:
    """Every published count matches and every internal check holds."""
    return (
        all(c.matches for c in compare(result))
        and result.schedules.ok
        and result.rows_sum_to_schedules
        and result.replays_ok
        and result.controls_match
    )
