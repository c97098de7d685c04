"""Delegating a task to a remote A2A agent (docs/a2a.md, "Delegating to a remote agent"):
trust anchors per remote organisation, the delegation's durable state machine, and the
finalization that goes through the normal completion transaction. Every transition is one
audited write transaction; the requester worker (`studiolo.faces.a2a.requester`) does the I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from studiolo._exceptions import Conflict, InvalidRequest, NotAuthorized, NotFound
from studiolo.core.canonical import digest_bytes, digest_json
from studiolo.core.model import (
    Action,
    AttemptStatus,
    Candidate,
    Checker,
    Grant,
    Principal,
    PrincipalKind,
    Receipt,
    Task,
    TaskStatus,
)
from studiolo.core.paths import matches_any, normalize_prefix
from studiolo.core.quiescence import TaskState
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
from studiolo.keys import ServiceKey, parse_public_key
from studiolo.service._base import check_id
from studiolo.service.admin import AdminOps, _name
from studiolo.service.completion import CompletionOps, CompletionOutcome, _Rejected, make_request
from studiolo.service.evidence import parse_receipt_body
from studiolo.service.work import WorkOps
from studiolo.store import Tx

__all__ = ["RemoteOps"]

_AGENT_ACTIONS = frozenset({Action.READ, Action.CLAIM, Action.WRITE, Action.COMPLETE})
_KID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,100}$")
_MAX_KEYS = 16
_S = RemoteState


def _pinned(keys: Mapping[str, str]) -> dict[str, str]:
    if not isinstance(keys, Mapping) or not 1 <= len(keys) <= _MAX_KEYS:
        raise InvalidRequest(f"pin 1 to {_MAX_KEYS} Ed25519 public keys (kid → base64url)")
    out: dict[str, str] = {}
    for kid, key in keys.items():
        if not isinstance(kid, str) or not _KID_RE.match(kid):
            raise InvalidRequest(f"malformed key id {str(kid)[:80]!r}")
        out[kid] = parse_public_key(key)
    return out


class RemoteOps(AdminOps, WorkOps, CompletionOps):
    # trust anchors ------------------------------------------------------------
    def add_remote_org(
        self,
        caller: Principal,
        project_id: str,
        name: str,
        keys: Mapping[str, str],
        target: str | None = None,
    ) -> RemoteOrg:
        """Pin a remote organisation's keys in a project. Creates its agent principal (holds the
        local attempt), its verifier principal and the checker `a2a-<name>@1` admitting it."""
        org_name = _name(name, "organisation name")
        pinned = _pinned(keys)
        prefix = normalize_prefix(target if target is not None else f"remote/{org_name}")
        if not prefix:
            raise InvalidRequest("a remote organisation writes under a directory, not the project root")

        def run(tx: Tx) -> RemoteOrg:
            self.require_project(tx, caller, project_id)
            self.require(tx, caller, project_id, Action.ADMIN)
            if tx.remote.org_by_name(project_id, org_name) is not None:
                raise Conflict(f"remote organisation {org_name!r} exists", reason="conflict")
            attest = ServiceKey.generate()
            agent = self._issue(tx, project_id, f"a2a-{org_name}", PrincipalKind.AGENT, None).principal
            manifest = f"a2a-{org_name}-manifest"
            verifier = self._issue(tx, project_id, manifest, PrincipalKind.VERIFIER, attest.public).principal
            scope = (f"{prefix}**",)
            for who, acts in ((agent, _AGENT_ACTIONS), (verifier, frozenset({Action.READ, Action.VERIFY}))):
                tx.access.add_grant(Grant(self.ids.new("grt"), project_id, who.id, acts, scope, tx.now))
            checker = self._remote_checker(tx, project_id, org_name, verifier.id)
            org = RemoteOrg(
                self.ids.new("org"),
                project_id,
                org_name,
                pinned,
                agent.id,
                verifier.id,
                checker,
                prefix,
                tx.now,
            )
            tx.remote.add_org(org, attest.to_text())
            data = {"keys": pinned, "agent": agent.id, "verifier": verifier.id, "checker": checker}
            self.audit(
                tx, project_id, "a2a.remote_org.added", caller, org.id, name=org_name, target=prefix, **data
            )
            return org

        return self.store.write(run)

    def _remote_checker(self, tx: Tx, project_id: str, org_name: str, verifier_id: str) -> str:
        c = Checker(
            project_id, f"a2a-{org_name}", "1", "a2a-manifest", {"org": org_name}, frozenset({verifier_id})
        )
        tx.access.put_checker(c, tx.now, replace=tx.access.checker(project_id, c.name, c.version) is not None)
        return c.ref

    def remote_orgs(self, caller: Principal, project_id: str) -> list[RemoteOrg]:
        def run(tx: Tx) -> list[RemoteOrg]:
            self.require_project(tx, caller, project_id)
            return tx.remote.orgs(project_id)

        return self.store.read(run)

    def remote_org(self, caller: Principal, project_id: str, name: str) -> RemoteOrg:
        def run(tx: Tx) -> RemoteOrg:
            self.require_project(tx, caller, project_id)
            org = tx.remote.org_by_name(project_id, str(name)[:100])
            if org is None:
                raise NotFound(f"remote organisation {str(name)[:100]!r} not found")
            return org

        return self.store.read(run)

    def remote_org_for_task(self, caller: Principal, task_id: str, org_name: str) -> RemoteOrg:
        """The organisation a caller may delegate this task to: checked before any network
        I/O, so that nobody else can make the service fetch a URL."""

        def run(tx: Tx) -> RemoteOrg:
            task = self.visible_task(tx, caller, task_id)
            if not (
                self.can(tx, caller, task.project_id, Action.ADMIN) or self._may_delegate(tx, caller, task)
            ):
                raise NotAuthorized(f"{caller.name} holds no live delegate grant")
            org = tx.remote.org_by_name(task.project_id, str(org_name)[:100])
            if org is None or not org.live:
                raise NotFound(f"remote organisation {str(org_name)[:100]!r} not found")
            return org

        return self.store.read(run)

    # delegation ---------------------------------------------------------------
    def delegate_remote(
        self,
        caller: Principal,
        task_id: str,
        org_name: str,
        *,
        agent_url: str,
        card_digest: str,
        card_kid: str,
        skill: str | None = None,
    ) -> RemoteDelegation:
        """Hand a task to a remote agent whose card a pinned key signed (the face verified it):
        the task is claimed for the organisation's agent principal, and the wait begins."""

        def run(tx: Tx) -> RemoteDelegation:
            task = self.visible_task(tx, caller, task_id)
            if not (
                self.can(tx, caller, task.project_id, Action.ADMIN) or self._may_delegate(tx, caller, task)
            ):
                raise NotAuthorized(f"{caller.name} holds no live delegate grant")
            org = tx.remote.org_by_name(task.project_id, str(org_name)[:100])
            if org is None or not org.live:
                raise NotFound(f"remote organisation {str(org_name)[:100]!r} not found")
            if card_kid not in org.keys:
                raise NotAuthorized(
                    "the agent card is not signed by a pinned key", reason="signature_invalid"
                )
            self._check_delegable(tx, task, org)
            agent = tx.access.principal(org.agent_id)
            assert agent is not None
            attempt = self._start_attempt(
                tx, task, agent, caller, self.settings.max_lease_seconds, "attempt.claimed"
            )
            evidence: dict[str, Any] = {
                "contract_hash": task.contract_hash,
                "card_kid": card_kid,
                "skill": skill,
                "blobs": [],
            }
            d = RemoteDelegation(
                self.ids.new("dlg"), task.project_id, task.id, org.id, agent_url, card_digest, dict(org.keys),
                attempt.id, attempt.fence, _S.DELEGATED, None, None, None, None, evidence, None, caller.id,
                tx.now, tx.now,
            )  # fmt: skip
            tx.remote.add_delegation(d)
            self.audit(
                tx, task.project_id, "a2a.remote.delegated", caller, d.id, task=task.id, org=org.name,
                agent_url=agent_url, card_digest=card_digest, pinned=sorted(org.keys), attempt=attempt.id,
            )  # fmt: skip
            return d

        return self.store.write(run)

    def _may_delegate(self, tx: Tx, caller: Principal, task: Task) -> bool:
        grants = self.grants(tx, caller, task.project_id)
        return any(g.live and Action.DELEGATE in g.actions for g in grants)

    def _check_delegable(self, tx: Tx, task: Task, org: RemoteOrg) -> None:
        if not task.active:
            raise Conflict(f"task is {task.status.value}", reason="task_not_active")
        current = tx.work.attempt(task.current_attempt_id) if task.current_attempt_id else None
        if current is not None and self._live(tx, current):
            raise Conflict("the task has a live attempt", reason="task_already_claimed")
        if not matches_any(task.contract.scope, f"{org.target}dlg_x/artifact"):
            raise InvalidRequest(f"the task's scope does not cover the organisation's directory {org.target}")
        if any(c.checker != org.checker for c in task.contract.criteria):
            raise InvalidRequest(f"every criterion of the task's contract must be checked by {org.checker}")
        if any(not d.state.final for d in tx.remote.delegations(task_id=task.id)):
            raise Conflict("the task is already delegated", reason="conflict")

    # transitions the requester worker reports ---------------------------------------
    def remote_sent(self, dlg_id: str, remote_task_id: str, remote_state: str) -> RemoteDelegation:
        if not isinstance(remote_task_id, str) or not 1 <= len(remote_task_id) <= 200:
            raise InvalidRequest("a remote task id is 1 to 200 characters")
        return self._move(dlg_id, _S.REMOTE_WORKING, remote_task_id=remote_task_id, remote_state=remote_state)

    def remote_terminal(self, dlg_id: str, remote_state: TaskState) -> RemoteDelegation:
        """The remote task reached a terminal state: the wait for its artifacts begins (not
        finalization). `since` is the ledger's clock: a resumed wait keeps its bound."""
        return self._move(dlg_id, _S.AWAITING, remote_state=remote_state.value, since=None)

    def remote_send_failed(self, dlg_id: str, reason: str) -> RemoteDelegation:
        return self._move(dlg_id, _S.REMOTE_FAILED, reason=reason[:2000])

    def remote_integrity_failed(
        self, dlg_id: str, evidence: Mapping[str, Any], blobs: Iterable[bytes]
    ) -> RemoteDelegation:
        return self._move(
            dlg_id, _S.INTEGRITY_FAILED, reason=str(evidence.get("code", "")), evidence=evidence, blobs=blobs
        )

    def remote_indeterminate(self, dlg_id: str, reason: str, result: RemoteResult) -> RemoteDelegation:
        """Past the bound: the verified part is kept so an operator can decide."""
        evidence, blobs = self._result_evidence(result)
        return self._move(dlg_id, _S.INDETERMINATE, reason=reason, evidence=evidence, blobs=blobs)

    def remote_keepalive(self, dlg_id: str) -> bool:
        """Keep the local attempt's lease while the remote works; False once it is not current."""

        def run(tx: Tx) -> bool:
            d = self._delegation(tx, dlg_id)
            attempt = tx.work.attempt(d.attempt_id)
            task = tx.work.task(d.task_id)
            if (
                attempt is None
                or task is None
                or task.current_attempt_id != attempt.id
                or not self._live(tx, attempt)
            ):
                return False
            if attempt.lease_deadline - tx.now > self.settings.max_lease_seconds / 2:
                return True
            tx.work.update_attempt(attempt.id, lease_deadline=tx.now + self.settings.max_lease_seconds)
            self.audit(tx, d.project_id, "attempt.heartbeat", None, attempt.id, delegation=d.id)
            return True

        return self.store.write(run)

    def remote_finish(self, dlg_id: str, result: RemoteResult) -> RemoteDelegation:
        """The artifacts quiesced. A completed remote task becomes a candidate, a receipt by the
        organisation's verifier principal and a completion request, in this one transaction;
        every predicate applies (`refused` if one fails). Failed or canceled: recorded, the
        local attempt released."""
        end = ended_state(result.remote_state)
        if end is not None:
            evidence, blobs = self._result_evidence(result)
            return self._move(dlg_id, end, reason=result.remote_state.value, evidence=evidence, blobs=blobs)
        return self.store.write(lambda tx: self._finalize(tx, self._delegation(tx, dlg_id), result, None))

    # the operator review queue ----------------------------------------------------
    def remote_review_queue(self, caller: Principal, project_id: str) -> list[RemoteDelegation]:
        def run(tx: Tx) -> list[RemoteDelegation]:
            self.require_project(tx, caller, project_id)
            self.require(tx, caller, project_id, Action.ADMIN)
            return tx.remote.delegations(project_id, [_S.INDETERMINATE])

        return self.store.read(run)

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
            d = self._delegation(tx, dlg_id)
            if not self.can(tx, caller, d.project_id, Action.ADMIN):
                raise NotFound(f"delegation {dlg_id} not found")
            if d.state is not _S.INDETERMINATE:
                raise Conflict(f"the delegation is {d.state.value}, not indeterminate", reason="conflict")
            self.audit(tx, d.project_id, "a2a.remote.reviewed", caller, d.id, decision=decision, note=note)
            if decision == "reject":
                return self._transition(tx, d, _S.REJECTED, caller, reason=note or "rejected by an operator")
            return self._finalize(tx, d, self._stored_result(tx, d), caller)

        return self.store.write(run)

    # reads --------------------------------------------------------------------------
    def remote_delegation(self, caller: Principal, dlg_id: str) -> RemoteDelegation:
        def run(tx: Tx) -> RemoteDelegation:
            d = self._delegation(tx, dlg_id)
            if not self.can(tx, caller, d.project_id, Action.READ):
                raise NotFound(f"delegation {dlg_id} not found")
            return d

        return self.store.read(run)

    def remote_delegations(
        self, caller: Principal, project_id: str, state: str | None = None
    ) -> list[RemoteDelegation]:
        try:
            states = None if state is None else [RemoteState(state)]
        except ValueError as exc:
            raise InvalidRequest(f"unknown delegation state {str(state)[:40]!r}") from exc

        def run(tx: Tx) -> list[RemoteDelegation]:
            self.require_project(tx, caller, project_id)
            self.require(tx, caller, project_id, Action.READ)
            return tx.remote.delegations(project_id, states)

        return self.store.read(run)

    def pending_remote(self) -> list[tuple[RemoteDelegation, RemoteOrg]]:
        """Every delegation the requester worker must drive or resume (no caller: the service)."""

        def run(tx: Tx) -> list[tuple[RemoteDelegation, RemoteOrg]]:
            waiting = tx.remote.delegations(states=[s for s in RemoteState if s.waiting], limit=10_000)
            return [(d, org) for d in waiting if (org := tx.remote.org(d.org_id)) is not None]

        return self.store.read(run)

    def remote_state(self, dlg_id: str) -> RemoteDelegation:
        return self.store.read(lambda tx: self._delegation(tx, dlg_id))

    def remote_brief(self, dlg_id: str) -> tuple[str, str]:
        """The title and description the remote agent is sent (the local task's)."""

        def run(tx: Tx) -> tuple[str, str]:
            task = tx.work.task(self._delegation(tx, dlg_id).task_id)
            assert task is not None
            return task.title, task.description

        return self.store.read(run)

    # machinery ----------------------------------------------------------------------
    def _delegation(self, tx: Tx, dlg_id: str) -> RemoteDelegation:
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
        **changes: Any,
    ) -> RemoteDelegation:
        kept = list(blobs)

        def run(tx: Tx) -> RemoteDelegation:
            d = self._delegation(tx, dlg_id)
            if dst is _S.AWAITING:
                changes["since"] = tx.now
            if evidence is not None or kept:
                changes["evidence"] = self._keep(tx, d, evidence or {}, kept)
            return self._transition(tx, d, dst, None, **changes)

        return self.store.write(run)

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
                f"delegation {d.id} is {d.state.value}: cannot become {dst.value}", reason="conflict"
            )
        new = replace(d, state=dst, updated_at=tx.now, **changes)
        tx.remote.update_delegation(new)
        if dst.final and dst is not _S.FINALIZED:
            self._release(tx, new)
        data = {k: v for k, v in changes.items() if k != "evidence"}
        if "evidence" in changes:
            data["evidence"] = {k: v for k, v in new.evidence.items() if k != "payloads"}
        self.audit(
            tx, d.project_id, "a2a.remote.state", actor, d.id, src=d.state.value, dst=dst.value, **data
        )
        return new

    def _release(self, tx: Tx, d: RemoteDelegation) -> None:
        """End the delegation's local attempt if it is still the task's current one."""
        task = tx.work.task(d.task_id)
        if task is None or not task.active or task.current_attempt_id != d.attempt_id:
            return
        self._end_current_attempt(tx, task, AttemptStatus.RELEASED)
        tx.work.update_task(task.id, status=TaskStatus.OPEN, current_attempt_id=None)
        self.audit(tx, task.project_id, "attempt.released", None, d.attempt_id, task=task.id, delegation=d.id)

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
        if d.state not in (_S.AWAITING, _S.INDETERMINATE):
            raise Conflict(f"delegation {d.id} is {d.state.value}", reason="conflict")
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
        outcome = self._complete(tx, agent, request)
        kept |= {"candidate": cand.id, "receipts": [r.id for r in receipts]}
        if isinstance(outcome, _Rejected):
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
            self.ids.new("cnd"), d.task_id, d.attempt_id, files, bases, {}, {}, digest, dep_digest, tx.now
        )
        tx.content.add_candidate(d.project_id, cand)
        self.audit(
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
                self.audit(
                    tx, d.project_id, "receipt.recorded", None, r.id, candidate=cand.id, task=task.id,
                    attempt=d.attempt_id, criterion=r.criterion, checker=r.checker, result=r.result.value,
                    log_digest=manifest, delegation=d.id,
                )  # fmt: skip
            out.append(r)
        return out
