"""What one step of the door reads, as one frozen value: the door asks once and gets it all.

The door reads plainly, one call after another; how the reads travel is the store's
business. Each method here is written once over the repositories: on PostgreSQL in a batched
read or a write (psycopg's pipeline mode) the reads it sends with the repositories' `*_later`
methods share one round trip per stage; on SQLite they run one after another.

- `completion`: after the subjects (`WorkRepo.subjects`), everything the completion's decision
  needs given the task and candidate (one round trip).
- `views`: a task's view, or a page of them, in two round trips whatever their number: what
  the tasks' ids name, then what depends on it.
- `trust`: what the trust rule needs of one candidate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from studiolo.core.model import (
    Attempt,
    Candidate,
    Checker,
    Completion,
    Event,
    Grant,
    Observation,
    Receipt,
    Task,
)
from studiolo.core.retention import Tombstone
from studiolo.store.evidence import Gathered

if TYPE_CHECKING:
    from studiolo.store.backend import Tx

__all__ = ["CompletionReads", "Steps", "TaskParts", "Trust"]


@dataclass(frozen=True)
class Trust:
    """The receipts the trust rule weighs for one candidate, and the contract's checkers."""

    evidence: Gathered
    checkers: tuple[Checker, ...]  # the contract's checkers that exist in the project


@dataclass(frozen=True)
class CompletionReads:
    """What the completion's decision reads once the task and candidate are known."""

    grants: tuple[Grant, ...]  # the caller's live grants in the task's project
    trust: Trust
    revisions: tuple[dict[str, int], dict[str, int]]  # (the paths' revisions, the prefixes')
    conflicts: tuple[tuple[str, str], ...]  # what publishing would make both a file and a directory


@dataclass(frozen=True)
class TaskParts:
    """What a task's view is made of."""

    task: Task
    attempts: tuple[Attempt, ...]
    candidates: tuple[Candidate, ...]
    receipts: tuple[Receipt, ...]  # of the task's candidates
    completion: Completion | None
    trust: tuple[tuple[Candidate, Trust], ...]  # of each candidate of the current attempt
    published_now: dict[str, int] | None  # the completion's paths' revisions now (None: no completion)
    deployments: tuple[dict[str, str | None], tuple[Observation, ...]]  # `ContentRepo.deployments`
    events: tuple[Event, ...]  # the task's events, if asked for (`rejections`)
    deleted: tuple[Tombstone, ...]  # tombstones of bytes its candidates name


_Later = Callable[[], TaskParts]
_Firsts = tuple[
    Callable[[], list[Attempt]],
    Callable[[], list[Candidate]],
    Callable[[], list[Receipt]],
    Callable[[], list[Completion]],
]
_NO_DEPLOYMENTS: tuple[dict[str, str | None], tuple[Observation, ...]] = ({}, ())


