"""What needs a person's attention in a project's task list, and the list's filters.

A task needs attention when its completion was refused since its last candidate, its
holder's lease ran out, its delegation to a remote agent is indeterminate (an operator must
review it), or it was accepted but the deployment its contract requires has not been
observed. Computed from the task views in the same read as the list."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from studiolo.core.facts import Fact
from studiolo.core.lease import is_live, lease_holds
from studiolo.core.model import AttemptStatus, Task, TaskStatus
from studiolo.service.views import TaskView

__all__ = [
    "Attention",
    "ListFilter",
    "Tally",
    "TaskRow",
    "attention_of",
    "fact_without_view",
    "needs_view",
    "tally",
]


class Attention(StrEnum):
    REFUSED = "refused"  # a completion was refused since the task's last candidate
    LEASE_EXPIRED = "lease expired"  # the current attempt is active, its lease is not live
    INDETERMINATE = "delegation indeterminate"  # a remote delegation waits for review
    AWAITING_DEPLOYMENT = "awaiting deployment"  # accepted; the required deployment is unobserved


@dataclass(frozen=True)
class TaskRow:
    task: Task
    fact: Fact
    attention: tuple[Attention, ...] = ()


@dataclass(frozen=True)
class ListFilter:
    """The task list's filters; empty fields match everything."""

    status: TaskStatus | None = None
    fact: Fact | None = None
    attention: Attention | None = None
    needs_attention: bool = False  # any attention at all
    query: str = ""  # a case-insensitive part of the title, or the task id (or its start)
    policy_version: int | None = None

    def searched(self, task: Task) -> bool:
        q = self.query.strip().casefold()
        if q and q not in task.title.casefold() and not task.id.casefold().startswith(q):
            return False
        return self.policy_version is None or task.contract.policy_version == self.policy_version

    def selects(self, row: TaskRow) -> bool:
        if self.status is not None and row.task.status is not self.status:
            return False
        if self.fact is not None and row.fact is not self.fact:
            return False
        if self.attention is not None and self.attention not in row.attention:
            return False
        return not (self.needs_attention and not row.attention)


@dataclass(frozen=True)
class RowsSnapshot:
    """Every task's row as of the project's event `seq`, reusable while no event happens and
    no live lease runs out (`valid_until`): a fact changes only with an event, attention also
    when a lease runs out. A caller keeps it and passes it back (the door still authorizes)."""

    project_id: str
    seq: int
    incarnation: str
    valid_until: float
    rows: tuple[TaskRow, ...]

    def usable(self, project_id: str, seq: int, incarnation: str, now: float) -> bool:
        same = (self.project_id, self.seq, self.incarnation) == (project_id, seq, incarnation)
        return same and now < self.valid_until


def next_lapse(views: Iterable[TaskView], now: float, incarnation: str) -> float:
    """The earliest deadline of a live lease among `views` (inf: none)."""
    live = (
        a.lease_deadline
        for v in views
        for a in v.attempts
        if a.id == v.task.current_attempt_id and is_live(a, incarnation, now)
    )
    return min(live, default=math.inf)


@dataclass(frozen=True)
class Tally:
    """Counts over the tasks the search matches (before the fact/status/attention filters)."""

    total: int = 0
    facts: Mapping[str, int] = field(default_factory=dict)  # strongest fact → count
    attention: Mapping[str, int] = field(default_factory=dict)  # attention → count
    needing: int = 0  # tasks with any attention


def needs_view(task: Task) -> bool:
    """Whether the task's fact or attention needs its view; otherwise its status decides."""
    if task.status is TaskStatus.CANCELLED:
        return False
    if task.status is TaskStatus.COMPLETED:
        return task.contract.requires_deployment
    return task.status is TaskStatus.CLAIMED or task.current_attempt_id is not None


def fact_without_view(task: Task) -> Fact:
    return {TaskStatus.CANCELLED: Fact.CANCELLED, TaskStatus.COMPLETED: Fact.ACCEPTED}.get(
        task.status, Fact.OPEN
    )


def attention_of(view: TaskView, now: float, incarnation: str, indeterminate: bool) -> tuple[Attention, ...]:
    """The reasons a person should look at this task (empty: none)."""
    task, found = view.task, []
    if task.active and _refused_since_last_candidate(view):
        found.append(Attention.REFUSED)
    if task.status is TaskStatus.CLAIMED and _lease_ran_out(view, now, incarnation):
        found.append(Attention.LEASE_EXPIRED)
    if indeterminate:
        found.append(Attention.INDETERMINATE)
    if (
        task.status is TaskStatus.COMPLETED
        and task.contract.requires_deployment
        and view.fact is Fact.ACCEPTED
    ):
        found.append(Attention.AWAITING_DEPLOYMENT)
    return tuple(found)


def _refused_since_last_candidate(view: TaskView) -> bool:
    if not view.rejections:
        return False
    last = max(view.candidates, key=lambda c: (c.created_at, c.id), default=None)
    latest_refusal = max(view.rejections, key=lambda e: e.seq)
    return last is None or latest_refusal.data.get("candidate") == last.id


def _lease_ran_out(view: TaskView, now: float, incarnation: str) -> bool:
    held = [a for a in view.attempts if a.id == view.task.current_attempt_id]
    return any(a.status is AttemptStatus.ACTIVE and not lease_holds(a, incarnation, now) for a in held)


def tally(rows: Iterable[TaskRow]) -> Tally:
    listed = list(rows)
    facts = Counter(r.fact.value for r in listed)
    attention = Counter(a.value for r in listed for a in r.attention)
    return Tally(len(listed), dict(facts), dict(attention), sum(1 for r in listed if r.attention))
