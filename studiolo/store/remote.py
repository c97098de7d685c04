"""The A2A requester side: trust anchors of remote organisations, and remote delegations."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, Row, insert, select, update

from studiolo.core.remote import RemoteDelegation, RemoteOrg, RemoteState
from studiolo.store import schema as s
from studiolo.store._json import dumps, loads

__all__ = ["RemoteRepo"]


class RemoteRepo:
    def __init__(self, conn: Connection) -> None:
        self._c = conn

    # trust anchors -------------------------------------------------------------
    def add_org(self, org: RemoteOrg, attest_key: str) -> None:
        self._c.execute(
            insert(s.a2a_remote_orgs).values(
                id=org.id,
                project_id=org.project_id,
                name=org.name,
                keys=dumps(dict(org.keys)),
                agent_id=org.agent_id,
                verifier_id=org.verifier_id,
                checker=org.checker,
                target=org.target,
                attest_key=attest_key,
                created_at=org.created_at,
                revoked_at=None,
                origins=dumps(list(org.origins)),
            )
        )

    def org(self, org_id: str) -> RemoteOrg | None:
        row = self._c.execute(select(s.a2a_remote_orgs).where(s.a2a_remote_orgs.c.id == org_id)).first()
        return _org(row) if row else None

    def org_by_name(self, project_id: str, name: str) -> RemoteOrg | None:
        t = s.a2a_remote_orgs
        row = self._c.execute(select(t).where(t.c.project_id == project_id, t.c.name == name)).first()
        return _org(row) if row else None

    def orgs(self, project_id: str) -> list[RemoteOrg]:
        t = s.a2a_remote_orgs
        return [
            _org(r) for r in self._c.execute(select(t).where(t.c.project_id == project_id).order_by(t.c.name))
        ]

    def attest_key(self, org_id: str) -> str:
        t = s.a2a_remote_orgs
        return str(self._c.execute(select(t.c.attest_key).where(t.c.id == org_id)).scalar_one())

    def set_origins(self, org_id: str, origins: tuple[str, ...]) -> None:
        t = s.a2a_remote_orgs
        self._c.execute(update(t).where(t.c.id == org_id).values(origins=dumps(list(origins))))

    def revoke_org(self, org_id: str, at: float) -> None:
        t = s.a2a_remote_orgs
        self._c.execute(update(t).where(t.c.id == org_id, t.c.revoked_at.is_(None)).values(revoked_at=at))

    # delegations ----------------------------------------------------------------
    def add_delegation(self, d: RemoteDelegation) -> None:
        self._c.execute(insert(s.a2a_remote_delegations).values(**_values(d)))

    def delegation(self, dlg_id: str) -> RemoteDelegation | None:
        t = s.a2a_remote_delegations
        row = self._c.execute(select(t).where(t.c.id == dlg_id)).first()
        return _delegation(row) if row else None

    def update_delegation(self, d: RemoteDelegation) -> None:
        t = s.a2a_remote_delegations
        values = _values(d)
        del values["id"]
        self._c.execute(update(t).where(t.c.id == d.id).values(**values))

    def delegations(
        self,
        project_id: str | None = None,
        states: Iterable[RemoteState] | None = None,
        task_id: str | None = None,
        limit: int = 1000,
    ) -> list[RemoteDelegation]:
        t = s.a2a_remote_delegations
        q = select(t).order_by(t.c.created_at, t.c.id).limit(limit)
        if project_id is not None:
            q = q.where(t.c.project_id == project_id)
        if states is not None:
            q = q.where(t.c.state.in_([st.value for st in states]))
        if task_id is not None:
            q = q.where(t.c.task_id == task_id)
        return [_delegation(r) for r in self._c.execute(q)]


def _values(d: RemoteDelegation) -> dict[str, Any]:
    return {
        "id": d.id,
        "project_id": d.project_id,
        "task_id": d.task_id,
        "org_id": d.org_id,
        "agent_url": d.agent_url,
        "card_digest": d.card_digest,
        "pinned": dumps(dict(d.pinned)),
        "attempt_id": d.attempt_id,
        "fence": d.fence,
        "state": d.state.value,
        "remote_task_id": d.remote_task_id,
        "remote_state": d.remote_state,
        "since": d.since,
        "reason": d.reason,
        "evidence": dumps(dict(d.evidence)),
        "completion_id": d.completion_id,
        "created_by": d.created_by,
        "created_at": d.created_at,
        "updated_at": d.updated_at,
    }


def _org(row: Row[Any]) -> RemoteOrg:
    return RemoteOrg(
        row.id,
        row.project_id,
        row.name,
        loads(row.keys),
        row.agent_id,
        row.verifier_id,
        row.checker,
        row.target,
        row.created_at,
        row.revoked_at,
        tuple(loads(row.origins)),
    )


def _delegation(row: Row[Any]) -> RemoteDelegation:
    return RemoteDelegation(
        id=row.id,
        project_id=row.project_id,
        task_id=row.task_id,
        org_id=row.org_id,
        agent_url=row.agent_url,
        card_digest=row.card_digest,
        pinned=loads(row.pinned),
        attempt_id=row.attempt_id,
        fence=row.fence,
        state=RemoteState(row.state),
        remote_task_id=row.remote_task_id,
        remote_state=row.remote_state,
        since=row.since,
        reason=row.reason,
        evidence=loads(row.evidence),
        completion_id=row.completion_id,
        created_by=row.created_by,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )
