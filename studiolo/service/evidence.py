"""The evidence store's only entrance: admitted verifiers post signed receipts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from studiolo._exceptions import InvalidRequest, NotAuthorized, NotFound
from studiolo.core.canonical import digest_json, is_digest
from studiolo.core.model import (
    Action,
    Candidate,
    Principal,
    PrincipalKind,
    Receipt,
    ReceiptResult,
    Task,
    TaskStatus,
)
from studiolo.keys import verify
from studiolo.service._base import Base, check_id
from studiolo.store import Tx
from studiolo.store.evidence import receipt_body

__all__ = ["EvidenceOps", "VerificationItem"]

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


@dataclass(frozen=True)
class VerificationItem:
    """One unit of verification work: a criterion to check on a candidate's exact bytes."""

    project_id: str
    task_id: str
    attempt_id: str
    candidate_id: str
    contract_hash: str
    criterion: str
    checker: str
    checker_kind: str
    checker_config: Mapping[str, Any]
    candidate_digest: str
    dependency_digest: str
    files: Mapping[str, str | None]
    bases: Mapping[str, int]


def parse_receipt_body(body: Mapping[str, Any], signature: str, project_id: str, cand_id: str) -> Receipt:
    """Validate the shape of a posted receipt body (the bindings are checked by the caller)."""
    if not isinstance(body, Mapping) or set(body) != _BODY_KEYS:
        raise InvalidRequest(f"a receipt body has exactly the keys {sorted(_BODY_KEYS)}")
    for key in ("contract_hash", "candidate_digest", "dependency_digest"):
        if not is_digest(body[key]):
            raise InvalidRequest(f"receipt {key} is not a sha256 digest")
    if body["log_digest"] is not None and not is_digest(body["log_digest"]):
        raise InvalidRequest("receipt log_digest is not a sha256 digest")
    if body["result"] not in ("pass", "fail"):
        raise InvalidRequest("receipt result is 'pass' or 'fail'")
    issued = body["issued_at"]
    if not isinstance(issued, int) or isinstance(issued, bool) or issued < 0:
        raise InvalidRequest("receipt issued_at is integer milliseconds since the epoch")
    for key in ("criterion", "checker", "issuer", "task_id", "attempt_id"):
        if not isinstance(body[key], str) or not body[key] or len(body[key]) > 200:
            raise InvalidRequest(f"receipt {key} must be a short string")
    if not isinstance(signature, str) or not signature or len(signature) > 200:
        raise InvalidRequest("a receipt needs a signature", reason="signature_invalid")
    rid = "rcp_" + digest_json({"body": dict(body), "signature": signature})[7:39]
    return Receipt(
        id=rid,
        project_id=project_id,
        task_id=body["task_id"],
        attempt_id=body["attempt_id"],
        candidate_id=cand_id,
        contract_hash=body["contract_hash"],
        candidate_digest=body["candidate_digest"],
        dependency_digest=body["dependency_digest"],
        criterion=body["criterion"],
        checker=body["checker"],
        result=ReceiptResult(body["result"]),
        issued_at=issued,
        issuer_id=body["issuer"],
        log_digest=body["log_digest"],
        signature=signature,
    )


