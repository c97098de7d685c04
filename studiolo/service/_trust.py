"""What the trust rule of `studiolo.core.trust` needs from the ledger, read in one place for
the completion transaction and the task view alike.

A receipt's signature is verified once, when it is recorded, and the row keeps the kid of the
issuer key that verified it (`receipts.issuer_kid`). Afterwards the signature still stands
while that key is still the issuer's: the commit compares the kid of the issuer's current key
with the pin, and recomputes the receipt's content address (its id is the digest of its body
and signature) so a row altered in place no longer counts. Rows recorded before pins existed
(`issuer_kid` NULL) are verified byte for byte, as before. Whether the issuer is still
admitted for the checker is `core.trust.is_trusted`'s business, read fresh on every commit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from studiolo.core.model import Candidate, Checker, Receipt, Task
from studiolo.core.trust import link_id, receipt_id_of
from studiolo.keys import key_id, verify
from studiolo.store import Tx
from studiolo.store.evidence import Pin
from studiolo.store.steps import Trust

__all__ = ["ReceiptFacts", "receipt_facts", "receipt_facts_of", "unsigned"]


@dataclass(frozen=True)
class ReceiptFacts:
    cited: dict[str, Receipt]  # the cited receipts that exist in the task's project
    recorded: tuple[Receipt, ...]  # every receipt recorded for the candidate's bytes
    checkers: dict[str, Checker]  # the contract's checkers, by `name@version`
    bad: frozenset[str]  # receipt ids whose signature no longer stands


def receipt_facts(tx: Tx, task: Task, cand: Candidate | None, cited: Iterable[str] = ()) -> ReceiptFacts:
    return receipt_facts_of(tx.steps.trust(task, cand, cited))


def receipt_facts_of(trust: Trust) -> ReceiptFacts:
    """The trust rule's facts from what the store read (`Steps.trust`)."""
    found = trust.evidence
    checkers = {c.ref: c for c in trust.checkers}
    bad = unsigned([*found.cited.values(), *found.recorded], found.pins)
    return ReceiptFacts(found.cited, found.recorded, checkers, bad)


def unsigned(receipts: Iterable[Receipt], pins: dict[str, Pin]) -> frozenset[str]:
    """The ids of receipts whose signature no longer stands (see the module docstring)."""
    unique = {r.id: r for r in receipts}
    return frozenset(rid for rid, r in unique.items() if not _stands(r, pins.get(rid)))


def _stands(r: Receipt, pin: Pin | None) -> bool:
    if pin is None or not pin.issuer_key:
        return False
    if pin.kid is None:  # recorded before pins: check the bytes
        return verify(pin.issuer_key, r.signed_body(), r.signature)
    if pin.kid != key_id(pin.issuer_key):
        return False
    original = receipt_id_of(r.signed_body(), r.signature)
    if pin.reused_from is None:
        return r.id == original
    return pin.reused_from == original and r.id == link_id(original, r.candidate_id)
