"""What a refused completion failed on, as facts (SPEC §8; the report's §7.2).

`explain` turns the request, the facts the predicate saw and the few extra facts the door
reads in the same transaction when it refuses (`Circumstances`) into one detail per failed
predicate: which declared path moved and who moved it, which grant is missing and what
revoked it, who holds the task now, the lease deadline against the commit time, which
criterion lacks a passing receipt. These are the full details (the audit event keeps them);
`studiolo.core.refusal_view.for_reader` filters them for the caller. Values in, values out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from studiolo.core.model import Action, Attempt, Candidate, Grant, Receipt, ReceiptResult, Task
from studiolo.core.paths import matches_any
from studiolo.core.predicate import CompletionFacts, CompletionRequest, Verdict
from studiolo.core.reasons import Reason
from studiolo.core.trust import is_bound, is_trusted, meets_isolation

__all__ = [
    "Change",
    "Circumstances",
    "Detail",
    "Item",
    "Moved",
    "explain",
]


@dataclass(frozen=True)
class Change:
    """A recorded change: when, by whom (a principal id; None: the service), and what it was
    (`edit`, a completion id, or an audit event's kind), with the event's seq when known."""

    at: float
    by: str | None
    cause: str
    seq: int | None = None
    note: str = ""  # e.g. a cancellation's reason


@dataclass(frozen=True)
class Moved:
    """A declared path (or `prefix/` collection) whose revision is not the one declared."""

    path: str
    declared: int
    current: int
    collection: bool = False
    change: Change | None = None  # what made the current revision (files only)


@dataclass(frozen=True)
class Item:
    """One fact of a detail: a `kind` and its fields (paths are named under `path`)."""

    kind: str
    fields: Mapping[str, object] = field(default_factory=dict)
    path: str | None = None  # a path this item names (None: none)
    change: Change | None = None


@dataclass(frozen=True)
class Detail:
    """Why one predicate failed: its reason, plain facts, and the items it names."""

    reason: Reason
    facts: Mapping[str, object] = field(default_factory=dict)
    items: tuple[Item, ...] = ()
    moved: tuple[Moved, ...] = ()
    change: Change | None = None  # the one change behind it (a cancellation, a reassignment, ...)


@dataclass(frozen=True)
class Circumstances:
    """What the door reads, in the refusing transaction, only to explain a refusal."""

    attempts: tuple[Attempt, ...] = ()  # every attempt of the task, by fence
    attempt_change: Change | None = None  # what ended the named attempt (release, claim, reassign)
    task_change: Change | None = None  # the completion or cancellation of an inactive task
    migration: Change | None = None  # the task's last contract migration
    revoked: tuple[tuple[Grant, Change | None], ...] = ()  # the caller's revoked grants here
    path_changes: Mapping[str, Change] = field(default_factory=dict)  # path → its current revision's change


def explain(
    q: CompletionRequest, f: CompletionFacts, verdict: Verdict, c: Circumstances
) -> tuple[Detail, ...]:
    """One detail per failed predicate, in the verdict's order (none for `task_not_found`)."""
    task = f.task
    if task is None or task.id != q.task_id:
        return ()
    return tuple(_EXPLAIN[r](q, f, task, c) for r in verdict.failed if r in _EXPLAIN)


_Explain = Callable[[CompletionRequest, CompletionFacts, Task, Circumstances], Detail]


def _inactive(_q: CompletionRequest, _f: CompletionFacts, task: Task, c: Circumstances) -> Detail:
    return Detail(Reason.TASK_NOT_ACTIVE, {"status": task.status.value}, change=c.task_change)


def _not_owner(q: CompletionRequest, f: CompletionFacts, _t: Task, _c: Circumstances) -> Detail:
    owner = f.attempt.principal_id if f.attempt else None
    return Detail(
        Reason.CALLER_NOT_ATTEMPT_OWNER, {"attempt_id": q.attempt_id, "owner": owner, "caller": f.caller.id}
    )


def _superseded(q: CompletionRequest, f: CompletionFacts, task: Task, c: Circumstances) -> Detail:
    a = f.attempt
    holder = next((x for x in c.attempts if x.id == task.current_attempt_id), None)
    facts: dict[str, object] = {
        "attempt_id": q.attempt_id,
        "attempt_status": a.status.value if a else None,  # None: not an attempt of this task
        "fence": q.fence,
        "attempt_fence": a.fence if a else None,
        "current_attempt_id": task.current_attempt_id,
        "holder": holder.principal_id if holder else None,
        "task_fence": task.fence,
    }
    return Detail(Reason.ATTEMPT_SUPERSEDED, facts, change=c.attempt_change)


def _lease(_q: CompletionRequest, f: CompletionFacts, _t: Task, _c: Circumstances) -> Detail:
    a = f.attempt
    assert a is not None  # the lease predicate holds when there is no attempt
    facts = {
        "attempt_id": a.id,
        "lease_deadline": a.lease_deadline,
        "committed_at": f.now,
        "restored": a.incarnation != f.incarnation,  # issued before a restore from backup
    }
    return Detail(Reason.LEASE_EXPIRED, facts)


def _unbound(q: CompletionRequest, f: CompletionFacts, task: Task, _c: Circumstances) -> Detail:
    cand = f.candidate
    facts: dict[str, object] = {
        "candidate_id": q.candidate_id,
        "found": cand is not None,
        "candidate_task_id": cand.task_id if cand else None,
        "candidate_attempt_id": cand.attempt_id if cand else None,
        "attempt_id": q.attempt_id,
        "task_id": task.id,
    }
    return Detail(Reason.CANDIDATE_NOT_BOUND, facts)


def _out_of_scope(_q: CompletionRequest, f: CompletionFacts, task: Task, _c: Circumstances) -> Detail:
    cand = f.candidate
    outside = sorted(p for p in (cand.write_set if cand else ()) if not matches_any(task.contract.scope, p))
    items = tuple(Item("outside_scope", path=p) for p in outside)
    return Detail(Reason.SCOPE_VIOLATION, {"scope": list(task.contract.scope)}, items)


def _unauthorized(_q: CompletionRequest, f: CompletionFacts, _t: Task, c: Circumstances) -> Detail:
    missing = list(_missing_grants(f.grants, f.candidate))
    revoked = [
        Item("revoked_grant", {"grant_id": g.id, "actions": sorted(a.value for a in g.actions)}, change=ch)
        for g, ch in c.revoked
        if any(_would_cover(g, m) for m in missing)
    ]
    return Detail(Reason.NOT_AUTHORIZED, {}, (*missing, *revoked))


def _missing_grants(grants: tuple[Grant, ...], cand: Candidate | None) -> Iterable[Item]:
    if not any(g.allows(Action.COMPLETE) for g in grants):
        yield Item("missing_grant", {"action": Action.COMPLETE.value})
    for p in sorted(cand.write_set if cand else ()):
        for action in (Action.WRITE, Action.COMPLETE):
            if not any(g.covers(action, p) for g in grants):
                yield Item("missing_grant", {"action": action.value}, path=p)


def _would_cover(g: Grant, missing: Item) -> bool:
    """Whether the revoked grant `g`, were it live, would supply the missing grant."""
    action = Action(str(missing.fields["action"]))
    if action not in g.actions and Action.ADMIN not in g.actions:
        return False
    return missing.path is None or matches_any(g.scope, missing.path)


def _contract(q: CompletionRequest, _f: CompletionFacts, task: Task, c: Circumstances) -> Detail:
    facts = {"requested": q.contract_hash, "pinned": task.contract_hash}
    return Detail(Reason.CONTRACT_MISMATCH, facts, change=c.migration)


def _deps(_q: CompletionRequest, f: CompletionFacts, _t: Task, c: Circumstances) -> Detail:
    cand = f.candidate
    assert cand is not None  # the dependency predicate holds without a candidate
    files = _moved(cand.file_deps, f.artifact_revisions, c.path_changes, collection=False)
    dirs = _moved(cand.collection_deps, f.collection_revisions, {}, collection=True)
    return Detail(Reason.DEPENDENCY_STALE, moved=(*files, *dirs))


def _bases(_q: CompletionRequest, f: CompletionFacts, _t: Task, c: Circumstances) -> Detail:
    cand = f.candidate
    assert cand is not None
    return Detail(Reason.TARGET_BASE_STALE, moved=_moved(cand.bases, f.artifact_revisions, c.path_changes))


def _moved(
    declared: Mapping[str, int],
    current: Mapping[str, int],
    changes: Mapping[str, Change],
    *,
    collection: bool = False,
) -> tuple[Moved, ...]:
    return tuple(
        Moved(p, r, current.get(p, 0), collection, changes.get(p))
        for p, r in sorted(declared.items())
        if current.get(p, 0) != r
    )


def _path_conflict(_q: CompletionRequest, f: CompletionFacts, _t: Task, _c: Circumstances) -> Detail:
    """Each file that publishing would leave with files under it, then one file under it."""
    items = []
    for above, below in dict.fromkeys(
        (a, next(b for x, b in f.tree_conflicts if x == a)) for a, _ in f.tree_conflicts
    ):
        items += [Item("file", path=above), Item("file_under_it", path=below)]
    return Detail(Reason.PATH_CONFLICT, {}, tuple(items))


def _untrusted(q: CompletionRequest, f: CompletionFacts, task: Task, _c: Circumstances) -> Detail:
    items = []
    for rid in dict.fromkeys(q.evidence):
        r = f.receipts.get(rid)
        problem = _distrust(r, f, task) if r is not None else "not_found"
        if problem:
            items.append(Item("untrusted_receipt", {"receipt_id": rid, "problem": problem, **_about(r)}))
    return Detail(Reason.EVIDENCE_UNTRUSTED, {}, tuple(items))


def _distrust(r: Receipt, f: CompletionFacts, task: Task) -> str:
    """Why a receipt does not count as trusted ("" if it does)."""
    if is_trusted(r, task, f.checkers, f.bad_signatures):
        return ""
    if r.id in f.bad_signatures:
        return "signature_does_not_stand"
    wanted = {c.id: c.checker for c in task.contract.criteria}
    if wanted.get(r.criterion) != r.checker:
        return "checker_not_in_contract"
    return "issuer_not_admitted"


def _about(r: Receipt | None) -> dict[str, object]:
    if r is None:
        return {}
    return {"criterion": r.criterion, "checker": r.checker, "issuer": r.issuer_id, "result": r.result.value}


def _not_bound(q: CompletionRequest, f: CompletionFacts, task: Task, _c: Circumstances) -> Detail:
    cand, items = f.candidate, []
    for rid in dict.fromkeys(q.evidence):
        r = f.receipts.get(rid)
        if r is None or cand is None or is_bound(r, task, cand, q.attempt_id):
            continue
        items.append(
            Item("unbound_receipt", {"receipt_id": rid, "differs": _differs(r, task, cand, q.attempt_id)})
        )
    return Detail(Reason.EVIDENCE_NOT_BOUND, {}, tuple(items))


def _differs(r: Receipt, task: Task, cand: Candidate, attempt_id: str) -> list[str]:
    pairs = [
        ("candidate_digest", r.candidate_digest, cand.digest),
        ("dependency_digest", r.dependency_digest, cand.dependency_digest),
    ]
    if r.reused:
        pairs.append(("candidate_id", r.candidate_id, cand.id))
        if not task.contract.allow_evidence_reuse:
            return [*(n for n, a, b in pairs if a != b), "reuse_not_allowed"]
    else:
        pairs += [
            ("task_id", r.task_id, task.id),
            ("attempt_id", r.attempt_id, attempt_id),
            ("contract_hash", r.contract_hash, task.contract_hash),
        ]
    return [n for n, a, b in pairs if a != b]


def _counting(
    q: CompletionRequest, f: CompletionFacts, task: Task, receipts: Iterable[Receipt]
) -> list[Receipt]:
    cand = f.candidate
    if cand is None:
        return []
    return [
        r
        for r in receipts
        if is_trusted(r, task, f.checkers, f.bad_signatures) and is_bound(r, task, cand, q.attempt_id)
    ]


def _cited(q: CompletionRequest, f: CompletionFacts) -> list[Receipt]:
    return [f.receipts[rid] for rid in dict.fromkeys(q.evidence) if rid in f.receipts]


def _not_separate(q: CompletionRequest, f: CompletionFacts, task: Task, _c: Circumstances) -> Detail:
    """Each cited receipt whose verdict was computed where the candidate's code ran, for a
    criterion the contract wants judged apart from it."""
    items = tuple(
        Item("shared_verdict", {"receipt_id": r.id, **_about(r)})
        for r in _cited(q, f)
        if not meets_isolation(r, task)
    )
    return Detail(Reason.EVIDENCE_NOT_SEPARATE, {}, items)


def _missing(q: CompletionRequest, f: CompletionFacts, task: Task, _c: Circumstances) -> Detail:
    seen = {r.criterion for r in _counting(q, f, task, _cited(q, f))}
    recorded = _counting(q, f, task, f.recorded)
    items = []
    for crit in task.contract.criteria:
        if crit.id in seen:
            continue
        uncited = next(
            (r.id for r in recorded if r.criterion == crit.id and r.result is ReceiptResult.PASS), None
        )
        items.append(
            Item(
                "uncovered_criterion",
                {"criterion": crit.id, "checker": crit.checker, "uncited_pass": uncited},
            )
        )
    return Detail(Reason.EVIDENCE_MISSING, {}, tuple(items))


def _failed(q: CompletionRequest, f: CompletionFacts, task: Task, _c: Circumstances) -> Detail:
    cited = set(q.evidence)
    required = {c.id: c.checker for c in task.contract.criteria}
    failing: dict[str, Receipt] = {}
    for r in _counting(q, f, task, [*_cited(q, f), *f.recorded]):
        if r.criterion in required and r.result is ReceiptResult.FAIL:
            failing.setdefault(r.criterion, r)
    items = tuple(
        Item(
            "failed_criterion",
            {
                "criterion": crit,
                "checker": required[crit],
                "receipt_id": r.id,
                "issuer": r.issuer_id,
                "issued_at_ms": r.issued_at,
                "cited": r.id in cited,
                "log_digest": r.log_digest,
            },
        )
        for crit, r in sorted(failing.items())
    )
    return Detail(Reason.EVIDENCE_FAILED, {}, items)


_EXPLAIN: dict[Reason, _Explain] = {
    Reason.TASK_NOT_ACTIVE: _inactive,
    Reason.CALLER_NOT_ATTEMPT_OWNER: _not_owner,
    Reason.ATTEMPT_SUPERSEDED: _superseded,
    Reason.LEASE_EXPIRED: _lease,
    Reason.CANDIDATE_NOT_BOUND: _unbound,
    Reason.SCOPE_VIOLATION: _out_of_scope,
    Reason.NOT_AUTHORIZED: _unauthorized,
    Reason.CONTRACT_MISMATCH: _contract,
    Reason.DEPENDENCY_STALE: _deps,
    Reason.TARGET_BASE_STALE: _bases,
    Reason.PATH_CONFLICT: _path_conflict,
    Reason.EVIDENCE_UNTRUSTED: _untrusted,
    Reason.EVIDENCE_NOT_BOUND: _not_bound,
    Reason.EVIDENCE_NOT_SEPARATE: _not_separate,
    Reason.EVIDENCE_MISSING: _missing,
    Reason.EVIDENCE_FAILED: _failed,
}
