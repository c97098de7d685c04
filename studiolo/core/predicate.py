"""The completion predicate of SPEC §2: values in, verdict out.

`evaluate` is the whole decision. The coordinator gathers `CompletionFacts` inside the
same write transaction that will publish the candidate, calls `evaluate`, and commits
only if the verdict accepts. Nothing here reads a clock or a database.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from studiolo.core.canonical import digest_json
from studiolo.core.lease import lease_holds
from studiolo.core.model import (
    Action,
    Attempt,
    AttemptStatus,
    Candidate,
    Checker,
    Grant,
    Principal,
    Receipt,
    ReceiptResult,
    Task,
)
from studiolo.core.paths import matches_any
from studiolo.core.reasons import Reason
from studiolo.core.trust import decisions, is_bound, is_trusted, meets_isolation

__all__ = ["CompletionFacts", "CompletionRequest", "Verdict", "evaluate"]


@dataclass(frozen=True)
class CompletionRequest:
    request_id: str
    task_id: str
    attempt_id: str
    fence: int
    contract_hash: str
    candidate_id: str
    evidence: tuple[str, ...]

    def digest(self) -> str:
        """Digest of everything the request binds (not the request id itself)."""
        return self._digest

    @functools.cached_property
    def _digest(self) -> str:
        return digest_json(
            {
                "task_id": self.task_id,
                "attempt_id": self.attempt_id,
                "fence": self.fence,
                "contract_hash": self.contract_hash,
                "candidate_id": self.candidate_id,
                "evidence": sorted(set(self.evidence)),
            }
        )


@dataclass(frozen=True)
class CompletionFacts:
    """The current state relevant to one request, read inside the commit transaction."""

    caller: Principal
    task: Task | None  # None when missing or invisible to the caller
    attempt: Attempt | None  # the named attempt, if it belongs to the task
    candidate: Candidate | None  # the named candidate, if it belongs to the project
    grants: tuple[Grant, ...]  # the caller's grants in the task's project
    artifact_revisions: Mapping[str, int]  # current revision of every declared path
    collection_revisions: Mapping[str, int]  # current revision of every declared prefix
    receipts: Mapping[str, Receipt]  # cited receipts that exist in the project
    checkers: Mapping[str, Checker]  # the contract's checkers, by `name@version`
    bad_signatures: frozenset[str]  # receipt ids (cited or recorded) whose signature does not verify
    now: float  # the authority clock at the commit point
    incarnation: str  # the authority incarnation at the commit point
    # every receipt recorded for the candidate's bytes, cited or not (core.trust decides)
    recorded: tuple[Receipt, ...] = ()
    # (file, a file under it): what publishing the candidate over the current tree would make
    # both a file and a directory
    tree_conflicts: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Verdict:
    failed: tuple[Reason, ...] = field(default_factory=tuple)

    @property
    def accepted(self) -> bool:
        return not self.failed

    @property
    def reason(self) -> Reason | None:
        return self.failed[0] if self.failed else None


_Check = Callable[[CompletionRequest, CompletionFacts, Task], bool]


def evaluate(
    request: CompletionRequest,
    facts: CompletionFacts,
    disabled: frozenset[Reason] = frozenset(),
) -> Verdict:
    """Every failing predicate, in SPEC order. `disabled` exists for the study's ablations."""
    task = facts.task
    if task is None or task.id != request.task_id:
        return Verdict((Reason.TASK_NOT_FOUND,))
    failed = tuple(
        reason for reason, check in _CHECKS if reason not in disabled and not check(request, facts, task)
    )
    return Verdict(failed)


def _active(_q: CompletionRequest, _f: CompletionFacts, task: Task) -> bool:
    return task.active


def _owner(q: CompletionRequest, f: CompletionFacts, _t: Task) -> bool:
    return f.attempt is not None and f.attempt.principal_id == f.caller.id


def _current(q: CompletionRequest, f: CompletionFacts, task: Task) -> bool:
    a = f.attempt
    return (
        a is not None
        and a.status is AttemptStatus.ACTIVE
        and task.current_attempt_id == a.id
        and a.fence == q.fence
    )


def _lease(_q: CompletionRequest, f: CompletionFacts, _t: Task) -> bool:
    a = f.attempt
    if a is None:
        return True  # nothing to time: reported by the ownership predicates
    return lease_holds(a, f.incarnation, f.now)


def _bound(q: CompletionRequest, f: CompletionFacts, task: Task) -> bool:
    c = f.candidate
    return c is not None and c.task_id == task.id and c.attempt_id == q.attempt_id


def _in_scope(_q: CompletionRequest, f: CompletionFacts, task: Task) -> bool:
    c = f.candidate
    return c is None or all(matches_any(task.contract.scope, p) for p in c.write_set)


