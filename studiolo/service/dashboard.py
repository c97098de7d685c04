"""Reads for the dashboard: a page of tasks with their facts, a task with its timeline and
handoff, which tasks pin which policy version, and the audit chain's status. Each is one
read transaction, authorized like the API's reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from studiolo._exceptions import InvalidRequest
from studiolo.core.facts import Fact
from studiolo.core.model import Action, Event, Principal, TaskStatus
from studiolo.service.views import AuditReport, HandoffView, TaskView, ViewOps
from studiolo.store import Tx

__all__ = ["DashboardOps", "TaskListPage", "TaskPage"]

# The statuses a task with a given fact can have: narrows the scan of a fact filter.
_FACT_STATUSES: Mapping[Fact, tuple[TaskStatus, ...]] = {
    Fact.OPEN: (TaskStatus.OPEN, TaskStatus.CLAIMED),
    Fact.CLAIMED: (TaskStatus.CLAIMED,),
    Fact.CANDIDATE_PREPARED: (TaskStatus.CLAIMED,),
    Fact.VERIFIED: (TaskStatus.CLAIMED,),
    Fact.ACCEPTED: (TaskStatus.COMPLETED,),
    Fact.DEPLOYED: (TaskStatus.COMPLETED,),
    Fact.CANCELLED: (TaskStatus.CANCELLED,),
}
_SCAN_BATCH = 500


@dataclass(frozen=True)
class TaskListPage:
    views: tuple[TaskView, ...]  # list rows: their `rejections` are not read (empty)
    has_more: bool
    now: float  # the authority clock, for lease countdowns


@dataclass(frozen=True)
class TaskPage:
    view: TaskView
    timeline: tuple[Event, ...]  # events about the task, its attempts, candidates and receipts
    handoff: HandoffView | None
    now: float
    project_seq: int  # the project's latest event: a live page re-renders when it moves


class DashboardOps(ViewOps):
    def task_list_page(
        self,
        caller: Principal,
        project_id: str,
        *,
        status: str | None = None,
        fact: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> TaskListPage:
        """A page of tasks with their strongest established fact; `fact` filters on it."""
        wanted_status = _status(status)
        wanted_fact = _fact(fact)
        if not 1 <= limit <= 500 or offset < 0:
            raise InvalidRequest("limit is 1..500 and offset ≥ 0")

        def run(tx: Tx) -> TaskListPage:
            self.require_project(tx, caller, project_id)
            self.require(tx, caller, project_id, Action.READ)
            if wanted_fact is None:
                tasks = tx.work.tasks(project_id, wanted_status, limit + 1, offset)  # +1: is there more?
                listed = self._views(tx, tasks[:limit], rejections=False)
                views = [self._confined(tx, caller, v) for v in listed]
                more = len(tasks) > limit
            else:
                found = self._scan_fact(tx, project_id, wanted_status, wanted_fact, limit + 1 + offset)
                views = [self._confined(tx, caller, v) for v in found[offset : offset + limit]]
                more = len(found) > offset + limit
            return TaskListPage(tuple(views), more, tx.now)

        return self.store.read(run, batched=True)

    def _scan_fact(
        self, tx: Tx, project_id: str, status: TaskStatus | None, fact: Fact, want: int
    ) -> list[TaskView]:
        found: list[TaskView] = []
        for st in _FACT_STATUSES[fact]:
            if status is not None and st is not status:
                continue
            offset = 0
            while len(found) < want:
                batch = tx.work.tasks(project_id, st, _SCAN_BATCH, offset)
                found.extend(v for v in self._views(tx, batch, rejections=False) if v.fact is fact)
                if len(batch) < _SCAN_BATCH:
                    break
                offset += _SCAN_BATCH
        return sorted(found, key=lambda v: (v.task.created_at, v.task.id))[:want]

    def task_page(self, caller: Principal, task_id: str, timeline_limit: int = 500) -> TaskPage:
        """A task's view, its audit timeline (the latest `timeline_limit` events) and handoff."""

        def run(tx: Tx) -> TaskPage:
            view = self._confined(tx, caller, self._visible_view(tx, caller, task_id))
            subjects = [view.task.id, *(a.id for a in view.attempts), *(c.id for c in view.candidates)]
            subjects.extend(r.id for r in view.receipts)
            found = tx.audit.events_about(view.task.project_id, subjects, timeline_limit)
            timeline = self.readable_events(tx, caller, view.task.project_id, found)
            handoff = self._handoff_of(tx, view)
            latest = tx.audit.latest(view.task.project_id, 1)
            seq = latest[-1].seq if latest else 0
            return TaskPage(view, tuple(timeline), handoff, tx.now, seq)

        return self.store.read(run, batched=True)

    @staticmethod
    def _handoff_of(tx: Tx, view: TaskView) -> HandoffView | None:
        h = tx.work.latest_handoff(view.task.id)
        if h is None:
            return None
        now_revs = tx.content.revisions(view.task.project_id, h.artifacts)
        arts = {
            p: {"revision": r, "current_revision": now_revs[p], "current": now_revs[p] == r}
            for p, r in h.artifacts.items()
        }
        return HandoffView(h, h.contract_hash == view.task.contract_hash, arts)

    def policy_pins(self, caller: Principal, project_id: str) -> dict[int, list[str]]:
        """Policy version → the ids of the tasks whose contract pins it."""

        def run(tx: Tx) -> dict[int, list[str]]:
            self.require_project(tx, caller, project_id)
            self.require(tx, caller, project_id, Action.READ)
            return tx.work.policy_pins(project_id)

        return self.store.read(run)

    def latest_events(self, caller: Principal, project_id: str, limit: int = 100) -> list[Event]:
        """The project's last `limit` events, oldest first."""
        if not 1 <= limit <= 1000:
            raise InvalidRequest("limit is 1..1000")

        def run(tx: Tx) -> list[Event]:
            self._require_reader(tx, caller, project_id)
            return self.readable_events(tx, caller, project_id, tx.audit.latest(project_id, limit))

        return self.store.read(run)

    def chain_status(
        self, caller: Principal, project_id: str, since: AuditReport | None = None
    ) -> AuditReport:
        """The audit chain's verification, for a reader of the project (`since`: see `verify_audit`)."""
        self.store.read(lambda tx: self._require_reader(tx, caller, project_id))
        return self.verify_audit(since)

    def may_administer(self, caller: Principal, project_id: str) -> bool:
        """Whether the caller holds a live `admin` grant on the project (the pages offer the
        admin forms only then; the door still decides each action)."""

        def run(tx: Tx) -> bool:
            self.require_project(tx, caller, project_id)
            return self.can(tx, caller, project_id, Action.ADMIN)

        return self.store.read(run)

    def _require_reader(self, tx: Tx, caller: Principal, project_id: str) -> None:
        self.require_project(tx, caller, project_id)
        self.require(tx, caller, project_id, Action.READ)


def _status(value: str | None) -> TaskStatus | None:
    try:
        return TaskStatus(value) if value else None
    except ValueError as exc:
        raise InvalidRequest(f"unknown status {value!r}") from exc


def _fact(value: str | None) -> Fact | None:
    try:
        return Fact(value) if value else None
    except ValueError as exc:
        raise InvalidRequest(f"unknown fact {value!r}") from exc