class Steps:
    """The composite reads of one transaction (`Tx.steps`)."""

    def __init__(self, tx: Tx) -> None:
        self._tx = tx

    def completion(
        self,
        task: Task,
        grantee: str | None,
        bound: Candidate | None,
        cited: Iterable[str],
        paths: Iterable[str],
        prefixes: Iterable[str],
    ) -> CompletionReads:
        """The live grants of `grantee` (None: none to read) in the task's project, the trust
        facts of `bound` (the candidate, if it is the request's attempt's) and the `cited`
        receipts, the revisions of `paths` (and of the paths `bound` publishes) and of
        `prefixes`, and the tree conflicts publishing `bound` would make."""
        tx, pid = self._tx, task.project_id
        grants = tx.access.live_grants_later(grantee, pid) if grantee is not None else list
        trust = self._trust_later(task, bound, cited)
        written = set(bound.files) if bound else set()
        revisions = tx.content.declared_revisions_later(pid, set(paths) | written, prefixes)
        conflicts = tx.content.tree_conflicts_later(pid, bound.files) if bound else list
        return CompletionReads(tuple(grants()), trust(), revisions(), tuple(conflicts()))

    def trust(self, task: Task, cand: Candidate | None, cited: Iterable[str] = ()) -> Trust:
        """The cited receipts of the task's project, those recorded for `cand`'s bytes, and
        the checkers the task's contract names."""
        return self._trust_later(task, cand, cited)()

    def views(self, tasks: Sequence[Task], rejections: bool = True) -> list[TaskParts]:
        """Each task's `TaskParts`, its events only if `rejections`."""
        firsts = [self._firsts(t.id) for t in tasks]
        later = [self._view_later(t, *first, rejections) for t, first in zip(tasks, firsts, strict=True)]
        return [parts() for parts in later]

    def view(
        self, task_id: str, rejections: bool = True, grantee: Callable[[Task], str | None] | None = None
    ) -> TaskParts | None:
        """`views` of the task `task_id` (None: no such task), read with it. `grantee(task)`:
        whose live grants in the task's project to read with the view's second reads (they
        are kept in `AccessRepo`'s cache for the transaction)."""
        found = self._tx.work.task_later(task_id)
        first = self._firsts(task_id)
        listed = found()
        if not listed:
            return None
        (task,) = listed
        who = grantee(task) if grantee is not None else None
        grants = self._tx.access.live_grants_later(who, task.project_id) if who is not None else list
        return self._view_later(task, *first, rejections, grants)()

    def _firsts(self, task_id: str) -> _Firsts:
        """The reads of a view that need only the task's id, sent now."""
        tx = self._tx
        return (
            tx.work.attempts_later(task_id),
            tx.content.candidates_of_task_later(task_id),
            tx.evidence.receipts_of_task_later(task_id),
            tx.work.completion_of_task_later(task_id),
        )

    def _view_later(
        self,
        task: Task,
        attempts_of: Callable[[], list[Attempt]],
        candidates_of: Callable[[], list[Candidate]],
        receipts: Callable[[], list[Receipt]],
        completion_of: Callable[[], list[Completion]],
        rejections: bool,
        also: Callable[[], object] = list,
    ) -> _Later:
        """Send the reads that depend on the first ones; the parts are made when called
        (`also`, a read sent before, is answered then too)."""
        tx, pid = self._tx, task.project_id
        attempts, candidates = tuple(attempts_of()), tuple(candidates_of())
        found = completion_of()
        completion = found[0] if found else None
        current = [c for c in candidates if c.attempt_id == task.current_attempt_id]
        trust = [(c, self._trust_later(task, c, ())) for c in current]
        published = completion.revisions if completion else {}
        now_of = tx.content.declared_revisions_later(pid, published, ()) if completion else None
        deployed_of = (
            tx.content.deployments_later(pid, published, completion.created_at)
            if completion is not None and published
            else None
        )
        events_of = tx.audit.events_of_subject_later(pid, task.id, limit=10_000) if rejections else list
        deleted_of = tx.retention.deleted_of_task_later(pid, task.id) if candidates else list

        def parts() -> TaskParts:
            also()
            digests, seen = deployed_of() if deployed_of is not None else _NO_DEPLOYMENTS
            return TaskParts(
                task=task,
                attempts=attempts,
                candidates=candidates,
                receipts=tuple(receipts()),
                completion=completion,
                trust=tuple((c, facts()) for c, facts in trust),
                published_now=now_of()[0] if now_of is not None else None,
                deployments=(digests, tuple(seen)),
                events=tuple(events_of()),
                deleted=tuple(deleted_of()),
            )

        return parts

    def _trust_later(self, task: Task, cand: Candidate | None, cited: Iterable[str]) -> Callable[[], Trust]:
        tx = self._tx
        bytes_of = (cand.attempt_id, cand.digest, cand.dependency_digest) if cand is not None else None
        gathered = tx.evidence.gather_later(task.project_id, cited, bytes_of)
        checkers = tx.access.checkers_later(task.project_id, {c.checker for c in task.contract.criteria})
        return lambda: Trust(gathered(), tuple(checkers()))