def _authorized(_q: CompletionRequest, f: CompletionFacts, _t: Task) -> bool:
    write_set = f.candidate.write_set if f.candidate else frozenset()
    if not any(g.allows(Action.COMPLETE) for g in f.grants):
        return False
    return all(
        any(g.covers(Action.WRITE, p) for g in f.grants)
        and any(g.covers(Action.COMPLETE, p) for g in f.grants)
        for p in write_set
    )


def _contract(q: CompletionRequest, _f: CompletionFacts, task: Task) -> bool:
    return q.contract_hash == task.contract_hash


def _deps_current(_q: CompletionRequest, f: CompletionFacts, _t: Task) -> bool:
    c = f.candidate
    if c is None:
        return True
    files_ok = all(f.artifact_revisions.get(p, 0) == r for p, r in c.file_deps.items())
    dirs_ok = all(f.collection_revisions.get(p, 0) == r for p, r in c.collection_deps.items())
    return files_ok and dirs_ok


def _bases_current(_q: CompletionRequest, f: CompletionFacts, _t: Task) -> bool:
    c = f.candidate
    return c is None or all(f.artifact_revisions.get(p, 0) == r for p, r in c.bases.items())


def _one_kind_per_path(_q: CompletionRequest, f: CompletionFacts, _t: Task) -> bool:
    return not f.tree_conflicts


def _trusted(q: CompletionRequest, f: CompletionFacts, task: Task) -> bool:
    return all(_is_trusted(rid, f, task) for rid in q.evidence)


def _is_trusted(rid: str, f: CompletionFacts, task: Task) -> bool:
    r = f.receipts.get(rid)
    return r is not None and is_trusted(r, task, f.checkers, f.bad_signatures)


def _is_bound(rid: str, q: CompletionRequest, f: CompletionFacts, task: Task) -> bool:
    r, c = f.receipts.get(rid), f.candidate
    return r is not None and c is not None and is_bound(r, task, c, q.attempt_id)


def _evidence_bound(q: CompletionRequest, f: CompletionFacts, task: Task) -> bool:
    cited = [rid for rid in q.evidence if rid in f.receipts]
    return f.candidate is None or all(_is_bound(rid, q, f, task) for rid in cited)


def _separate(q: CompletionRequest, f: CompletionFacts, task: Task) -> bool:
    """A cited pass for a criterion that requires a separate verdict says it was computed
    where the candidate's code never ran (docs/verifiers.md)."""
    return all(meets_isolation(f.receipts[rid], task) for rid in q.evidence if rid in f.receipts)


def _usable(q: CompletionRequest, f: CompletionFacts, task: Task) -> Iterator[Receipt]:
    for rid in q.evidence:
        usable = _is_trusted(rid, f, task) and _is_bound(rid, q, f, task)
        if usable and meets_isolation(f.receipts[rid], task):
            yield f.receipts[rid]


def _criteria_covered(q: CompletionRequest, f: CompletionFacts, task: Task) -> bool:
    seen = {r.criterion for r in _usable(q, f, task)}
    return all(c.id in seen for c in task.contract.criteria)


def _criteria_passed(q: CompletionRequest, f: CompletionFacts, task: Task) -> bool:
    """Every receipt for these bytes counts, cited or not: an uncited fail still decides."""
    c = f.candidate
    if c is None:
        return True
    receipts = [*_usable(q, f, task), *f.recorded]
    verdicts = decisions(task, c, q.attempt_id, receipts, f.checkers, f.bad_signatures)
    return ReceiptResult.FAIL not in verdicts.values()


_CHECKS: tuple[tuple[Reason, _Check], ...] = (
    (Reason.TASK_NOT_ACTIVE, _active),
    (Reason.CALLER_NOT_ATTEMPT_OWNER, _owner),
    (Reason.ATTEMPT_SUPERSEDED, _current),
    (Reason.LEASE_EXPIRED, _lease),
    (Reason.CANDIDATE_NOT_BOUND, _bound),
    (Reason.SCOPE_VIOLATION, _in_scope),
    (Reason.NOT_AUTHORIZED, _authorized),
    (Reason.CONTRACT_MISMATCH, _contract),
    (Reason.DEPENDENCY_STALE, _deps_current),
    (Reason.TARGET_BASE_STALE, _bases_current),
    (Reason.PATH_CONFLICT, _one_kind_per_path),
    (Reason.EVIDENCE_UNTRUSTED, _trusted),
    (Reason.EVIDENCE_NOT_BOUND, _evidence_bound),
    (Reason.EVIDENCE_NOT_SEPARATE, _separate),
    (Reason.EVIDENCE_MISSING, _criteria_covered),
    (Reason.EVIDENCE_FAILED, _criteria_passed),
)
