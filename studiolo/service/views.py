"""Read models: a task with its strongest established fact, the latest handoff, events, the
audit chain check, and the orientation an agent reads first. Reads only: the writes of each
concept live with it (a handoff is left on an attempt: `service/work.py`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from studiolo._exceptions import InvalidRequest, NotFound
from studiolo.core.facts import Fact, TaskEvidence, strongest_fact
from studiolo.core.lease import is_live
from studiolo.core.model import (
    Action,
    Attempt,
    AttemptStatus,
    Candidate,
    Completion,
    Event,
    Grant,
    Handoff,
    Observation,
    Policy,
    Principal,
    Receipt,
    Task,
    TaskStatus,
)
from studiolo.core.retention import Tombstone
from studiolo.core.trust import verified
from studiolo.service._door import Context
from studiolo.service._ids import check_id
from studiolo.service._refusal import confined_rejections, reader_of
from studiolo.service._trust import ReceiptFacts, receipt_facts_later
from studiolo.store import Tx
from studiolo.store.audit import NEVER_SPLIT, ChainCheck, verify_log

__all__ = ["AuditReport", "HandoffView", "Orientation", "TaskView", "ViewOps"]

_T = TypeVar("_T")
# the reads of a task's view keyed by its id alone: attempts, candidates, receipts, completion
_Parts = tuple[
    Callable[[], list[Attempt]],
    Callable[[], list[Candidate]],
    Callable[[], list[Receipt]],
    Callable[[], list[Completion]],
]


@dataclass(frozen=True)
class TaskView:
    task: Task
    fact: Fact
    still_current: bool | None  # for accepted tasks: are its revisions still current?
    attempts: tuple[Attempt, ...]
    candidates: tuple[Candidate, ...]
    receipts: tuple[Receipt, ...]
    completion: Completion | None
    rejections: tuple[Event, ...] = field(default_factory=tuple)
    deleted: tuple[Tombstone, ...] = ()  # bytes its candidates name that were deleted

    @property
    def bytes_deleted(self) -> str | None:
        """Why "still current" and re-verification cannot be answered: the bytes they need
        were deleted (`bytes deleted <when> by <who>: <reason>`); None if none were."""
        if not self.deleted:
            return None
        first = self.deleted[0].text()
        more = len(self.deleted) - 1
        return first + (f" (and {more} more)" if more else "")


@dataclass(frozen=True)
class HandoffView:
    handoff: Handoff
    contract_current: bool
    artifacts: Mapping[str, Mapping[str, Any]]  # path → {revision, current_revision, current}


@dataclass(frozen=True)
class AuditReport:
    ok: bool
    events: int
    head: str  # one digest of every chain's head
    first_bad_seq: int | None = None
    problem: str = ""
    chains: Mapping[str, tuple[int, str]] = field(default_factory=dict)  # verified up to


@dataclass(frozen=True)
class Orientation:
    principal: Principal
    project_id: str
    policy: Policy | None
    grants: tuple[Grant, ...]
    open_tasks: tuple[Task, ...]
    my_attempts: tuple[Attempt, ...]


class ViewOps:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def task_view(self, caller: Principal, task_id: str) -> TaskView:
        """A task with its strongest established fact, attempts, candidates, receipts and completion."""

        def run(tx: Tx) -> TaskView:
            return self.confined(tx, caller, self.visible_view(tx, caller, task_id))

        return self.ctx.store.read(run, batched=True)

    def visible_view(self, tx: Tx, caller: Principal, task_id: str) -> TaskView:
        """`_view(visible_task(...))` in two round trips of reads on PostgreSQL: the task with
        every read keyed by its id, then the caller's grants with the reads that depend on
        the first ones. Nothing is shown before the grants say the caller may read it."""
        check_id(task_id, "task id")
        found = tx.work.task_later(task_id)
        parts = self._parts_later(tx, task_id)
        listed = found()
        if not listed:
            self.ctx.shown_task(tx, caller, task_id, None)  # raises `task_not_found`
        (task,) = listed
        grants = self.ctx.grants_later(tx, caller, task.project_id) if not caller.is_service_admin else list
        view = self._view_later(tx, task, parts)
        grants()  # the caller's grants, read with the view's second reads: `shown_task` asks again
        self.ctx.shown_task(tx, caller, task_id, task)
        return view()

    def list_tasks(
        self,
        caller: Principal,
        project_id: str,
        status: str | None = None,
        limit: int = 200,
        offset: int = 0,
    ) -> list[Task]:
        """A page of the project's tasks, of one status if given."""
        return self._task_page(caller, project_id, status, limit, offset, lambda _tx, tasks: tasks)

    def list_task_views(
        self,
        caller: Principal,
        project_id: str,
        status: str | None = None,
        limit: int = 200,
        offset: int = 0,
    ) -> list[TaskView]:
        """Like `list_tasks`, each with its strongest established fact, in one read."""
        return self._task_page(
            caller,
            project_id,
            status,
            limit,
            offset,
            lambda tx, tasks: [self.confined(tx, caller, v) for v in self.views_of(tx, tasks)],
        )

    def confined(self, tx: Tx, caller: Principal, view: TaskView) -> TaskView:
        """The candidates' file maps cut to the caller's read scope (no digests of other paths),
        and the refusals' details as the caller may see them (docs/reasons.md)."""
        pid = view.task.project_id
        cands = tuple(self.ctx.confine(tx, caller, pid, c) for c in view.candidates)
        refused = view.rejections
        if any(e.data.get("details") for e in refused):
            refused = confined_rejections(refused, reader_of(caller, self.ctx.grants(tx, caller, pid)))
        return replace(view, candidates=cands, rejections=refused)

    def _task_page(
        self,
        caller: Principal,
        project_id: str,
        status: str | None,
        limit: int,
        offset: int,
        shape: Callable[[Tx, list[Task]], list[_T]],
    ) -> list[_T]:
        try:
            wanted = TaskStatus(status) if status else None
        except ValueError as exc:
            raise InvalidRequest(f"unknown status {status!r}") from exc
        if not 1 <= limit <= 1000 or offset < 0:
            raise InvalidRequest("limit is 1..1000 and offset ≥ 0")

        def run(tx: Tx) -> list[_T]:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.READ)
            return shape(tx, tx.work.tasks(project_id, wanted, limit, offset))

        return self.ctx.store.read(run, batched=True)

    def view_of(self, tx: Tx, task: Task, rejections: bool = True) -> TaskView:
        """The task's view; `rejections=False` skips reading its refused completions (a list row)."""
        return self._view_later(tx, task, self._parts_later(tx, task.id), rejections)()

    def views_of(self, tx: Tx, tasks: Sequence[Task], rejections: bool = True) -> list[TaskView]:
        """`view_of` of each task, the reads of every task sent together: in a batched read on
        PostgreSQL, two round trips whatever the number of tasks."""
        parts = [self._parts_later(tx, t.id) for t in tasks]
        later = [self._view_later(tx, t, p, rejections) for t, p in zip(tasks, parts, strict=True)]
        return [view() for view in later]

    @staticmethod
    def _parts_later(tx: Tx, task_id: str) -> _Parts:
        """The reads of a view that need only the task's id, sent now (`Raw.later`)."""
        return (
            tx.work.attempts_later(task_id),
            tx.content.candidates_of_task_later(task_id),
            tx.evidence.receipts_of_task_later(task_id),
            tx.work.completion_of_task_later(task_id),
        )

    def _view_later(
        self, tx: Tx, task: Task, parts: _Parts, rejections: bool = True
    ) -> Callable[[], TaskView]:
        """The task's view from `parts`: the reads that depend on them are sent now, and the
        view is made when called."""
        attempts_of, candidates_of, receipts_of, completion_of = parts
        attempts, candidates = tuple(attempts_of()), tuple(candidates_of())
        found = completion_of()
        completion = found[0] if found else None
        current = [c for c in candidates if c.attempt_id == task.current_attempt_id]
        trust = [(c, receipt_facts_later(tx, task, c)) for c in current]
        project = task.project_id
        published = completion.revisions if completion else {}
        now_of = tx.content.declared_revisions_later(project, published, ()) if completion else None
        deployed_of = self._deployed_later(tx, task, completion)
        refused_of = tx.audit.events_of_subject_later(project, task.id, limit=10_000) if rejections else list
        deleted_of = tx.retention.deleted_of_task_later(project, task.id) if candidates else list
        held = [a for a in attempts if a.id == task.current_attempt_id and a.status is AttemptStatus.ACTIVE]
        if held:
            tx.expect_clock()  # whether its lease is live

        def view() -> TaskView:
            live = any(is_live(a, tx.incarnation, tx.now) for a in held)
            ev = TaskEvidence(
                status=task.status,
                has_live_attempt=live,
                has_candidate=bool(current),
                verified=any(_verified(task, c, facts()) for c, facts in trust),
                requires_deployment=task.contract.requires_deployment,
                deployed=deployed_of(),
            )
            still = None
            if completion is not None and now_of is not None:
                now_revs = now_of()[0]
                still = all(now_revs[p] == r for p, r in completion.revisions.items())
            refused = tuple(e for e in refused_of() if e.kind == "completion.rejected")
            receipts = tuple(receipts_of()) if candidates else ()
            fact = strongest_fact(ev)
            deleted = tuple(deleted_of())
            return TaskView(task, fact, still, attempts, candidates, receipts, completion, refused, deleted)

        return view

    @staticmethod
    def _deployed_later(tx: Tx, task: Task, completion: Completion | None) -> Callable[[], bool]:
        """Whether every revision the completion published was observed deployed at or after
        its commit (of that revision, or of its bytes); the reads sent now."""
        if completion is None or not completion.revisions:
            return lambda: False
        published = completion.revisions
        found = tx.content.deployments_later(task.project_id, published, completion.created_at)

        def deployed() -> bool:
            digests, seen = found()

            def of(o: Observation, path: str, rev: int) -> bool:  # that revision, or its bytes
                digest = digests.get(path)
                return o.revision == rev or (o.revision is None and digest is not None and o.digest == digest)

            return all(any(o.target == p and of(o, p, rev) for o in seen) for p, rev in published.items())

        return deployed

    # handoffs --------------------------------------------------------------
    def handoff_view(self, caller: Principal, task_id: str) -> HandoffView:
        """The task's latest handoff, and whether its contract and artifact revisions are still current."""

        def run(tx: Tx) -> HandoffView:
            task = self.ctx.visible_task(tx, caller, task_id)
            h = tx.work.latest_handoff(task.id)
            if h is None:
                raise NotFound(f"task {task_id} has no handoff")
            now_revs = tx.content.revisions(task.project_id, h.artifacts)
            arts = {
                p: {"revision": r, "current_revision": now_revs[p], "current": now_revs[p] == r}
                for p, r in h.artifacts.items()
            }
            return HandoffView(h, h.contract_hash == task.contract_hash, arts)

        return self.ctx.store.read(run)

    # events and audit ------------------------------------------------------
    def events(self, caller: Principal, project_id: str, after: int = 0, limit: int = 200) -> list[Event]:
        """The project's events after `after`, as the caller may read them (other paths `withheld`)."""
        if not 1 <= limit <= 1000 or after < 0:
            raise InvalidRequest("limit is 1..1000 and after ≥ 0")

        def run(tx: Tx) -> list[Event]:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.READ)
            return self.readable_events(tx, caller, project_id, tx.audit.events(project_id, after, limit))

        return self.ctx.store.read(run)

    def readable_events(self, tx: Tx, caller: Principal, project_id: str, events: list[Event]) -> list[Event]:
        """Events naming a path outside the caller's read scope come `withheld`."""
        return visible_events(self.ctx.path_reader(tx, caller, project_id), events)

    def verify_audit(self, since: AuditReport | None = None) -> AuditReport:
        """Walk every chain on one snapshot: every hash recomputes, every event links to the
        previous event of its chain, and every chain ends at its recorded head. With `since`
        (an earlier report that was ok), each chain is read only after the event it was
        verified up to: a prefix altered afterwards goes unnoticed until the next whole walk."""
        start = since if since is not None and since.ok else None

        def run(tx: Tx) -> AuditReport:
            split = int(tx.meta.get("chain_split") or "0")
            detail = tx.meta.get("detail_split")  # None: a ledger not yet at migration 0016
            detail_split = int(detail) if detail is not None else NEVER_SPLIT
            heads = tx.audit.heads()
            if start is None:
                check = verify_log(tx.audit.iter_all(), split, heads, detail_split)
            else:
                check = ChainCheck(split, events=start.events, detail_split=detail_split)
                check.resume(dict(start.chains))
                _verify_new(tx, check, heads)
            if check.problem:
                return AuditReport(False, check.events, check.head(), check.bad_seq, check.problem)
            return AuditReport(True, check.events, check.head(), chains=check.state())

        return self.ctx.store.read(run)

    def orient(self, caller: Principal, project_id: str) -> Orientation:
        """What an agent reads first: the rules, its grants, the open work, its attempts."""

        def run(tx: Tx) -> Orientation:
            self.ctx.require_project(tx, caller, project_id)
            tasks = tx.work.tasks(project_id, TaskStatus.OPEN, limit=100)
            mine = tuple(tx.work.held_by(project_id, caller.id))  # one read, not one per claimed task
            return Orientation(
                caller,
                project_id,
                tx.access.latest_policy(project_id),
                tuple(self.ctx.grants(tx, caller, project_id)),
                tuple(tasks),
                mine,
            )

        return self.ctx.store.read(run)


