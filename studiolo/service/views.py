"""Read models: a task with its strongest established fact, the latest handoff, events, the
audit chain check, and the orientation an agent reads first. Reads only: the writes of each
concept live with it (a handoff is left on an attempt: `service/work.py`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from studiolo._exceptions import InvalidRequest, NotFound
from studiolo.core.facts import Fact, TaskEvidence, strongest_fact
from studiolo.core.model import (
    Action,
    Attempt,
    AttemptStatus,
    Candidate,
    Completion,
    Event,
    Grant,
    Handoff,
    Policy,
    Principal,
    Receipt,
    Task,
    TaskStatus,
)
from studiolo.core.trust import verified
from studiolo.service._door import Door
from studiolo.service._trust import receipt_facts
from studiolo.store import Tx
from studiolo.store.audit import ChainCheck, verify_log

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


class ViewOps(Door):
    def task_view(self, caller: Principal, task_id: str) -> TaskView:
        """A task with its strongest established fact, attempts, candidates, receipts and completion."""

        def run(tx: Tx) -> TaskView:
            return self._confined(tx, caller, self._view(tx, self.visible_task(tx, caller, task_id)))

        return self.store.read(run)

    def list_tasks(
        self,
        caller: Principal,
        project_id: str,
        status: str | None = None,
        limit: int = 200,
        offset: int = 0,
    ) -> list[Task]:
        """A page of the project's tasks, of one status if given."""
        return self._task_page(caller, project_id, status, limit, offset, lambda _tx, t: t)

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
            lambda tx, t: self._confined(tx, caller, self._view(tx, t)),
        )

    def _confined(self, tx: Tx, caller: Principal, view: TaskView) -> TaskView:
        """The candidates' file maps cut to the caller's read scope (no digests of other paths)."""
        cands = tuple(self.confine(tx, caller, view.task.project_id, c) for c in view.candidates)
        return replace(view, candidates=cands)

    def _task_page(
        self,
        caller: Principal,
        project_id: str,
        status: str | None,
        limit: int,
        offset: int,
        shape: Callable[[Tx, Task], _T],
    ) -> list[_T]:
        try:
            wanted = TaskStatus(status) if status else None
        except ValueError as exc:
            raise InvalidRequest(f"unknown status {status!r}") from exc
        if not 1 <= limit <= 1000 or offset < 0:
            raise InvalidRequest("limit is 1..1000 and offset ≥ 0")

        def run(tx: Tx) -> list[_T]:
            self.require_project(tx, caller, project_id)
            self.require(tx, caller, project_id, Action.READ)
            return [shape(tx, t) for t in tx.work.tasks(project_id, wanted, limit, offset)]

        return self.store.read(run)

    def _view(self, tx: Tx, task: Task, rejections: bool = True) -> TaskView:
        """The task's view; `rejections=False` skips reading its refused completions (a list row)."""
        attempts = tuple(tx.work.attempts(task.id))
        candidates = tuple(tx.content.candidates_of_task(task.id))
        receipts = tuple(tx.evidence.receipts_of_task(task.id)) if candidates else ()
        completion = tx.work.completion_of_task(task.id)
        current = [c for c in candidates if c.attempt_id == task.current_attempt_id]
        live = any(
            a.id == task.current_attempt_id
            and a.status is AttemptStatus.ACTIVE
            and a.incarnation == tx.incarnation
            and tx.now < a.lease_deadline
            for a in attempts
        )
        ev = TaskEvidence(
            status=task.status,
            has_live_attempt=live,
            has_candidate=bool(current),
            verified=any(self._verified(tx, task, c) for c in current),
            requires_deployment=task.contract.requires_deployment,
            deployed=self._deployed(tx, task, completion),
        )
        still = None
        if completion is not None:
            now_revs = tx.content.revisions(task.project_id, completion.revisions)
            still = all(now_revs[p] == r for p, r in completion.revisions.items())
        refused = tuple(
            e
            for e in (tx.audit.events(task.project_id, subject=task.id, limit=10_000) if rejections else ())
            if e.kind == "completion.rejected"
        )
        return TaskView(task, strongest_fact(ev), still, attempts, candidates, receipts, completion, refused)

    @staticmethod
    def _verified(tx: Tx, task: Task, cand: Candidate) -> bool:
        """The completion predicate's own trust rule (core.trust), on the same ledger facts."""
        facts = receipt_facts(tx, task, cand)
        return verified(task, cand, facts.recorded, facts.checkers, facts.bad)

    @staticmethod
    def _deployed(tx: Tx, task: Task, completion: Completion | None) -> bool:
        if completion is None or not completion.revisions:
            return False
        for path, rev in completion.revisions.items():
            digest = next(
                (h["digest"] for h in tx.content.history(task.project_id, path) if h["revision"] == rev), None
            )
            obs = tx.content.observations(task.project_id, path)
            # made at or after the commit, of the accepted revision (or of its bytes)
            if not any(
                o.kind == "deployed"
                and o.observed_at >= completion.created_at
                and (o.revision == rev or (o.revision is None and digest is not None and o.digest == digest))
                for o in obs
            ):
                return False
        return True

    # handoffs --------------------------------------------------------------
    def handoff_view(self, caller: Principal, task_id: str) -> HandoffView:
        """The task's latest handoff, and whether its contract and artifact revisions are still current."""

        def run(tx: Tx) -> HandoffView:
            task = self.visible_task(tx, caller, task_id)
            h = tx.work.latest_handoff(task.id)
            if h is None:
                raise NotFound(f"task {task_id} has no handoff")
            now_revs = tx.content.revisions(task.project_id, h.artifacts)
            arts = {
                p: {"revision": r, "current_revision": now_revs[p], "current": now_revs[p] == r}
                for p, r in h.artifacts.items()
            }
            return HandoffView(h, h.contract_hash == task.contract_hash, arts)

        return self.store.read(run)

    # events and audit ------------------------------------------------------
    def events(self, caller: Principal, project_id: str, after: int = 0, limit: int = 200) -> list[Event]:
        """The project's events after `after`, as the caller may read them (other paths `withheld`)."""
        if not 1 <= limit <= 1000 or after < 0:
            raise InvalidRequest("limit is 1..1000 and after ≥ 0")

        def run(tx: Tx) -> list[Event]:
            self.require_project(tx, caller, project_id)
            self.require(tx, caller, project_id, Action.READ)
            return self.readable_events(tx, caller, project_id, tx.audit.events(project_id, after, limit))

        return self.store.read(run)

    def readable_events(self, tx: Tx, caller: Principal, project_id: str, events: list[Event]) -> list[Event]:
        """Events naming a path outside the caller's read scope come `withheld`."""
        return visible_events(self.path_reader(tx, caller, project_id), events)

    def verify_audit(self, since: AuditReport | None = None) -> AuditReport:
        """Walk every chain on one snapshot: every hash recomputes, every event links to the
        previous event of its chain, and every chain ends at its recorded head. With `since`
        (an earlier report that was ok), each chain is read only after the event it was
        verified up to: a prefix altered afterwards goes unnoticed until the next whole walk."""
        start = since if since is not None and since.ok else None

        def run(tx: Tx) -> AuditReport:
            split = int(tx.meta.get("chain_split") or "0")
            heads = tx.audit.heads()
            if start is None:
                check = verify_log(tx.audit.iter_all(), split, heads)
            else:
                check = ChainCheck(split, events=start.events)
                check.resume(dict(start.chains))
                _verify_new(tx, check, heads)
            if check.problem:
                return AuditReport(False, check.events, check.head(), check.bad_seq, check.problem)
            return AuditReport(True, check.events, check.head(), chains=check.state())

        return self.store.read(run)

    def orient(self, caller: Principal, project_id: str) -> Orientation:
        """What an agent reads first: the rules, its grants, the open work, its attempts."""

        def run(tx: Tx) -> Orientation:
            self.require_project(tx, caller, project_id)
            tasks = tx.work.tasks(project_id, TaskStatus.OPEN, limit=100)
            claimed = tx.work.tasks(project_id, TaskStatus.CLAIMED, limit=1000)
            mine = tuple(
                a
                for t in claimed
                if t.current_attempt_id
                for a in [tx.work.attempt(t.current_attempt_id)]
                if a is not None and a.principal_id == caller.id
            )
            return Orientation(
                caller,
                project_id,
                tx.access.latest_policy(project_id),
                tuple(self.grants(tx, caller, project_id)),
                tuple(tasks),
                mine,
            )

        return self.store.read(run)


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
    write_set = e.data.get("write_set")
    if isinstance(write_set, list):
        paths.update(str(p) for p in write_set)
    return paths


def _withheld(e: Event) -> Event:
    """An event naming a path outside the reader's scope: its place in the chain, not its content."""
    return replace(e, kind="withheld", subject=None, data={}, actor=None)
