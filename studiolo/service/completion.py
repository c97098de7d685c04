"""The completion transaction: gather facts, evaluate the predicate, publish, record — one
serializable write transaction. A rejection writes only its audit event."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from studiolo._exceptions import CompletionRejected, Conflict, InvalidRequest
from studiolo.core import limits
from studiolo.core.model import (
    Action,
    Attempt,
    Candidate,
    Completion,
    Grant,
    Principal,
    Task,
)
from studiolo.core.predicate import CompletionFacts, CompletionRequest, Verdict, evaluate
from studiolo.core.reasons import ErrorReason
from studiolo.core.refusal import explain
from studiolo.core.refusal_view import for_audit, for_reader, named_paths
from studiolo.service._door import Context
from studiolo.service._ids import check_id
from studiolo.service._refusal import circumstances, names_in, reader_of
from studiolo.service._trust import ReceiptFacts, receipt_facts_of
from studiolo.store import Tx
from studiolo.store.steps import Ahead, CompletionReads, declared_paths
from studiolo.store.work import Subjects, task_and_candidate

__all__ = ["CompletionOps", "CompletionOutcome", "Rejected", "make_request"]


# trust, declared revisions, the candidate's paths' revisions now (what publishing moves),
# the paths publishing would make both a file and a directory
_Gathered = tuple[
    ReceiptFacts, tuple[dict[str, int], dict[str, int]], dict[str, int], tuple[tuple[str, str], ...]
]


@dataclass(frozen=True)
class CompletionOutcome:
    completion: Completion
    replay: bool  # True: an identical request id seen before; nothing was written


@dataclass(frozen=True)
class Rejected:
    verdict: Verdict
    details: tuple[dict[str, Any], ...] = ()  # as the caller may see them


def make_request(
    *,
    request_id: str,
    task_id: str,
    attempt_id: str,
    fence: int,
    contract_hash: str,
    candidate_id: str,
    evidence: Iterable[str],
) -> CompletionRequest:
    """Validate the shape of a completion request (its truth is the predicate's business)."""
    if not isinstance(request_id, str) or not 1 <= len(request_id) <= limits.REQUEST_ID:
        raise InvalidRequest(f"request_id is a string of 1 to {limits.REQUEST_ID} characters")
    if not request_id.isprintable():
        raise InvalidRequest("request_id must be printable")
    if not isinstance(fence, int) or isinstance(fence, bool) or fence < 0:
        raise InvalidRequest("fence is a non-negative integer")
    if not isinstance(contract_hash, str) or len(contract_hash) > limits.CONTRACT_HASH:
        raise InvalidRequest("contract_hash is a sha256 digest")
    ev = tuple(evidence)
    if len(ev) > limits.EVIDENCE:
        raise InvalidRequest(f"at most {limits.EVIDENCE} receipts may be cited")
    return CompletionRequest(
        request_id=request_id,
        task_id=check_id(task_id, "task id"),
        attempt_id=check_id(attempt_id, "attempt id"),
        fence=fence,
        contract_hash=contract_hash,
        candidate_id=check_id(candidate_id, "candidate id"),
        evidence=tuple(check_id(e, "receipt id") for e in ev),
    )


class CompletionOps:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def complete(self, caller: Principal, request: CompletionRequest) -> CompletionOutcome:
        """Check the request and record the completion in one transaction (else `CompletionRejected`)."""
        ahead = self._ahead(request)
        outcome = self.ctx.write_about(
            "task", request.task_id, lambda tx: self.complete_in(tx, caller, request, ahead)
        )
        if isinstance(outcome, Rejected):
            raise CompletionRejected([r.value for r in outcome.verdict.failed], details=outcome.details)
        return outcome

    def _ahead(self, q: CompletionRequest) -> Ahead | None:
        """PostgreSQL: the task and the candidate, read before the gate; it only says what to
        read inside (`Steps.completion`): one round trip fewer a completion, measured worth
        it (docs/benchmarks.md, "Plain reads in the door"). It also locates the task."""
        found = self.ctx.store.read_ahead(lambda bare: task_and_candidate(bare, q.task_id, q.candidate_id))
        if found is not None:
            self.ctx.store.located("task", q.task_id, found[0].project_id)
        return found

    def complete_in(
        self, tx: Tx, caller: Principal, q: CompletionRequest, ahead: Ahead | None = None
    ) -> CompletionOutcome | Rejected:
        found, reads = tx.steps.completion(q, lambda t: self.ctx.grantee(caller, t.project_id), ahead)
        grants = reads.grants if reads is not None else ()
        readable = caller.is_service_admin or any(g.allows(Action.READ) for g in grants)
        visible = found if found and readable else None
        if visible is not None and visible.prior is not None:
            return self._replay(caller, q, visible.prior)
        got = self._gathered(q, visible.candidate, reads) if visible is not None and reads else None
        facts = self._facts(tx, caller, q, visible, grants, got)
        verdict = evaluate(q, facts, self.ctx.disabled_checks)
        if not verdict.accepted:
            return self._reject(tx, caller, q, facts, verdict)
        assert visible is not None and got is not None and facts.attempt is not None and facts.candidate
        completion = self._publish(tx, caller, q, visible.task, facts.attempt, facts.candidate, got[2])
        return CompletionOutcome(completion, replay=False)

    def _reject(
        self, tx: Tx, caller: Principal, q: CompletionRequest, facts: CompletionFacts, verdict: Verdict
    ) -> Rejected:
        """Explain the refusal from this transaction's state: the audit event keeps every
        detail (its paths listed, so an event feed withholds it from whoever may not read
        one), the caller gets what it may read."""
        pid = facts.task.project_id if facts.task else None
        details = explain(q, facts, verdict, circumstances(tx, facts, verdict))
        names = names_in(tx, pid, details) if pid and details else {}
        extra: dict[str, Any] = {}
        if details:
            extra = {"details": for_audit(details, names), "paths": named_paths(details)}
        failed = [r.value for r in verdict.failed]
        self.ctx.audit(
            tx,
            pid,
            "completion.rejected",
            caller,
            q.task_id,
            request_id=q.request_id,
            attempt=q.attempt_id,
            candidate=q.candidate_id,
            failed=failed,
            **extra,
        )
        return Rejected(verdict, tuple(for_reader(details, reader_of(caller, facts.grants, names))))

    @staticmethod
    def _replay(caller: Principal, q: CompletionRequest, prior: Completion) -> CompletionOutcome:
        same = prior.request_digest == q.digest() and prior.principal_id == caller.id
        if not same:
            raise Conflict(
                f"request id {q.request_id!r} was used for a different request",
                reason=ErrorReason.REQUEST_ID_CONFLICT,
            )
        return CompletionOutcome(prior, replay=True)

    def _facts(
        self,
        tx: Tx,
        caller: Principal,
        q: CompletionRequest,
        found: Subjects | None,
        grants: tuple[Grant, ...],
        gathered: _Gathered | None,
    ) -> CompletionFacts:
        if found is None or gathered is None:  # none, or not the caller's to see
            return CompletionFacts(
                caller, None, None, None, (), {}, {}, {}, {}, frozenset(), tx.now, tx.incarnation
            )
        trust, (files, dirs), _, conflicts = gathered
        task, cand = found.task, found.candidate
        return CompletionFacts(
            caller=caller,
            task=task,
            attempt=found.attempt,
            candidate=cand,
            grants=grants,
            artifact_revisions=files,
            collection_revisions=dirs,
            receipts=trust.cited,
            checkers=trust.checkers,
            bad_signatures=trust.bad,
            now=tx.now,
            incarnation=tx.incarnation,
            recorded=trust.recorded,
            tree_conflicts=conflicts,
        )

    @staticmethod
    def _gathered(q: CompletionRequest, cand: Candidate | None, reads: CompletionReads) -> _Gathered:
        """The decision's facts from what the store read (`Steps.completion`)."""
        bound = cand if cand is not None and cand.attempt_id == q.attempt_id else None
        files, dirs = reads.revisions
        declared = {p: files[p] for p in sorted(declared_paths(cand))}
        published = {p: files[p] for p in sorted(set(bound.files))} if bound else {}
        return receipt_facts_of(reads.trust), (declared, dirs), published, reads.conflicts

    def _publish(
        self,
        tx: Tx,
        caller: Principal,
        q: CompletionRequest,
        task: Task,
        attempt: Attempt,
        cand: Candidate,
        current: dict[str, int],
    ) -> Completion:
        completion_id = self.ctx.ids.new("cmp")
        revisions = tx.content.publish(
            task.project_id, cand.files, tx.now, caller.id, completion_id, current, cand.modes
        )
        commit_version = tx.audit.next_seq(task.project_id)
        key = self.ctx.service_key(tx)
        evidence, digest = sorted(set(q.evidence)), q.digest()
        body: dict[str, Any] = {
            "type": "studiolo.completion/v1",
            "completion_id": completion_id,
            "project_id": task.project_id,
            "task_id": task.id,
            "attempt_id": attempt.id,
            "fence": attempt.fence,
            "principal": caller.id,
            "contract_hash": task.contract_hash,
            "candidate_id": cand.id,
            "candidate_digest": cand.digest,
            "dependency_digest": cand.dependency_digest,
            "evidence": evidence,
            "revisions": revisions,
            "request_id": q.request_id,
            "commit_version": commit_version,
            "committed_at_ms": int(tx.now * 1000),
            "kid": key.kid,
        }
        completion = Completion(
            completion_id,
            task.id,
            attempt.id,
            cand.id,
            q.request_id,
            digest,
            caller.id,
            commit_version,
            body,
            key.sign(body),
            tx.now,
            revisions,
        )
        tx.work.finish(task.project_id, completion)
        seq = self.ctx.audit(
            tx,
            task.project_id,
            "completion.accepted",
            caller,
            task.id,
            completion=completion_id,
            request_id=q.request_id,
            request_digest=digest,
            contract_hash=q.contract_hash,
            attempt=attempt.id,
            fence=attempt.fence,
            lease_deadline=attempt.lease_deadline,  # heartbeats are not events: the deadline relied on
            candidate=cand.id,
            evidence=list(evidence),
            revisions=revisions,
            signature=completion.signature,
        )
        assert seq == commit_version
        meta = {
            "title": task.title,
            "task": task.id,
            "attempt": attempt.id,
            "candidate": cand.id,
            "contract": task.contract_hash,
            "completion": completion_id,
        }
        changes = {p: (d, cand.mode_of(p) if d else None) for p, d in cand.files.items()}
        tx.publications.append(task.project_id, seq, "completion", caller.id, tx.now, changes, meta)
        return completion
