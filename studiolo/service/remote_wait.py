"""The wait of a delegation to a remote agent, as the requester worker reports it: every
transition one audited write transaction (`studiolo.core.remote.TRANSITIONS`), the
finalization through the normal completion transaction, and the operator review queue of
`indeterminate` delegations (docs/a2a.md, "Delegating to a remote agent")."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from studiolo._exceptions import Conflict, InvalidRequest, NotFound
from studiolo.core.canonical import digest_bytes, digest_json
from studiolo.core.lease import is_live
from studiolo.core.model import (
    Action,
    Attempt,
    AttemptStatus,
    Candidate,
    Principal,
    Receipt,
    Task,
    TaskStatus,
)
from studiolo.core.quiescence import TaskState
from studiolo.core.reasons import ErrorReason
from studiolo.core.remote import (
    RemoteDelegation,
    RemoteFile,
    RemoteOrg,
    RemoteResult,
    RemoteState,
    can_move,
    ended_state,
    local_name,
)
from studiolo.keys import ServiceKey
from studiolo.service._door import Context
from studiolo.service._ids import check_id
from studiolo.service.completion import CompletionOps, CompletionOutcome, Rejected, make_request
from studiolo.service.evidence import parse_receipt_body
from studiolo.service.work import WorkOps
from studiolo.store import Tx, volatile

__all__ = ["RemoteWaitOps"]

_S = RemoteState
_LEASE_KEY = "a2a_requester"


class RemoteWaitOps:
    def __init__(self, ctx: Context, work: WorkOps, completion: CompletionOps) -> None:
        self.ctx = ctx
        self.work = work
        self.completion = completion

    # transitions the requester worker reports ---------------------------------------
    def remote_sent(self, dlg_id: str, remote_task_id: str, remote_state: str) -> RemoteDelegation:
        """The remote accepted the task: record its id and state; the delegation is `remote-working`."""
        if not isinstance(remote_task_id, str) or not 1 <= len(remote_task_id) <= 200:
            raise InvalidRequest("a remote task id is 1 to 200 characters")
        return self._move(dlg_id, _S.REMOTE_WORKING, remote_task_id=remote_task_id, remote_state=remote_state)

    def remote_terminal(self, dlg_id: str, remote_state: TaskState) -> RemoteDelegation:
        """The remote task reached a terminal state: the wait for its artifacts begins (not
        finalization). `since` is the ledger's clock: a resumed wait keeps its bound."""
        return self._move(dlg_id, _S.AWAITING, remote_state=remote_state.value, since=None)

    def remote_send_failed(self, dlg_id: str, reason: str) -> RemoteDelegation:
        """Sending the task to the remote failed: the delegation ends as `remote-failed`."""
        return self._move(dlg_id, _S.REMOTE_FAILED, reason=reason[:2000])

    def remote_integrity_failed(
        self, dlg_id: str, evidence: Mapping[str, Any], blobs: Iterable[bytes]
    ) -> RemoteDelegation:
        """The remote's artifacts failed an integrity check: keep the evidence and bytes; the end."""
        return self._move(
            dlg_id, _S.INTEGRITY_FAILED, reason=str(evidence.get("code", "")), evidence=evidence, blobs=blobs
        )

    def remote_indeterminate(self, dlg_id: str, reason: str, result: RemoteResult) -> RemoteDelegation:
        """Past the bound: the verified part is kept so an operator can decide."""
        evidence, blobs = self._result_evidence(result)
        return self._move(dlg_id, _S.INDETERMINATE, reason=reason, evidence=evidence, blobs=blobs)

    def remote_keepalive(self, dlg_id: str) -> bool:
        """Keep the local attempt's lease while the remote works; False once it is not current.
        A read decides first; the lease is extended only once half of it has passed, as a
        heartbeat is: a conditional update, not an audit event (the completion records the
        deadline it relied on)."""

        def due(tx: Tx) -> tuple[Attempt, bool] | None:
            d = self.delegation(tx, dlg_id)
            attempt = tx.work.attempt(d.attempt_id)
            task = tx.work.task(d.task_id)
            if attempt is None or task is None or task.current_attempt_id != attempt.id:
                return None
            if not is_live(attempt, tx.incarnation, tx.now):
                return None
            return attempt, attempt.lease_deadline - tx.now <= self.ctx.settings.max_lease_seconds / 2

        found = self.ctx.store.read(due)
        if found is None:
            return False
        attempt, needed = found
        if not needed:
            return True

        def renew(tx: Tx) -> bool:
            return tx.work.extend_lease(attempt, tx.now, tx.now + self.ctx.settings.max_lease_seconds)

        return self.ctx.store.write(volatile(renew), self.ctx.gate_of("attempt", attempt.id))

    def remote_finish(self, dlg_id: str, result: RemoteResult) -> RemoteDelegation:
        """The artifacts quiesced. A completed remote task becomes a candidate, a receipt by the
        organisation's verifier principal and a completion request, in this one transaction;
        every predicate applies (`refused` if one fails). Failed or canceled: recorded, the
        local attempt released."""
        end = ended_state(result.remote_state)
        if end is not None:
            evidence, blobs = self._result_evidence(result)
            reason = result.remote_state.value
            return self._move(
                dlg_id, end, reason=reason, evidence=evidence, blobs=blobs, only_from=_S.AWAITING
            )
        return self.ctx.store.write(lambda tx: self._finalize(tx, self.delegation(tx, dlg_id), result, None))

    # one requester per ledger ------------------------------------------------------
    def requester_lease(self, owner: str, ttl: float) -> bool:
        """Take or renew the ledger's requester lease (`meta.a2a_requester`): only its holder
        drives delegations, so that several service processes on one ledger never send one
        delegation twice. A holder that dies loses it after `ttl` seconds."""

        def run(tx: Tx) -> bool:
            raw = tx.meta.get(_LEASE_KEY)
            held = json.loads(raw) if raw else None
            if held and held.get("owner") != owner and float(held.get("until", 0)) > tx.now:
                return False
            tx.meta.set(_LEASE_KEY, json.dumps({"owner": owner, "until": tx.now + ttl}))
            return True

        return self.ctx.write_in(None, run)  # no project's chain: other writers go on

    def requester_release(self, owner: str) -> None:
        """Give the lease up (a clean stop): the next requester need not wait for it to expire."""

        def run(tx: Tx) -> None:
            raw = tx.meta.get(_LEASE_KEY)
            if raw and json.loads(raw).get("owner") == owner:
                tx.meta.set(_LEASE_KEY, json.dumps({"owner": owner, "until": 0}))

        self.ctx.write_in(None, run)

    # the operator review queue ----------------------------------------------------
    def remote_review_queue(self, caller: Principal, project_id: str) -> list[RemoteDelegation]:
        """The project's indeterminate delegations, awaiting an operator's review (admin)."""

        def run(tx: Tx) -> list[RemoteDelegation]:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.ADMIN)
            return tx.remote.delegations(project_id, [_S.INDETERMINATE])

        return self.ctx.store.read(run)

    def review_remote(
        self, caller: Principal, dlg_id: str, decision: str, note: str = ""
    ) -> RemoteDelegation:
        """An operator's decision on an indeterminate delegation (audited): `finalize` completes
        with the artifacts that were verified (the missing ones are named in the audit), through
        the same completion transaction; `reject` ends it and releases the local attempt."""
        if decision not in ("finalize", "reject"):
            raise InvalidRequest("the decision is 'finalize' or 'reject'")
        if not isinstance(note, str) or len(note) > 2000:
            raise InvalidRequest("a review note is at most 2,000 characters")

        def run(tx: Tx) -> RemoteDelegation:
            d = self.delegation(tx, dlg_id)
            if not self.ctx.can(tx, caller, d.project_id, Action.ADMIN):
                raise NotFound(f"delegation {dlg_id} not found")
            if d.state is not _S.INDETERMINATE:
                raise Conflict(
                    f"the delegation is {d.state.value}, not indeterminate", reason=ErrorReason.CONFLICT
                )
            self.ctx.audit(
                tx, d.project_id, "a2a.remote.reviewed", caller, d.id, decision=decision, note=note
            )
            if decision == "reject":
                return self._transition(tx, d, _S.REJECTED, caller, reason=note or "rejected by an operator")
            return self._finalize(tx, d, self._stored_result(tx, d), caller)

        return self.ctx.store.write(run)

    # machinery ----------------------------------------------------------------------
    def delegation(self, tx: Tx, dlg_id: str) -> RemoteDelegation:
        d = tx.remote.delegation(check_id(dlg_id, "delegation id"))
        if d is None:
            raise NotFound(f"delegation {dlg_id} not found")
        return d

    def _move(
        self,
        dlg_id: str,
        dst: RemoteState,
        *,
        evidence: Mapping[str, Any] | None = None,
        blobs: Iterable[bytes] = (),
        only_from: RemoteState | None = None,
        **changes: Any,
    ) -> RemoteDelegation:
        kept = list(blobs)

        def run(tx: Tx) -> RemoteDelegation:
            d = self.delegation(tx, dlg_id)
            if only_from is not None and d.state is not only_from:
                raise Conflict(
                    f"delegation {d.id} is {d.state.value}, not {only_from.value}",
                    reason=ErrorReason.CONFLICT,
                )
            if dst is _S.AWAITING:
                changes["since"] = tx.now
            if evidence is not None or kept:
                changes["evidence"] = self._keep(tx, d, evidence or {}, kept)
            return self._transition(tx, d, dst, None, **changes)

        return self.ctx.store.write(run)

    def _keep(
        self, tx: Tx, d: RemoteDelegation, evidence: Mapping[str, Any], blobs: list[bytes]
    ) -> dict[str, Any]:
        digests = []
        for data in blobs:
            digest = digest_bytes(data)
            tx.content.put_blob(digest, data, tx.now)
            tx.content.add_blob_ref(d.project_id, [digest])
            digests.append(digest)
        merged = dict(d.evidence) | dict(evidence)
        merged["blobs"] = sorted(set(merged.get("blobs", [])) | set(digests))
        return merged

    def _transition(
        self, tx: Tx, d: RemoteDelegation, dst: RemoteState, actor: Principal | None, **changes: Any
    ) -> RemoteDelegation:
        if not can_move(d.state, dst):
            raise Conflict(
                f"delegation {d.id} is {d.state.value}: cannot become {dst.value}",
                reason=ErrorReason.CONFLICT,
            )
        new = replace(d, state=dst, updated_at=tx.now, **changes)
        tx.remote.update_delegation(new)
        if dst.final and dst is not _S.FINALIZED:
            self._release(tx, new)
        data = {k: v for k, v in changes.items() if k != "evidence"}
        if "evidence" in changes:
            data["evidence"] = {k: v for k, v in new.evidence.items() if k != "payloads"}
        self.ctx.audit(
            tx, d.project_id, "a2a.remote.state", actor, d.id, src=d.state.value, dst=dst.value, **data
        )
        return new

    def _release(self, tx: Tx, d: RemoteDelegation) -> None:
        """End the delegation's local attempt if it is still the task's current one."""
        task = tx.work.task(d.task_id)
        if task is None or not task.active or task.current_attempt_id != d.attempt_id:
            return
        self.work.end_current_attempt(tx, task, AttemptStatus.RELEASED)
        tx.work.update_task(task.id, status=TaskStatus.OPEN, current_attempt_id=None)
        self.ctx.audit(
            tx, task.project_id, "attempt.released", None, d.attempt_id, task=task.id, delegation=d.id
        )

    @staticmethod
    def _result_evidence(result: RemoteResult) -> tuple[dict[str, Any], list[bytes]]:
        """Evidence JSON of a result and the blobs to keep (the manifest, every verified file)."""
        files = [
            {
                "artifact_id": f.artifact_id,
                "name": f.name,
                "digest": digest_bytes(f.data),
                "size": len(f.data),
            }
            for f in result.files
        ]
        evidence: dict[str, Any] = {
            "remote_state": result.remote_state.value,
            "manifest": digest_bytes(result.manifest) if result.manifest else None,
            "kid": result.kid,
            "payloads": files,
            "missing": list(result.missing),
        }
        blobs = [f.data for f in result.files] + ([result.manifest] if result.manifest else [])
        return evidence, blobs

    def _stored_result(self, tx: Tx, d: RemoteDelegation) -> RemoteResult:
        ev = d.evidence
        files = tuple(
            RemoteFile(p["artifact_id"], p["name"], tx.content.blob(p["digest"]) or b"")
            for p in ev.get("payloads", [])
        )
        manifest = tx.content.blob(ev["manifest"]) if ev.get("manifest") else None
        state = TaskState.from_wire(str(ev.get("remote_state", d.remote_state or "")))
        return RemoteResult(state, manifest or b"", files, tuple(ev.get("missing", [])), ev.get("kid"))

    def _finalize(
        self, tx: Tx, d: RemoteDelegation, result: RemoteResult, operator: Principal | None
    ) -> RemoteDelegation:
        # The worker finalizes a wait; only an operator finalizes an indeterminate delegation.
        if d.state is not (_S.AWAITING if operator is None else _S.INDETERMINATE):
            raise Conflict(f"delegation {d.id} is {d.state.value}", reason=ErrorReason.CONFLICT)
        if result.remote_state is not TaskState.COMPLETED:
            why = f"the remote task is {result.remote_state.value}, not completed"
            return self._transition(tx, d, _S.REFUSED, operator, reason=why)
        if not result.files or not result.manifest:
            return self._transition(tx, d, _S.REFUSED, operator, reason="nothing verified to publish")
        org = tx.remote.org(d.org_id)
        task = tx.work.task(d.task_id)
        agent = tx.access.principal(org.agent_id) if org else None
        assert org is not None and task is not None and agent is not None
        evidence, blobs = self._result_evidence(result)
        kept = self._keep(tx, d, evidence, blobs)
        cand = self._remote_candidate(tx, d, org, result)
        receipts = self._remote_receipts(tx, d, org, task, cand, digest_bytes(result.manifest))
        request = make_request(
            request_id=f"a2a:{d.id}", task_id=task.id, attempt_id=d.attempt_id, fence=d.fence,
            contract_hash=str(d.evidence["contract_hash"]), candidate_id=cand.id,
            evidence=[r.id for r in receipts],
        )  # fmt: skip
        outcome = self.completion.complete_in(tx, agent, request)
        kept |= {"candidate": cand.id, "receipts": [r.id for r in receipts]}
        if isinstance(outcome, Rejected):
            failed = [r.value for r in outcome.verdict.failed]
            kept["refused"] = failed
            return self._transition(tx, d, _S.REFUSED, operator, reason=",".join(failed), evidence=kept)
        assert isinstance(outcome, CompletionOutcome)
        return self._transition(
            tx, d, _S.FINALIZED, operator, evidence=kept, completion_id=outcome.completion.id, reason=None
        )

    def _remote_candidate(
        self, tx: Tx, d: RemoteDelegation, org: RemoteOrg, result: RemoteResult
    ) -> Candidate:
        taken: set[str] = set()
        files: dict[str, str | None] = {}
        for f in result.files:
            path = f"{org.target}{d.id}/{local_name(f.name, taken)}"
            files[path] = digest_bytes(f.data)
        bases = dict.fromkeys(files, 0)
        digest = digest_json({"files": files})
        dep_digest = digest_json({"bases": bases, "files": {}, "collections": {}})
        cand = Candidate(
            self.ctx.ids.new("cnd"), d.task_id, d.attempt_id, files, bases, {}, {}, digest, dep_digest, tx.now
        )
        tx.content.add_candidate(d.project_id, cand)
        self.ctx.audit(
            tx, d.project_id, "candidate.submitted", None, cand.id, task=d.task_id, attempt=d.attempt_id,
            digest=digest, dependency_digest=dep_digest, write_set=sorted(files), files=files, bases=bases,
            file_deps={}, collection_deps={}, delegation=d.id,
        )  # fmt: skip
        return cand

    def _remote_receipts(
        self, tx: Tx, d: RemoteDelegation, org: RemoteOrg, task: Task, cand: Candidate, manifest: str
    ) -> list[Receipt]:
        """One receipt per criterion, issued by the organisation's verifier principal: its
        observation is the remote's signed manifest (the receipt's log, kept as a blob)."""
        attest = ServiceKey.from_text(tx.remote.attest_key(org.id))
        out = []
        for c in task.contract.criteria:
            body = {
                "task_id": task.id, "attempt_id": d.attempt_id,
                "contract_hash": str(d.evidence["contract_hash"]),
                "candidate_digest": cand.digest, "dependency_digest": cand.dependency_digest,
                "criterion": c.id, "checker": c.checker, "result": "pass", "issued_at": int(tx.now * 1000),
                "issuer": org.verifier_id, "log_digest": manifest,
            }  # fmt: skip
            r = parse_receipt_body(body, attest.sign(body), d.project_id, cand.id)
            if tx.evidence.receipt(r.id) is None:
                tx.evidence.add_receipt(r, tx.now, attest.kid)  # the org verifier's key: it signed
                self.ctx.audit(
                    tx, d.project_id, "receipt.recorded", None, r.id, candidate=cand.id, task=task.id,
                    attempt=d.attempt_id, criterion=r.criterion, checker=r.checker, result=r.result.value,
                    log_digest=manifest, delegation=d.id,
                )  # fmt: skip
            out.append(r)
        return out
