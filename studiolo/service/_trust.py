"""What the trust rule of `studiolo.core.trust` needs from the ledger, read in one place for
the completion transaction and the task view alike."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from studiolo.core.model import Candidate, Checker, Receipt, Task
from studiolo.keys import verify
from studiolo.store import Tx

__all__ = ["ReceiptFacts", "bad_signatures", "receipt_facts"]


@dataclass(frozen=True)
class ReceiptFacts:
    recorded: tuple[Receipt, ...]  # every receipt recorded for the candidate's bytes
    checkers: dict[str, Checker]  # the contract's checkers, by `name@version`
    bad: frozenset[str]  # receipt ids whose signature does not verify


def receipt_facts(tx: Tx, task: Task, cand: Candidate | None, cited: Iterable[Receipt] = ()) -> ReceiptFacts:
    recorded = (
        tuple(tx.evidence.receipts_for_bytes(cand.attempt_id, cand.digest, cand.dependency_digest))
        if cand is not None
        else ()
    )
    refs = {c.checker for c in task.contract.criteria}
    checkers = {c.ref: c for c in tx.access.checkers(task.project_id, refs)}
    return ReceiptFacts(recorded, checkers, bad_signatures(tx, [*cited, *recorded]))


def bad_signatures(tx: Tx, receipts: Iterable[Receipt]) -> frozenset[str]:
    bad, keys = set(), {}
    for r in {r.id: r for r in receipts}.values():
        if r.issuer_id not in keys:
            issuer = tx.access.principal(r.issuer_id)
            keys[r.issuer_id] = issuer.public_key if issuer else None
        key = keys[r.issuer_id]
        if not key or not verify(key, r.signed_body(), r.signature):
            bad.add(r.id)
    return frozenset(bad)
