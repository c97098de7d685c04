"""Reads for the dashboard: a page of tasks with their facts, a task with its timeline and
handoff, which tasks pin which policy version, and the audit chain's status. Each is one
read transaction, authorized like the API's reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from studiolo._exceptions import InvalidRequest
from studiolo.core.facts import Fact
from studiolo.core.model import Action, Event, Observation, Principal, Project, Task, TaskStatus
from studiolo.core.remote import RemoteDelegation, RemoteState
from studiolo.service._door import Context
from studiolo.service.overview import (
    Attention,
    ListFilter,
    RowsSnapshot,
    Tally,
    TaskRow,
    attention_of,
    fact_without_view,
    needs_view,
    next_lapse,
    tally,
)
from studiolo.service.views import AuditReport, HandoffView, TaskView, ViewOps
from studiolo.store import Tx

__all__ = ["DashboardOps", "DelegationsPage", "ProjectSummary", "TaskListPage", "TaskPage"]

_SCAN_BATCH = 2000


@dataclass(frozen=True)
class TaskListPage:
    views: tuple[TaskView, ...]  # list rows: their `rejections` are not read (empty)
    has_more: bool
    now: float  # the authority clock, for lease countdowns
    tally: Tally = field(default_factory=Tally)  # counts over the tasks the search matches
    selected: int = 0  # how many tasks every filter selects (the pages hold them all)
    attention: Mapping[str, tuple[Attention, ...]] = field(default_factory=dict)  # of the listed tasks
    project_seq: int = 0  # the project's latest event: a live list re-renders when it moves
    snapshot: RowsSnapshot | None = None  # every row, for the next page's `since`


@dataclass(frozen=True)
class TaskPage:
    view: TaskView
    timeline: tuple[Event, ...]  # events about the task, its attempts, candidates and receipts
    handoff: HandoffView | None
    now: float
    project_seq: int  # the project's latest event: a live page re-renders when it moves
    delegations: tuple[RemoteDelegation, ...] = ()  # the task's delegations to remote agents
    deployments: tuple[Observation, ...] = ()  # `deployed` observations of what it published
    attention: tuple[Attention, ...] = ()


@dataclass(frozen=True)
class DelegationsPage:
    delegations: tuple[RemoteDelegation, ...]
    titles: Mapping[str, str]  # task id → title
    orgs: Mapping[str, str]  # organisation id → name


@dataclass(frozen=True)
class ProjectSummary:
    project: Project
    statuses: Mapping[str, int]  # task status → count


class DashboardOps:
    def __init__(self, ctx: Context, views: ViewOps) -> None:
        self.ctx = ctx
        self.views = views

    def task_list_page(
        self,
        caller: Principal,
        project_id: str,
        *,
        status: str | None = None,
        fact: str | None = None,
        attention: str | None = None,
        query: str = "",
        policy_version: int | None = None,
        limit: int = 50,
        offset: int = 0,
        since: RowsSnapshot | None = None,
    ) -> TaskListPage:
        """A page of tasks with their strongest established fact and what needs attention;
        filtered by status, fact, attention (`any`: any at all) and a search of title or id,
        with counts per fact and attention over the tasks the search matches. `since`: the
        rows of an earlier page, reused if still current (the page's `snapshot`)."""
        wanted = _filter(status, fact, attention, query, policy_version)
        if not 1 <= limit <= 500 or offset < 0:
            raise InvalidRequest("limit is 1..500 and offset ≥ 0")

        def run(tx: Tx) -> TaskListPage:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.READ)
            seq = _latest_seq(tx, project_id)
            snapshot = since
            if snapshot is None or not snapshot.usable(project_id, seq, tx.incarnation, tx.now):
                snapshot = self._snapshot(tx, project_id, seq)
            rows = [r for r in snapshot.rows if wanted.searched(r.task)]
            selected = [r for r in rows if wanted.selects(r)]
            shown = selected[offset : offset + limit]
            listed = self.views.views_of(tx, [r.task for r in shown], rejections=False)
            views = tuple(self.views.confined(tx, caller, v) for v in listed)
            marks = {r.task.id: r.attention for r in shown}
            more = len(selected) > offset + limit
            page = TaskListPage(views, more, tx.now, tally(rows), len(selected), marks, seq)
            return replace(page, snapshot=snapshot)

        return self.ctx.store.read(run, batched=True)

    def _snapshot(self, tx: Tx, project_id: str, seq: int) -> RowsSnapshot:
        """Every task with its fact and attention, in creation order; a view is read only for
        the tasks whose status does not decide their fact."""
        tasks = self._all_tasks(tx, project_id)
        heavy = [t for t in tasks if needs_view(t)]
        waiting = {d.task_id for d in tx.remote.delegations(project_id, [RemoteState.INDETERMINATE])}
        views = {v.task.id: v for v in self.views.views_of(tx, heavy)} if heavy else {}
        rows = []
        for t in tasks:
            v = views.get(t.id)
            if v is None:
                marks = (Attention.INDETERMINATE,) if t.id in waiting else ()
                rows.append(TaskRow(t, fact_without_view(t), marks))
            else:
                rows.append(TaskRow(t, v.fact, attention_of(v, tx.now, tx.incarnation, t.id in waiting)))
        lapse = next_lapse(views.values(), tx.now, tx.incarnation)
        return RowsSnapshot(project_id, seq, tx.incarnation, lapse, tuple(rows))

    @staticmethod
    def _all_tasks(tx: Tx, project_id: str) -> list[Task]:
        found: list[Task] = []
        while True:
            batch = tx.work.tasks(project_id, None, _SCAN_BATCH, len(found))
            found.extend(batch)
            if len(batch) < _SCAN_BATCH:
                return found

    def task_page(self, caller: Principal, task_id: str, timeline_limit: int = 500) -> TaskPage:
        """A task's view, its audit timeline (the latest `timeline_limit` events) and handoff."""

        def run(tx: Tx) -> TaskPage:
            view = self.views.confined(tx, caller, self.views.visible_view(tx, caller, task_id))
            subjects = [view.task.id, *(a.id for a in view.attempts), *(c.id for c in view.candidates)]
            subjects.extend(r.id for r in view.receipts)
            found = tx.audit.events_about(view.task.project_id, subjects, timeline_limit)
            timeline = self.views.readable_events(tx, caller, view.task.project_id, found)
            handoff = self._handoff_of(tx, view)
            project = view.task.project_id
            delegations = tuple(tx.remote.delegations(project, None, task_id=view.task.id))
            waiting = any(d.state is RemoteState.INDETERMINATE for d in delegations)
            marks = attention_of(view, tx.now, tx.incarnation, waiting)
            seq = _latest_seq(tx, project)
            deployed = self._deployments(tx, view)
            return TaskPage(view, tuple(timeline), handoff, tx.now, seq, delegations, deployed, marks)

        return self.ctx.store.read(run, batched=True)

    @staticmethod
    def _deployments(tx: Tx, view: TaskView) -> tuple[Observation, ...]:
        """The `deployed` observations of the paths the completion published, made since."""
        c = view.completion
        if c is None or not c.revisions:
            return ()
        _digests, seen = tx.content.deployments(view.task.project_id, c.revisions, c.created_at)
        return tuple(sorted(seen, key=lambda o: (o.observed_at, o.id)))

    def delegations_page(self, caller: Principal, project_id: str) -> DelegationsPage:
        """The project's delegations with their tasks' titles and organisations' names."""

        def run(tx: Tx) -> DelegationsPage:
            self._require_reader(tx, caller, project_id)
            every = tuple(tx.remote.delegations(project_id))
            titles = {}
            for task_id in {d.task_id for d in every}:
                task = tx.work.task(task_id)
                if task is not None:
                    titles[task_id] = task.title
            orgs = {o.id: o.name for o in tx.remote.orgs(project_id)}
            return DelegationsPage(every, titles, orgs)

        return self.ctx.store.read(run)

    def project_summaries(self, caller: Principal) -> list[ProjectSummary]:
        """The projects the caller can see, each with its tasks counted by status."""

        def run(tx: Tx) -> list[ProjectSummary]:
            seen = [p for p in tx.access.projects() if self.ctx.sees_project(tx, caller, p.id)]
            return [ProjectSummary(p, tx.work.count_by_status(p.id)) for p in seen]

        return self.ctx.store.read(run)

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
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.READ)
            return tx.work.policy_pins(project_id)

        return self.ctx.store.read(run)

    def latest_events(
        self,
        caller: Principal,
        project_id: str,
        limit: int = 100,
        *,
        before: int | None = None,
        kind: str | None = None,
    ) -> list[Event]:
        """The project's last `limit` events, oldest first; below seq `before` and of kind
        `kind` if given."""
        if not 1 <= limit <= 1000:
            raise InvalidRequest("limit is 1..1000")

        def run(tx: Tx) -> list[Event]:
            self._require_reader(tx, caller, project_id)
            found = tx.audit.latest(project_id, limit, before, kind or None)
            return self.views.readable_events(tx, caller, project_id, found)

        return self.ctx.store.read(run)

    def chain_status(
        self, caller: Principal, project_id: str, since: AuditReport | None = None
    ) -> AuditReport:
        """The audit chain's verification, for a reader of the project (`since`: see `verify_audit`)."""
        self.ctx.store.read(lambda tx: self._require_reader(tx, caller, project_id))
        return self.views.verify_audit(since)

    def may_administer(self, caller: Principal, project_id: str) -> bool:
        """Whether the caller holds a live `admin` grant on the project (the pages offer the
        admin forms only then; the door still decides each action)."""

        def run(tx: Tx) -> bool:
            self.ctx.require_project(tx, caller, project_id)
            return self.ctx.can(tx, caller, project_id, Action.ADMIN)

        return self.ctx.store.read(run)

    def _require_reader(self, tx: Tx, caller: Principal, project_id: str) -> None:
        self.ctx.require_project(tx, caller, project_id)
        self.ctx.require(tx, caller, project_id, Action.READ)


def _latest_seq(tx: Tx, project_id: str) -> int:
    latest = tx.audit.latest(project_id, 1)
    return latest[-1].seq if latest else 0


def _filter(
    status: str | None, fact: str | None, attention: str | None, query: str, policy_version: int | None
) -> ListFilter:
    if len(query) > 200:
        raise InvalidRequest("a search is at most 200 characters")
    anything = attention == "any"
    try:
        wanted = Attention(attention) if attention and not anything else None
    except ValueError as exc:
        raise InvalidRequest(f"unknown attention {str(attention)[:40]!r}") from exc
    return ListFilter(_status(status), _fact(fact), wanted, anything, query, policy_version)


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
