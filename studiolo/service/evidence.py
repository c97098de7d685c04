"""The evidence store's only entrance: admitted verifiers post signed receipts; workers may
only *link* an existing receipt to their candidate when the contract allows reuse.

Also the verifier's read side: the verification queue and the exact tree to check (the value
types and their builders live in `studiolo.service.verification`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from studiolo._exceptions import InvalidRequest, NotAuthorized, NotFound
from studiolo.core.canonical import is_digest
from studiolo.core.model import (
    Action,
    Candidate,
    Principal,
    PrincipalKind,
    Receipt,
    Task,
    TaskStatus,
)
from studiolo.core.reasons import ErrorReason, Reason
from studiolo.core.retention import Tombstone
from studiolo.core.trust import link_id, receipt_id_of
from studiolo.keys import key_id, verify
from studiolo.service._door import Context
from studiolo.service._ids import check_id
from studiolo.service.retention import deleted_error
from studiolo.service.verification import (
    CandidateTree,
    TreeEntry,
    VerificationItem,
    declared_tree,
    request_verification,
    work_items,
)
from studiolo.store import Tx

__all__ = [
    "CandidateTree",
    "EvidenceOps",
    "ReceiptRead",
    "TreeEntry",
    "VerificationItem",
    "parse_receipt_body",
    "request_verification",
]


@dataclass(frozen=True)
class ReceiptRead:
    """A receipt as read, with the tombstones of the bytes it binds that were deleted (its
    candidate's files, its log): its signature still verifies, but nobody can check it again."""

    receipt: Receipt
    deleted: tuple[Tombstone, ...] = ()

    @property
    def bytes_deleted(self) -> str | None:
        """`bytes deleted <when> by <who>: <reason>` and what that means; None if none were."""
        if not self.deleted:
            return None
        more = len(self.deleted) - 1
        return (
            self.deleted[0].text()
            + (f" (and {more} more)" if more else "")
            + "; the signature still verifies, but the bytes cannot be checked again"
        )


def _reads(tx: Tx, project_id: str, candidate_id: str, receipts: list[Receipt]) -> list[ReceiptRead]:
    """Each receipt with the deleted bytes it binds: its candidate's, and its own log (not
    another receipt's log)."""
    stones = tx.retention.deleted_of_candidate(project_id, candidate_id) if receipts else []
    if not stones:
        return [ReceiptRead(r) for r in receipts]
    logs = {r.log_digest for r in receipts if r.log_digest}
    return [
        ReceiptRead(r, tuple(t for t in stones if t.digest not in logs or t.digest == r.log_digest))
        for r in receipts
    ]


_BODY_KEYS = frozenset(
    {
        "task_id",
        "attempt_id",
        "contract_hash",
        "candidate_digest",
        "dependency_digest",
        "criterion",
        "checker",
        "result",
        "issued_at",
        "issuer",
        "log_digest",
    }
)
# Receipts since issue 32 also sign where the verdict was computed; older ones do not, and
# stay valid exactly as they were signed (they count as `shared`).
_ISOLATION_KEY = "verdict_isolation"
# Ed25519 signatures are 64 bytes: exactly 86 base64url characters, the last one carrying
# two zero bits. Anything else (padding, junk the lenient decoder skips, other spare bits)
# would be a second spelling of one signature, hence a second receipt id for one observation.
_MAX_JSON_INT = 2**53 - 1  # RFC 8785 signs numbers as IEEE doubles: larger ones are not exact
_SIGNATURE_RE = re.compile(r"^[A-Za-z0-9_-]{85}[AQgw]$")


def parse_receipt_body(body: Mapping[str, Any], signature: str, project_id: str, cand_id: str) -> Receipt:
    """Validate the shape of a posted receipt body (the bindings are checked by the caller)."""
    if not isinstance(body, Mapping) or set(body) - {_ISOLATION_KEY} != _BODY_KEYS:
        raise InvalidRequest(
            f"a receipt body has exactly the keys {sorted(_BODY_KEYS)}, and optionally {_ISOLATION_KEY!r}"
        )
    if body.get(_ISOLATION_KEY, "shared") not in ("shared", "separate"):
        raise InvalidRequest("receipt verdict_isolation is 'shared' or 'separate'")
    for key in ("contract_hash", "candidate_digest", "dependency_digest"):
        if not is_digest(body[key]):
            raise InvalidRequest(f"receipt {key} is not a sha256 digest")
    if body["log_digest"] is not None and not is_digest(body["log_digest"]):
        raise InvalidRequest("receipt log_digest is not a sha256 digest")
    if body["result"] not in ("pass", "fail"):
        raise InvalidRequest("receipt result is 'pass' or 'fail'")
    issued = body["issued_at"]
    if not isinstance(issued, int) or isinstance(issued, bool) or not 0 <= issued <= _MAX_JSON_INT:
        raise InvalidRequest("receipt issued_at is integer milliseconds since the epoch, below 2^53")
    for key in ("criterion", "checker", "issuer", "task_id", "attempt_id"):
        if not isinstance(body[key], str) or not body[key] or len(body[key]) > 200:
            raise InvalidRequest(f"receipt {key} must be a short string")
    if not isinstance(signature, str) or not _SIGNATURE_RE.match(signature):
        raise InvalidRequest(
            "a receipt needs an Ed25519 signature: 86 base64url characters",
            reason=ErrorReason.SIGNATURE_INVALID,
        )
    rid = receipt_id_of(body, signature)
    return Receipt.from_signed(body, signature, id=rid, project_id=project_id, candidate_id=cand_id)


class EvidenceOps:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def submit_receipt(
        self, caller: Principal, candidate_id: str, body: Mapping[str, Any], signature: str
    ) -> Receipt:
        """Record a verifier's signed observation about one candidate (idempotent)."""

        def run(tx: Tx) -> Receipt:
            cand, task = self._candidate_for(tx, caller, candidate_id)
            receipt = parse_receipt_body(body, signature, task.project_id, cand.id)
            kid = self._admit(tx, caller, task, receipt)
            self._check_binding(cand, task, receipt)
            if receipt.log_digest is not None and not tx.content.has_blob(receipt.log_digest):
                raise InvalidRequest("upload the log before the receipt", reason=ErrorReason.BLOB_MISSING)
            if tx.evidence.receipt(receipt.id) is None:
                tx.evidence.add_receipt(receipt, tx.now, kid)
                self.ctx.audit(
                    tx,
                    task.project_id,
                    "receipt.recorded",
                    caller,
                    receipt.id,
                    candidate=cand.id,
                    task=task.id,
                    attempt=cand.attempt_id,
                    criterion=receipt.criterion,
                    checker=receipt.checker,
                    result=receipt.result.value,
                    log_digest=receipt.log_digest,
                    # authority time from the candidate's submission to this receipt: the
                    # metric `studiolo_verifier_check_duration_seconds`
                    checked_after=round(max(0.0, tx.now - cand.created_at), 6),
                )
            return receipt

        return self.ctx.write_about("candidate", candidate_id, run)

    def _admit(self, tx: Tx, caller: Principal, task: Task, r: Receipt) -> str:
        """Check the caller may post `r`, and its signature; the kid of the key that verified it."""
        if caller.kind is not PrincipalKind.VERIFIER or r.issuer_id != caller.id:
            raise NotAuthorized(
                "only the issuing verifier posts its receipts", reason=ErrorReason.VERIFIER_NOT_ADMITTED
            )
        self.ctx.require(tx, caller, task.project_id, Action.VERIFY)
        name, _, version = r.checker.partition("@")
        checker = tx.access.checker(task.project_id, name, version)
        if checker is None:
            raise InvalidRequest(f"checker {r.checker!r} is not admitted", reason=ErrorReason.UNKNOWN_CHECKER)
        if caller.id not in checker.verifiers:
            raise NotAuthorized(
                f"{caller.name} is not admitted for {r.checker}", reason=ErrorReason.VERIFIER_NOT_ADMITTED
            )
        if not caller.public_key or not verify(caller.public_key, r.signed_body(), r.signature):
            raise InvalidRequest(
                "the receipt signature does not verify", reason=ErrorReason.SIGNATURE_INVALID
            )
        return key_id(caller.public_key)

    @staticmethod
    def _check_binding(cand: Candidate, task: Task, r: Receipt) -> None:
        if (r.task_id, r.attempt_id, r.contract_hash, r.candidate_digest, r.dependency_digest) != (
            cand.task_id,
            cand.attempt_id,
            task.contract_hash,
            cand.digest,
            cand.dependency_digest,
        ):
            raise InvalidRequest(
                "the receipt's bindings do not describe this candidate under the task's contract",
                reason=Reason.EVIDENCE_NOT_BOUND,
            )
        wanted = {c.id: c.checker for c in task.contract.criteria}
        if wanted.get(r.criterion) != r.checker:
            raise InvalidRequest(
                f"the contract has no criterion {r.criterion!r} checked by {r.checker}",
                reason=Reason.EVIDENCE_NOT_BOUND,
            )

    # reuse -------------------------------------------------------------------
    def reuse_receipt(self, caller: Principal, candidate_id: str, receipt_id: str) -> Receipt:
        """Link an existing receipt about the same bytes to this candidate (explicit, audited).

        Allowed only when the task's contract sets `allow_evidence_reuse`, by the candidate's
        attempt owner, for a receipt whose criterion, checker version, candidate digest and
        dependency-manifest digest all match, whose signature still verifies and whose
        issuer is still admitted. The link is a new receipt id carrying the original signed
        body; the completion predicate accepts a link only for the candidate it names.
        """

        def run(tx: Tx) -> Receipt:
            cand, task = self._candidate_for(tx, caller, candidate_id)
            if cand.attempt_id != task.current_attempt_id or not self._owns(tx, caller, cand):
                raise NotAuthorized("only the owner of the candidate's attempt links evidence to it")
            if not task.contract.allow_evidence_reuse:
                raise NotAuthorized("this task's contract does not allow evidence reuse")
            source, kid = self._reusable(tx, task, cand, receipt_id)
            link = replace(source, id=link_id(source.id, cand.id), candidate_id=cand.id, reused=True)
            if tx.evidence.receipt(link.id) is None:
                tx.evidence.add_receipt(link, tx.now, kid, reused_from=source.id)
                self.ctx.audit(
                    tx,
                    task.project_id,
                    "receipt.reused",
                    caller,
                    link.id,
                    source=source.id,
                    candidate=cand.id,
                    task=task.id,
                    attempt=cand.attempt_id,
                    criterion=source.criterion,
                    checker=source.checker,
                    result=source.result.value,
                )
            return tx.evidence.receipt(link.id) or link

        return self.ctx.write_about("candidate", candidate_id, run)

    @staticmethod
    def _owns(tx: Tx, caller: Principal, cand: Candidate) -> bool:
        attempt = tx.work.attempt(cand.attempt_id)
        return attempt is not None and attempt.principal_id == caller.id

    def _reusable(self, tx: Tx, task: Task, cand: Candidate, receipt_id: str) -> tuple[Receipt, str]:
        """The receipt to link, and the kid of the issuer key that verified it just now."""
        source = tx.evidence.receipt(check_id(receipt_id, "receipt id"))
        if source is None or source.project_id != task.project_id:
            raise NotFound(f"receipt {receipt_id} not found")
        if source.reused:
            raise InvalidRequest(
                "link the original receipt, not another link", reason=Reason.EVIDENCE_NOT_BOUND
            )
        wanted = {c.id: c.checker for c in task.contract.criteria}
        same = (source.candidate_digest, source.dependency_digest) == (cand.digest, cand.dependency_digest)
        if not same or wanted.get(source.criterion) != source.checker:
            raise InvalidRequest(
                "reuse needs the same criterion, checker version, candidate digest and dependency digest",
                reason=Reason.EVIDENCE_NOT_BOUND,
            )
        name, _, version = source.checker.partition("@")
        checker = tx.access.checker(task.project_id, name, version)
        issuer = tx.access.principal(source.issuer_id)
        if checker is None or issuer is None or issuer.id not in checker.verifiers:
            raise NotAuthorized(
                "the receipt's issuer is no longer admitted", reason=ErrorReason.VERIFIER_NOT_ADMITTED
            )
        if not issuer.public_key or not verify(issuer.public_key, source.signed_body(), source.signature):
            raise InvalidRequest(
                "the receipt signature does not verify", reason=ErrorReason.SIGNATURE_INVALID
            )
        return source, key_id(issuer.public_key)

    # reads -------------------------------------------------------------------
    def receipts(self, caller: Principal, candidate_id: str) -> list[Receipt]:
        """The receipts recorded about a candidate the caller may read."""

        def run(tx: Tx) -> list[Receipt]:
            cand, _task = self._candidate_for(tx, caller, candidate_id)
            return tx.evidence.receipts_of_candidate(cand.id)

        return self.ctx.store.read(run)

    def receipt_reads(self, caller: Principal, candidate_id: str) -> list[ReceiptRead]:
        """`receipts`, each with the deleted bytes it binds (what the faces answer)."""

        def run(tx: Tx) -> list[ReceiptRead]:
            cand, task = self._candidate_for(tx, caller, candidate_id)
            return _reads(tx, task.project_id, cand.id, tx.evidence.receipts_of_candidate(cand.id))

        return self.ctx.store.read(run)

    def receipt(self, caller: Principal, receipt_id: str) -> Receipt:
        """A receipt, if the caller may read its task."""
        return self.receipt_read(caller, receipt_id).receipt

    def receipt_read(self, caller: Principal, receipt_id: str) -> ReceiptRead:
        """A receipt with the deleted bytes it binds, if the caller may read its task."""

        def run(tx: Tx) -> ReceiptRead:
            r = tx.evidence.receipt(check_id(receipt_id, "receipt id"))
            task = tx.work.task(r.task_id) if r else None
            if r is None or task is None or not self.ctx.may_read_task(tx, caller, task):
                raise NotFound(f"receipt {receipt_id} not found")
            return _reads(tx, r.project_id, r.candidate_id, [r])[0]

        return self.ctx.store.read(run)

    def verification_queue(
        self, caller: Principal, project_id: str, limit: int = 50
    ) -> list[VerificationItem]:
        """Criteria of the current attempts' candidates that the caller is admitted to check and
        nobody has checked yet."""
        if not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidRequest("limit is 1..1000")

        def run(tx: Tx) -> list[VerificationItem]:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.VERIFY)
            mine = {c.ref: c for c in tx.access.checkers(project_id) if caller.id in c.verifiers}
            items: list[VerificationItem] = []
            for task in tx.work.tasks(project_id, TaskStatus.CLAIMED, limit=10_000):
                items.extend(work_items(tx, caller, task, mine))
                if len(items) >= limit:
                    break
            return items[:limit]

        return self.ctx.store.read(run)

    def candidate_tree(self, caller: Principal, candidate_id: str) -> CandidateTree:
        """The file tree a verifier must check for a candidate (see `CandidateTree`)."""

        def run(tx: Tx) -> CandidateTree:
            cand, task = self._candidate_for(tx, caller, candidate_id)
            self.ctx.require(tx, caller, task.project_id, Action.VERIFY)
            files, unreproducible = declared_tree(tx, task.project_id, cand)
            gone = tx.retention.tombstones(task.project_id, {e.digest for e in files.values()})
            if gone:  # re-verification is impossible, and says why
                raise deleted_error(min(gone.values(), key=lambda g: g.digest))
            grants = self.ctx.grants(tx, caller, task.project_id)
            withheld = tuple(
                p
                for p in sorted(files)
                if not caller.is_service_admin and not any(g.covers(Action.READ, p) for g in grants)
            )
            entries = tuple(files[p] for p in sorted(files) if p not in withheld)
            return CandidateTree(
                candidate_id=cand.id,
                candidate_digest=cand.digest,
                dependency_digest=cand.dependency_digest,
                entries=entries,
                unreproducible=unreproducible,
                withheld=withheld,
            )

        return self.ctx.store.read(run)

    def _candidate_for(self, tx: Tx, caller: Principal, candidate_id: str) -> tuple[Candidate, Task]:
        found = tx.work.candidate_and_task(check_id(candidate_id, "candidate id"))
        if found is None or not self.ctx.may_read_task(tx, caller, found[1]):
            raise NotFound(f"candidate {candidate_id} not found")
        return found
