"""The A2A requester side: trust anchors of remote organisations, and remote delegations."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.exc import NoResultFound

from studiolo.core.remote import RemoteDelegation, RemoteOrg, RemoteState
from studiolo.store import schema as s
from studiolo.store._json import dumps, loads
from studiolo.store._raw import Raw, columns, in_list, in_params

__all__ = ["RemoteRepo"]

_ORG_COLUMNS = (
    "id",
    "project_id",
    "name",
    "keys",
    "agent_id",
    "verifier_id",
    "checker",
    "target",
    "created_at",
    "revoked_at",
    "origins",
)
_ORGS = f"SELECT {', '.join(_ORG_COLUMNS)} FROM a2a_remote_orgs"
_ADD_ORG = (
    f"INSERT INTO a2a_remote_orgs ({', '.join(_ORG_COLUMNS)}, attest_key)"
    f" VALUES ({', '.join(':' + c for c in _ORG_COLUMNS)}, :attest_key)"
)
_DELEGATION_COLUMNS = tuple(c.name for c in s.a2a_remote_delegations.c)  # `_values` order
_DELEGATIONS = f"SELECT {columns(s.a2a_remote_delegations, 'd')} FROM a2a_remote_delegations d"
_ADD_DELEGATION = (
    f"INSERT INTO a2a_remote_delegations ({', '.join(_DELEGATION_COLUMNS)})"
    f" VALUES ({', '.join(':' + c for c in _DELEGATION_COLUMNS)})"
)
_UPDATE_DELEGATION = (
    "UPDATE a2a_remote_delegations SET "
    + ", ".join(f"{c} = :{c}" for c in _DELEGATION_COLUMNS if c != "id")
    + " WHERE id = :id"
)


class RemoteRepo:
    def __init__(self, conn: Connection) -> None:
        self._raw = Raw(conn)

    # trust anchors -------------------------------------------------------------
    def add_org(self, org: RemoteOrg, attest_key: str) -> None:
        values = {
            "id": org.id,
            "project_id": org.project_id,
            "name": org.name,
            "keys": dumps(dict(org.keys)),
            "agent_id": org.agent_id,
            "verifier_id": org.verifier_id,
            "checker": org.checker,
            "target": org.target,
            "created_at": org.created_at,
            "revoked_at": None,
            "origins": dumps(list(org.origins)),
            "attest_key": attest_key,
        }
        self._raw.run(_ADD_ORG, values)

    def org(self, org_id: str) -> RemoteOrg | None:
        row = self._raw.one(_ORGS + " WHERE id = :id", {"id": org_id})
        return _org(row) if row else None

    def org_by_name(self, project_id: str, name: str) -> RemoteOrg | None:
        row = self._raw.one(_ORGS + " WHERE project_id = :p AND name = :n", {"p": project_id, "n": name})
        return _org(row) if row else None

    def orgs(self, project_id: str) -> list[RemoteOrg]:
        return [
            _org(r) for r in self._raw.all(_ORGS + " WHERE project_id = :p ORDER BY name", {"p": project_id})
        ]

    def attest_key(self, org_id: str) -> str:
        row = self._raw.one("SELECT attest_key FROM a2a_remote_orgs WHERE id = :id", {"id": org_id})
        if row is None:
            raise NoResultFound("No row was found when one was required")  # as `scalar_one()` said
        return str(row[0])

    def set_origins(self, org_id: str, origins: tuple[str, ...]) -> None:
        sql = "UPDATE a2a_remote_orgs SET origins = :origins WHERE id = :id"
        self._raw.run(sql, {"id": org_id, "origins": dumps(list(origins))})

    def revoke_org(self, org_id: str, at: float) -> None:
        sql = "UPDATE a2a_remote_orgs SET revoked_at = :at WHERE id = :id AND revoked_at IS NULL"
        self._raw.run(sql, {"id": org_id, "at": at})

    # delegations ----------------------------------------------------------------
    def add_delegation(self, d: RemoteDelegation) -> None:
        self._raw.run(_ADD_DELEGATION, _values(d))

    def delegation(self, dlg_id: str) -> RemoteDelegation | None:
        row = self._raw.one(_DELEGATIONS + " WHERE d.id = :id", {"id": dlg_id})
        return _delegation(row) if row else None

    def update_delegation(self, d: RemoteDelegation) -> None:
        self._raw.run(_UPDATE_DELEGATION, _values(d))

    def delegations(
        self,
        project_id: str | None = None,
        states: Iterable[RemoteState] | None = None,
        task_id: str | None = None,
        limit: int = 1000,
    ) -> list[RemoteDelegation]:
        where: list[str] = []
        params: dict[str, Any] = {"limit": limit}
        if project_id is not None:
            where.append("d.project_id = :p")
            params["p"] = project_id
        if states is not None:
            values = [st.value for st in states]
            where.append("d.state IN " + in_list("state", len(values)) if values else "1 = 0")
            params |= in_params("state", values)
        if task_id is not None:
            where.append("d.task_id = :t")
            params["t"] = task_id
        clause = " WHERE " + " AND ".join(where) if where else ""
        rows = self._raw.all(_DELEGATIONS + clause + " ORDER BY d.created_at, d.id LIMIT :limit", params)
        return [_delegation(r) for r in rows]


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


def _org(row: Sequence[Any]) -> RemoteOrg:
    id_, project_id, name, keys, agent_id, verifier_id, checker, target, created_at, revoked_at, origins = row
    return RemoteOrg(
        id_,
        project_id,
        name,
        loads(keys),
        agent_id,
        verifier_id,
        checker,
        target,
        created_at,
        revoked_at,
        tuple(loads(origins)),
    )


def _delegation(row: Sequence[Any]) -> RemoteDelegation:
    d = dict(zip(_DELEGATION_COLUMNS, row, strict=True))
    d["pinned"], d["evidence"] = loads(d["pinned"]), loads(d["evidence"])
    return RemoteDelegation(**(d | {"state": RemoteState(d["state"])}))