def _verify_new(tx: Tx, check: ChainCheck, heads: dict[str, tuple[int, str]]) -> None:
    """Feed `check` each chain's events after the one it was verified up to, then the heads."""
    known = check.state()
    for chain, head in sorted(heads.items()):
        after = known.get(chain, (0, ""))[0]
        while head[0] > after:
            batch = tx.audit.chain_events(chain, after)
            if not batch:
                break
            for e in batch:
                if not check.feed(e):
                    return
            after = batch[-1].seq
    check.finish(heads)


_PATH_SUBJECTS = frozenset({"artifact.edited", "observation.recorded"})
_PATH_MAPS = ("files", "bases", "file_deps", "revisions")
_PATH_LISTS = ("write_set", "paths")  # `paths`: those a refused completion's details name


def visible_events(may_read: Callable[[str], bool] | None, events: list[Event]) -> list[Event]:
    """Each event as a reader with this path filter sees it (None: every path)."""
    if may_read is None:
        return events
    return [e if all(map(may_read, _paths_of(e))) else _withheld(e) for e in events]


def _paths_of(e: Event) -> set[str]:
    """The artifact paths an event names (its subject, or the keys of its path maps)."""
    paths = {e.subject} if e.kind in _PATH_SUBJECTS and e.subject else set()
    for key in _PATH_MAPS:
        value = e.data.get(key)
        if isinstance(value, Mapping):
            paths.update(str(p) for p in value)
    for key in _PATH_LISTS:
        value = e.data.get(key)
        if isinstance(value, list):
            paths.update(str(p) for p in value)
    return paths


def _withheld(e: Event) -> Event:
    """An event naming a path outside the reader's scope: its place in the chain, not its content."""
    return replace(e, kind="withheld", subject=None, data={}, actor=None)


def _verified(task: Task, cand: Candidate, facts: ReceiptFacts) -> bool:
    """The completion predicate's own trust rule (core.trust), on the same ledger facts."""
    return verified(task, cand, facts.recorded, facts.checkers, facts.bad)
