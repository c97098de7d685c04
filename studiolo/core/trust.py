"""Which receipts count, and what they decide: the one rule the completion predicate and the
task view share (docs/verifiers.md, "Which receipts count").

A receipt *counts* for a candidate when it is trusted (its checker is the one the contract
names for its criterion, its issuer is admitted for that checker now, its signature
verifies) and bound to the candidate's bytes (same candidate digest, dependency digest,
task, attempt and contract; or an audited reuse link to this very candidate while the
contract allows reuse). Among the receipts that count for a criterion, a `fail` stands: a
later `pass` for the same checker version never erases it, cited or not. For a criterion that
requires a separate verdict, a `pass` counts only when the receipt says its verdict was
computed where the candidate's code never ran (`meets_isolation`); a `fail` counts anyway.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from studiolo.core.canonical import digest_json
from studiolo.core.model import Candidate, Checker, Receipt, ReceiptResult, Task

__all__ = [
    "decisions",
    "is_bound",
    "is_trusted",
    "link_id",
    "meets_isolation",
    "receipt_id_of",
    "verified",
]


def receipt_id_of(body: Mapping[str, Any], signature: str) -> str:
    """A receipt's id is the digest of its signed body and signature: one observation, one id."""
    return "rcp_" + digest_json({"body": dict(body), "signature": signature})[7:39]


def link_id(source_id: str, candidate_id: str) -> str:
    """The id of the reuse link of receipt `source_id` to another candidate."""
    return "rcp_" + digest_json({"reuse": source_id, "candidate": candidate_id})[7:39]


def is_trusted(r: Receipt, task: Task, checkers: Mapping[str, Checker], bad: frozenset[str]) -> bool:
    if r.id in bad:
        return False
    wanted = {c.id: c.checker for c in task.contract.criteria}
    checker = checkers.get(r.checker)
    return wanted.get(r.criterion) == r.checker and checker is not None and r.issuer_id in checker.verifiers


def is_bound(r: Receipt, task: Task, cand: Candidate, attempt_id: str) -> bool:
    content = r.candidate_digest == cand.digest and r.dependency_digest == cand.dependency_digest
    if r.reused:
        # An audited reuse link counts only for the candidate it was linked to, and only
        # while the contract allows reuse.
        return task.contract.allow_evidence_reuse and r.candidate_id == cand.id and content
    return (
        content
        and r.task_id == task.id
        and r.attempt_id == attempt_id
        and r.contract_hash == task.contract_hash
    )


def meets_isolation(r: Receipt, task: Task) -> bool:
    """False for a `pass` on a criterion that requires a separate verdict, from a receipt that
    does not say its verdict was computed where the candidate's code never ran."""
    separate = task.contract.separate_verdict
    return r.result is ReceiptResult.FAIL or r.criterion not in separate or r.separate


def decisions(
    task: Task,
    cand: Candidate,
    attempt_id: str,
    receipts: Iterable[Receipt],
    checkers: Mapping[str, Checker],
    bad: frozenset[str],
) -> dict[str, ReceiptResult]:
    """Per required criterion with any counting receipt: `fail` if one fails, else `pass`."""
    required = {c.id for c in task.contract.criteria}
    out: dict[str, ReceiptResult] = {}
    for r in receipts:
        if r.criterion not in required or out.get(r.criterion) is ReceiptResult.FAIL:
            continue
        counts = is_trusted(r, task, checkers, bad) and is_bound(r, task, cand, attempt_id)
        if counts and meets_isolation(r, task):
            out[r.criterion] = r.result
    return out


def verified(
    task: Task,
    cand: Candidate,
    receipts: Iterable[Receipt],
    checkers: Mapping[str, Checker],
    bad: frozenset[str],
) -> bool:
    """Every required criterion decides `pass` for this candidate's bytes."""
    got = decisions(task, cand, cand.attempt_id, receipts, checkers, bad)
    return all(got.get(c.id) is ReceiptResult.PASS for c in task.contract.criteria)