class EvidenceOps(Base):
    def submit_receipt(
        self, caller: Principal, candidate_id: str, body: Mapping[str, Any], signature: str
    ) -> Receipt:
        def run(tx: Tx) -> Receipt:
            cand, task = self._candidate_for(tx, caller, candidate_id)
            receipt = parse_receipt_body(body, signature, task.project_id, cand.id)
            self._admit(tx, caller, task, receipt)
            self._check_binding(cand, receipt)
            if tx.evidence.receipt(receipt.id) is None:
                tx.evidence.add_receipt(receipt, tx.now)
                self.audit(
                    tx,
                    task.project_id,
                    "receipt.recorded",
                    caller,
                    receipt.id,
                    candidate=cand.id,
                    task=task.id,
                    criterion=receipt.criterion,
                    checker=receipt.checker,
                    result=receipt.result.value,
                )
            return receipt

        return self.store.write(run)

    def _admit(self, tx: Tx, caller: Principal, task: Task, r: Receipt) -> None:
        if caller.kind is not PrincipalKind.VERIFIER or r.issuer_id != caller.id:
            raise NotAuthorized(
                "only the issuing verifier posts its receipts", reason="verifier_not_admitted"
            )
        self.require(tx, caller, task.project_id, Action.VERIFY)
        name, _, version = r.checker.partition("@")
        checker = tx.access.checker(task.project_id, name, version)
        if checker is None:
            raise InvalidRequest(f"checker {r.checker!r} is not admitted", reason="unknown_checker")
        if caller.id not in checker.verifiers:
            raise NotAuthorized(
                f"{caller.name} is not admitted for {r.checker}", reason="verifier_not_admitted"
            )
        if not caller.public_key or not verify(caller.public_key, receipt_body(r), r.signature):
            raise InvalidRequest("the receipt signature does not verify", reason="signature_invalid")

    @staticmethod
    def _check_binding(cand: Candidate, r: Receipt) -> None:
        if (r.task_id, r.attempt_id, r.candidate_digest, r.dependency_digest) != (
            cand.task_id,
            cand.attempt_id,
            cand.digest,
            cand.dependency_digest,
        ):
            raise InvalidRequest(
                "the receipt's bindings do not describe this candidate", reason="evidence_not_bound"
            )

    def receipts(self, caller: Principal, candidate_id: str) -> list[Receipt]:
        def run(tx: Tx) -> list[Receipt]:
            cand, _task = self._candidate_for(tx, caller, candidate_id)
            return tx.evidence.receipts_of_candidate(cand.id)

        return self.store.read(run)

    def receipt(self, caller: Principal, receipt_id: str) -> Receipt:
        def run(tx: Tx) -> Receipt:
            r = tx.evidence.receipt(check_id(receipt_id, "receipt id"))
            task = tx.work.task(r.task_id) if r else None
            if r is None or task is None or not self.may_read_task(tx, caller, task):
                raise NotFound(f"receipt {receipt_id} not found")
            return r

        return self.store.read(run)

    def verification_queue(
        self, caller: Principal, project_id: str, limit: int = 50
    ) -> list[VerificationItem]:
        """Criteria of current candidates that the caller is admitted to check and has not."""

        def run(tx: Tx) -> list[VerificationItem]:
            self.require_project(tx, caller, project_id)
            self.require(tx, caller, project_id, Action.VERIFY)
            mine = {c.ref: c for c in tx.access.checkers(project_id) if caller.id in c.verifiers}
            items: list[VerificationItem] = []
            for task in tx.work.tasks(project_id, TaskStatus.CLAIMED, limit=10_000):
                items.extend(self._work_for(tx, task, mine))
                if len(items) >= limit:
                    break
            return items[:limit]

        return self.store.read(run)

    @staticmethod
    def _work_for(tx: Tx, task: Task, mine: Mapping[str, Any]) -> list[VerificationItem]:
        if task.current_attempt_id is None:
            return []
        out = []
        for cand in tx.content.candidates_of_attempt(task.current_attempt_id)[-1:]:
            done = {(r.criterion, r.checker) for r in tx.evidence.receipts_of_candidate(cand.id)}
            for crit in task.contract.criteria:
                checker = mine.get(crit.checker)
                if checker is None or (crit.id, crit.checker) in done:
                    continue
                out.append(
                    VerificationItem(
                        task.project_id,
                        task.id,
                        cand.attempt_id,
                        cand.id,
                        task.contract_hash,
                        crit.id,
                        crit.checker,
                        checker.kind,
                        dict(checker.config),
                        cand.digest,
                        cand.dependency_digest,
                        dict(cand.files),
                        dict(cand.bases),
                    )
                )
        return out

    def _candidate_for(self, tx: Tx, caller: Principal, candidate_id: str) -> tuple[Candidate, Task]:
        found = tx.content.candidate(check_id(candidate_id, "candidate id"))
        task = tx.work.task(found[1].task_id) if found else None
        if found is None or task is None or not self.may_read_task(tx, caller, task):
            raise NotFound(f"candidate {candidate_id} not found")
        return found[1], task
