"""The engine beside the model, schedule by schedule, and the reasons written for differences.

A difference is *explained* when the set of schedules on which the engine and the model
decide differently is exactly the set an explanation below predicts — computed from the
schedule and the model's decision alone, never from the engine's.  Each explanation is also
written, with its counts, in ``docs/study.md`` ("Engine mode").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from studiolo.study.oracle import facts_at_commit
from studiolo.study.schedules import Event, Schedule
from studiolo.study.table import MechanismRow

__all__ = ["EXPLANATIONS", "Explanation", "RowComparison", "compare_rows"]


def _before(schedule: Schedule, first: Event, second: Event) -> bool:
    return first in schedule and schedule.index(first) < schedule.index(second)


@dataclass(frozen=True)
class Explanation:
    """Why the engine decides differently, and on which schedules (given the model's decision)."""

    name: str
    text: str
    differs: Callable[[Schedule, bool], bool]


NO_CANDIDATE = Explanation(
    "no candidate after a reassignment",
    "The door refuses a candidate from an attempt that is no longer current (submit_candidate "
    "checks the attempt), so a worker replaced before its candidate event has nothing to submit "
    "and no mechanism can accept; the model lets it stage a candidate and report anyway.",
    lambda s, model_accepted: model_accepted and _before(s, Event.REASSIGN, Event.CANDIDATE),
)
NAMED_LEASE = Explanation(
    "the lease is the named attempt's",
    "The engine's lease predicate times the attempt the request names (SPEC §2, #5), not the "
    "task's current lease (model choice 6): after expire then reassign the worker's own lease "
    "has run out, so lease_expired still rejects when the attempt predicates are off.",
    lambda s, model_accepted: model_accepted and _before(s, Event.EXPIRE, Event.COMMIT),
)


def _spoiled_evidence_only(schedule: Schedule, model_accepted: bool) -> bool:
    facts = facts_at_commit(schedule)
    edited_before_verify = _before(schedule, Event.ARTIFACT_EDIT, Event.TRUSTED_VERIFY) and _before(
        schedule, Event.CANDIDATE, Event.ARTIFACT_EDIT
    )
    return (
        not model_accepted
        and edited_before_verify
        and facts.worker_owns_task
        and facts.worker_lease_running
        and facts.worker_authorized
        and facts.input_version_read == facts.input_version
    )


IMMUTABLE_EVIDENCE = Explanation(
    "receipts bind immutable candidate bytes",
    "The verifier checks the candidate's immutable bytes, not the working target (model choice "
    "3), so an artifact-edit between candidate and trusted-verify does not spoil the evidence; "
    "with the artifact binding off nothing else catches it.",
    _spoiled_evidence_only,
)

EXPLANATIONS: Mapping[str, tuple[Explanation, ...]] = MappingProxyType(
    {
        "no-attempt-binding": (NO_CANDIDATE, NAMED_LEASE),
        "no-artifact-binding": (IMMUTABLE_EVIDENCE,),
        "report-only": (NO_CANDIDATE,),
    }
)


@dataclass(frozen=True)
class RowComparison:
    """One mechanism's row in both modes and the schedules where the decisions differ."""

    mechanism: str
    model: MechanismRow
    engine: MechanismRow
    model_only_accepts: int  # the model accepts, the engine rejects
    engine_only_accepts: int  # the engine accepts, the model rejects
    explanations: tuple[tuple[Explanation, int], ...]  # each with the schedules it covers
    explained: bool  # the differing schedules are exactly the explained ones

    @property
    def same(self) -> bool:
        return self.model_only_accepts == 0 and self.engine_only_accepts == 0


def compare_rows(
    schedules: Sequence[Schedule],
    model_rows: Sequence[MechanismRow],
    engine_rows: Sequence[MechanismRow],
    model_accepts: Sequence[Sequence[bool]],
    engine_accepts: Sequence[Sequence[bool]],
) -> tuple[RowComparison, ...]:
    """``*_accepts[i][j]``: schedule i, mechanism j, in the order of the rows."""
    return tuple(
        _compare(
            j, schedules, model_row, engine_row, [m[j] for m in model_accepts], [e[j] for e in engine_accepts]
        )
        for j, (model_row, engine_row) in enumerate(zip(model_rows, engine_rows, strict=True))
    )


def _compare(
    j: int,
    schedules: Sequence[Schedule],
    model_row: MechanismRow,
    engine_row: MechanismRow,
    model: Sequence[bool],
    engine: Sequence[bool],
) -> RowComparison:
    if model_row.mechanism != engine_row.mechanism:
        raise ValueError(f"row {j}: {model_row.mechanism} beside {engine_row.mechanism}")
    differing = {i for i, (m, e) in enumerate(zip(model, engine, strict=True)) if m != e}
    explanations = EXPLANATIONS.get(model_row.mechanism, ())
    covered = [{i for i, s in enumerate(schedules) if x.differs(s, model[i])} for x in explanations]
    predicted = set().union(*covered)
    return RowComparison(
        mechanism=model_row.mechanism,
        model=model_row,
        engine=engine_row,
        model_only_accepts=sum(1 for i in differing if model[i]),
        engine_only_accepts=sum(1 for i in differing if engine[i]),
        explanations=tuple((x, len(c & differing)) for x, c in zip(explanations, covered, strict=True)),
        explained=differing == predicted,
    )
