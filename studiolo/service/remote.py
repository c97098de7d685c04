"""Delegating a task to a remote A2A agent (docs/a2a.md, "Delegating to a remote agent"):
trust anchors per remote organisation, the delegation itself, and its reads. The wait that
follows is `studiolo.service.remote_wait`; the requester worker
(`studiolo.workers.a2a.requester`) does the I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from studiolo._exceptions import Conflict, InvalidRequest, NotAuthorized, NotFound
from studiolo.core.lease import is_live
from studiolo.core.model import Action, Checker, Grant, Principal, PrincipalKind, Task
from studiolo.core.paths import matches_any, normalize_prefix
from studiolo.core.reasons import ErrorReason, Reason
from studiolo.core.remote import RemoteDelegation, RemoteOrg, RemoteState, parse_origins
from studiolo.keys import ServiceKey, parse_public_key
from studiolo.service._door import Context
from studiolo.service._ids import check_name
from studiolo.service.admin import AdminOps
from studiolo.service.remote_wait import RemoteWaitOps
from studiolo.service.work import WorkOps
from studiolo.store import Tx

__all__ = ["RemoteOps"]

_AGENT_ACTIONS = frozenset({Action.READ, Action.CLAIM, Action.WRITE, Action.COMPLETE})
_KID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,100}$")
_MAX_KEYS = 16
_S = RemoteState


def _origins(origins: Sequence[str]) -> tuple[str, ...]:
    if isinstance(origins, str) or not isinstance(origins, Sequence):
        raise InvalidRequest("origins are a list of scheme://host[:port]")
    try:
        return parse_origins(origins)
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from exc


def _pinned(keys: Mapping[str, str]) -> dict[str, str]:
    if not isinstance(keys, Mapping) or not 1 <= len(keys) <= _MAX_KEYS:
        raise InvalidRequest(f"pin 1 to {_MAX_KEYS} Ed25519 public keys (kid → base64url)")
    out: dict[str, str] = {}
    for kid, key in keys.items():
        if not isinstance(kid, str) or not _KID_RE.match(kid):
            raise InvalidRequest(f"malformed key id {str(kid)[:80]!r}")
        out[kid] = parse_public_key(key)
    return out


class RemoteOps:
    def __init__(self, ctx: Context, admin: AdminOps, work: WorkOps, remote_wait: RemoteWaitOps) -> None:
        self.ctx = ctx
        self.admin = admin
        self.work = work
        self.remote_wait = remote_wait

    # trust anchors ------------------------------------------------------------
    def add_remote_org(
        self,
        caller: Principal,
        project_id: str,
        name: str,
        keys: Mapping[str, str],
        target: str | None = None,
        origins: Sequence[str] = (),
    ) -> RemoteOrg:
        """Pin a remote organisation's keys in a project, and the origins the service may send
        requests to for it. Creates its agent principal (holds the local attempt), its verifier
        principal and the checker `a2a-<name>@1` admitting it."""
        org_name = check_name(name, "organisation name")
        pinned = _pinned(keys)
        allowed = _origins(origins)
        prefix = normalize_prefix(target if target is not None else f"remote/{org_name}")
        if not prefix:
            raise InvalidRequest("a remote organisation writes under a directory, not the project root")

        def run(tx: Tx) -> RemoteOrg:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.ADMIN)
            if tx.remote.org_by_name(project_id, org_name) is not None:
                raise Conflict(f"remote organisation {org_name!r} exists", reason=ErrorReason.CONFLICT)
            attest = ServiceKey.generate()
            agent = self._principal(tx, caller, project_id, f"a2a-{org_name}", PrincipalKind.AGENT, None)
            manifest = f"a2a-{org_name}-manifest"
            verifier = self._principal(
                tx, caller, project_id, manifest, PrincipalKind.VERIFIER, attest.public
            )
            scope = (f"{prefix}**",)
            for who, acts in ((agent, _AGENT_ACTIONS), (verifier, frozenset({Action.READ, Action.VERIFY}))):
                self._grant(
                    tx, caller, Grant(self.ctx.ids.new("grt"), project_id, who.id, acts, scope, tx.now)
                )
            checker = self._remote_checker(tx, caller, project_id, org_name, verifier.id)
            org = RemoteOrg(
                self.ctx.ids.new("org"),
                project_id,
                org_name,
                pinned,
                agent.id,
                verifier.id,
                checker,
                prefix,
                tx.now,
                origins=allowed,
            )
            tx.remote.add_org(org, attest.to_text())
            data = {"keys": pinned, "agent": agent.id, "verifier": verifier.id, "checker": checker}
            data |= {"origins": list(allowed)}
            self.ctx.audit(
                tx, project_id, "a2a.remote_org.added", caller, org.id, name=org_name, target=prefix, **data
            )
            return org

        return self.ctx.store.write(run)

    def _principal(
        self, tx: Tx, caller: Principal, project_id: str, name: str, kind: PrincipalKind, key: str | None
    ) -> Principal:
        p = self.admin.issue(tx, project_id, name, kind, key).principal
        self.ctx.audit(tx, project_id, "principal.added", caller, p.id, name=name, kind=kind.value)
        if key is not None:
            self.ctx.audit(tx, project_id, "principal.key_set", caller, p.id, key=key)
        return p

    def _grant(self, tx: Tx, caller: Principal, g: Grant) -> None:
        """A grant of the organisation's principals: the same `grant.created` event as any."""
        tx.access.add_grant(g)
        actions = sorted(a.value for a in g.actions)
        self.ctx.audit(
            tx, g.project_id, "grant.created", caller, g.id, principal=g.principal_id, actions=actions,
            scope=list(g.scope),
        )  # fmt: skip

    def _remote_checker(
        self, tx: Tx, caller: Principal, project_id: str, org_name: str, verifier_id: str
    ) -> str:
        c = Checker(
            project_id, f"a2a-{org_name}", "1", "a2a-manifest", {"org": org_name}, frozenset({verifier_id})
        )
        if tx.access.checker(project_id, c.name, c.version) is not None:
            raise Conflict(
                f"checker {c.ref} exists: choose another organisation name", reason=ErrorReason.CONFLICT
            )
        tx.access.put_checker(c, tx.now, replace=False)
        self.ctx.audit(
            tx, project_id, "checker.admitted", caller, c.ref, kind=c.kind, verifiers=[verifier_id]
        )
        return c.ref

    def set_remote_origins(
        self, caller: Principal, project_id: str, name: str, origins: Sequence[str]
    ) -> RemoteOrg:
        """Replace the origins the service may send requests to for an organisation (audited);
        delegations in flight follow the new list from their next request."""
        allowed = _origins(origins)

        def run(tx: Tx) -> RemoteOrg:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.ADMIN)
            org = tx.remote.org_by_name(project_id, str(name)[:100])
            if org is None:
                raise NotFound(f"remote organisation {str(name)[:100]!r} not found")
            tx.remote.set_origins(org.id, allowed)
            self.ctx.audit(
                tx, project_id, "a2a.remote_org.origins", caller, org.id, name=org.name, origins=list(allowed)
            )
            return replace(org, origins=allowed)

        return self.ctx.store.write(run)

    def revoke_remote_org(self, caller: Principal, project_id: str, name: str) -> RemoteOrg:
        """Stop trusting an organisation: no new delegation, and the grants of its principals are
        revoked, so the completion contract refuses any result still in flight (audited)."""

        def run(tx: Tx) -> RemoteOrg:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.ADMIN)
            org = tx.remote.org_by_name(project_id, str(name)[:100])
            if org is None:
                raise NotFound(f"remote organisation {str(name)[:100]!r} not found")
            if org.live:
                tx.remote.revoke_org(org.id, tx.now)
                for who in (org.agent_id, org.verifier_id):
                    for g in tx.access.grants_of(who, project_id):
                        tx.access.revoke_grant(g.id, tx.now)
                        self.ctx.audit(tx, project_id, "grant.revoked", caller, g.id, principal=who)
                self.ctx.audit(tx, project_id, "a2a.remote_org.revoked", caller, org.id, name=org.name)
            found = tx.remote.org(org.id)
            assert found is not None
            return found

        return self.ctx.store.write(run)

    def remote_orgs(self, caller: Principal, project_id: str) -> list[RemoteOrg]:
        """The remote organisations pinned in the project."""

        def run(tx: Tx) -> list[RemoteOrg]:
            self.ctx.require_project(tx, caller, project_id)
            return tx.remote.orgs(project_id)

        return self.ctx.store.read(run)

    def remote_org(self, caller: Principal, project_id: str, name: str) -> RemoteOrg:
        """A remote organisation pinned in the project, by name."""

        def run(tx: Tx) -> RemoteOrg:
            self.ctx.require_project(tx, caller, project_id)
            org = tx.remote.org_by_name(project_id, str(name)[:100])
            if org is None:
                raise NotFound(f"remote organisation {str(name)[:100]!r} not found")
            return org

        return self.ctx.store.read(run)

    def remote_org_for_task(self, caller: Principal, task_id: str, org_name: str) -> RemoteOrg:
        """The organisation a caller may delegate this task to: checked before any network
        I/O, so that nobody else can make the service fetch a URL."""

        def run(tx: Tx) -> RemoteOrg:
            return self._delegable_org(tx, caller, task_id, org_name)[1]

        return self.ctx.store.read(run)

    def _delegable_org(
        self, tx: Tx, caller: Principal, task_id: str, org_name: str
    ) -> tuple[Task, RemoteOrg]:
        """The task and the live organisation the caller may delegate it to, else refuse."""
        task = self.ctx.visible_task(tx, caller, task_id)
        if not (
            self.ctx.can(tx, caller, task.project_id, Action.ADMIN) or self._may_delegate(tx, caller, task)
        ):
            raise NotAuthorized(f"{caller.name} holds no live delegate grant")
        org = tx.remote.org_by_name(task.project_id, str(org_name)[:100])
        if org is None or not org.live:
            raise NotFound(f"remote organisation {str(org_name)[:100]!r} not found")
        return task, org

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
            task, org = self._delegable_org(tx, caller, task_id, org_name)
            if card_kid not in org.keys:
                raise NotAuthorized(
                    "the agent card is not signed by a pinned key", reason=ErrorReason.SIGNATURE_INVALID
                )
            self._check_delegable(tx, task, org)
            agent = tx.access.principal(org.agent_id)
            assert agent is not None
            attempt = self.work.start_attempt(
                tx, task, agent, caller, self.ctx.settings.max_lease_seconds, "attempt.claimed"
            )
            evidence: dict[str, Any] = {
                "contract_hash": task.contract_hash,
                "card_kid": card_kid,
                "skill": skill,
                "blobs": [],
            }
            dlg_id = self.ctx.ids.new("dlg")
            d = RemoteDelegation(
                dlg_id, task.project_id, task.id, org.id, agent_url, card_digest, dict(org.keys),
                attempt.id, attempt.fence, _S.DELEGATED, None, None, None, None, evidence, None, caller.id,
                tx.now, tx.now,
            )  # fmt: skip
            tx.remote.add_delegation(d)
            self.ctx.audit(
                tx, task.project_id, "a2a.remote.delegated", caller, d.id, task=task.id, org=org.name,
                agent_url=agent_url, card_digest=card_digest, pinned=sorted(org.keys), attempt=attempt.id,
            )  # fmt: skip
            return d

        return self.ctx.store.write(run)

    def _may_delegate(self, tx: Tx, caller: Principal, task: Task) -> bool:
        grants = self.ctx.grants(tx, caller, task.project_id)
        return any(g.live and Action.DELEGATE in g.actions for g in grants)

    def _check_delegable(self, tx: Tx, task: Task, org: RemoteOrg) -> None:
        if not task.active:
            raise Conflict(f"task is {task.status.value}", reason=Reason.TASK_NOT_ACTIVE)
        current = tx.work.attempt(task.current_attempt_id) if task.current_attempt_id else None
        if current is not None and is_live(current, tx.incarnation, tx.now):
            raise Conflict("the task has a live attempt", reason=ErrorReason.TASK_ALREADY_CLAIMED)
        if not matches_any(task.contract.scope, f"{org.target}dlg_x/artifact"):
            raise InvalidRequest(f"the task's scope does not cover the organisation's directory {org.target}")
        if any(c.checker != org.checker for c in task.contract.criteria):
            raise InvalidRequest(f"every criterion of the task's contract must be checked by {org.checker}")
        if any(not d.state.final for d in tx.remote.delegations(task_id=task.id)):
            raise Conflict("the task is already delegated", reason=ErrorReason.CONFLICT)

    # reads --------------------------------------------------------------------------
    def remote_delegation(self, caller: Principal, dlg_id: str) -> RemoteDelegation:
        """A delegation to a remote organisation, if the caller may read its project."""

        def run(tx: Tx) -> RemoteDelegation:
            d = self.remote_wait.delegation(tx, dlg_id)
            if not self.ctx.can(tx, caller, d.project_id, Action.READ):
                raise NotFound(f"delegation {dlg_id} not found")
            return d

        return self.ctx.store.read(run)

    def remote_delegations(
        self, caller: Principal, project_id: str, state: str | None = None
    ) -> list[RemoteDelegation]:
        """The project's delegations to remote organisations, in one state if given."""
        try:
            states = None if state is None else [RemoteState(state)]
        except ValueError as exc:
            raise InvalidRequest(f"unknown delegation state {str(state)[:40]!r}") from exc

        def run(tx: Tx) -> list[RemoteDelegation]:
            self.ctx.require_project(tx, caller, project_id)
            self.ctx.require(tx, caller, project_id, Action.READ)
            return tx.remote.delegations(project_id, states)

        return self.ctx.store.read(run)

    def pending_remote(self) -> list[tuple[RemoteDelegation, RemoteOrg]]:
        """Every delegation the requester worker must drive or resume (no caller: the service)."""

        def run(tx: Tx) -> list[tuple[RemoteDelegation, RemoteOrg]]:
            waiting = tx.remote.delegations(states=[s for s in RemoteState if s.waiting], limit=10_000)
            return [(d, org) for d in waiting if (org := tx.remote.org(d.org_id)) is not None]

        return self.ctx.store.read(run)

    def remote_state(self, dlg_id: str) -> RemoteDelegation:
        """A delegation as the ledger has it now (for the requester worker: no caller)."""
        return self.ctx.store.read(lambda tx: self.remote_wait.delegation(tx, dlg_id))

    def remote_brief(self, dlg_id: str) -> tuple[str, str]:
        """The title and description the remote agent is sent (the local task's)."""

        def run(tx: Tx) -> tuple[str, str]:
            task = tx.work.task(self.remote_wait.delegation(tx, dlg_id).task_id)
            assert task is not None
            return task.title, task.description

        return self.ctx.store.read(run)
