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
from studiolo.service._trust import ReceiptFacts, receipt_facts_of
from studiolo.store import Tx
from studiolo.store.audit import NEVER_SPLIT, ChainCheck, verify_log
from studiolo.store.steps import TaskParts

__all__ = ["AuditReport", "HandoffView", "Orientation", "TaskView", "ViewOps"]

_T = TypeVar("_T")


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
        """`view_of(visible_task(...))`, read with the caller's grants (`Steps.view`): nothing
        is shown before the grants say the caller may read it."""
        check_id(task_id, "task id")
        grantee = None if caller.is_service_admin else lambda t: self.ctx.grantee(caller, t.project_id)
        parts = tx.steps.view(task_id, grantee=grantee)
        self.ctx.shown_task(tx, caller, task_id, parts.task if parts else None)  # or `task_not_found`
        assert parts is not None
        return _view(tx, parts)

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

    @staticmethod
    def view_of(tx: Tx, task: Task, rejections: bool = True) -> TaskView:
        """The task's view; `rejections=False` skips reading its refused completions (a list row)."""
        return _view(tx, tx.steps.views([task], rejections)[0])

    @staticmethod
    def views_of(tx: Tx, tasks: Sequence[Task], rejections: bool = True) -> list[TaskView]:
        """`view_of` of each task, read together (`Steps.views`)."""
        return [_view(tx, parts) for parts in tx.steps.views(tasks, rejections)]

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


def _view(tx: Tx, parts: TaskParts) -> TaskView:
    """A task's view from what the store read (`Steps.views`)."""
    task, attempts, candidates, completion = parts.task, parts.attempts, parts.candidates, parts.completion
    held = [a for a in attempts if a.id == task.current_attempt_id and a.status is AttemptStatus.ACTIVE]
    ev = TaskEvidence(
        status=task.status,
        has_live_attempt=any(is_live(a, tx.incarnation, tx.now) for a in held),
        has_candidate=any(c.attempt_id == task.current_attempt_id for c in candidates),
        verified=any(_verified(task, c, receipt_facts_of(t)) for c, t in parts.trust),
        requires_deployment=task.contract.requires_deployment,
        deployed=_deployed(completion, parts.deployments),
    )
    still = None
    if completion is not None and parts.published_now is not None:
        still = all(parts.published_now[p] == r for p, r in completion.revisions.items())
    refused = tuple(e for e in parts.events if e.kind == "completion.rejected")
    receipts = parts.receipts if candidates else ()
    fact = strongest_fact(ev)
    return TaskView(task, fact, still, attempts, candidates, receipts, completion, refused, parts.deleted)


def _deployed(
    completion: Completion | None, found: tuple[Mapping[str, str | None], Sequence[Observation]]
) -> bool:
    """Whether every revision the completion published was observed deployed at or after
    its commit (of that revision, or of its bytes)."""
    if completion is None or not completion.revisions:
        return False
    digests, seen = found

    def of(o: Observation, path: str, rev: int) -> bool:  # that revision, or its bytes
        digest = digests.get(path)
        return o.revision == rev or (o.revision is None and digest is not None and o.digest == digest)

    return all(any(o.target == p and of(o, p, rev) for o in seen) for p, rev in completion.revisions.items())
