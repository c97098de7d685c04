"""What one step of the door reads, as one frozen value: the door asks once and gets it all.

The door reads plainly, one call after another; how the reads travel is the store's
business. Each method here is written once over the repositories: on PostgreSQL in a batched
read or a write (psycopg's pipeline mode) the reads it sends with the repositories' `*_later`
methods share one round trip per stage; on SQLite they run one after another.

- `completion`: the completion's subjects (`WorkRepo.subjects`), then everything its decision
  needs given their task and candidate; one round trip in all given a read ahead of the gate.
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
from studiolo.core.predicate import CompletionRequest
from studiolo.core.retention import Tombstone
from studiolo.store.evidence import Gathered
from studiolo.store.work import Subjects

if TYPE_CHECKING:
    from studiolo.store.backend import Tx

__all__ = ["Ahead", "CompletionReads", "Steps", "TaskParts", "Trust", "declared_paths"]


@dataclass(frozen=True)
class Trust:
    """The receipts the trust rule weighs for one candidate, and the contract's checkers."""

    evidence: Gathered
    checkers: tuple[Checker, ...]  # the contract's checkers that exist in the project


@dataclass(frozen=True)
class CompletionReads:
    """What the completion's decision reads once the task and candidate are known."""

    grants: tuple[Grant, ...]  # the caller's live grants in the task's project
    trust: Trust  # of the candidate if it is the request's attempt's
    revisions: tuple[dict[str, int], dict[str, int]]  # (`declared_paths` and published, prefixes)
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
Ahead = tuple[Task, Candidate | None]  # read before the gate (`task_and_candidate`)
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
        q: CompletionRequest,
        grantee: Callable[[Task], str | None],
        ahead: Ahead | None = None,
    ) -> tuple[Subjects | None, CompletionReads | None]:
        """The request's subjects (`WorkRepo.subjects`) and, if found, what the decision reads
        given their task and candidate (`completion_reads`). `ahead`: the task and candidate
        read before the gate (`Store.read_ahead`, PostgreSQL): those reads go out with the
        subjects' (one round trip instead of two), and again if the subjects differ."""
        found_of = self._tx.work.subjects_later(q.task_id, q.attempt_id, q.candidate_id, q.request_id)
        early = self._completion_later(q, grantee, *ahead) if ahead is not None else None
        found = found_of()
        if found is None:
            return None, None
        if early is None or not _same(ahead, found):
            early = self._completion_later(q, grantee, found.task, found.candidate)
        return found, early()

    def _completion_later(
        self, q: CompletionRequest, grantee: Callable[[Task], str | None], task: Task, cand: Candidate | None
    ) -> Callable[[], CompletionReads]:
        """Send the reads of the caller's grants, the trust facts of the candidate if it is the
        request's attempt's (else `candidate_not_bound`: its receipts are never gathered), and
        the revisions of what it declares and publishes; answered when called."""
        tx, pid = self._tx, task.project_id
        who = grantee(task)
        grants = tx.access.live_grants_later(who, pid) if who is not None else list
        bound = cand if cand is not None and cand.attempt_id == q.attempt_id else None
        trust = self._trust_later(task, bound, q.evidence)
        paths = declared_paths(cand) | (set(bound.files) if bound else set())
        prefixes = set(cand.collection_deps) if cand else set()
        revisions = tx.content.declared_revisions_later(pid, paths, prefixes)
        conflicts = tx.content.tree_conflicts_later(pid, bound.files) if bound else list
        return lambda: CompletionReads(tuple(grants()), trust(), revisions(), tuple(conflicts()))

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


def declared_paths(cand: Candidate | None) -> set[str]:
    """The paths whose revisions a candidate declares (its file dependencies and bases)."""
    return set(cand.file_deps) | set(cand.bases) if cand else set()


def _same(ahead: Ahead | None, found: Subjects) -> bool:
    """Whether the reads sent from `ahead` (if any) are those `found` calls for."""
    if ahead is None:
        return False
    task, cand = ahead
    return (
        task.project_id == found.task.project_id
        and task.contract_hash == found.task.contract_hash
        and cand == found.candidate
    )
