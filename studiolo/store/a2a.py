"""Intake templates and delegations (the A2A face)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection

from studiolo.core.intake import Delegation, IntakeTemplate
from studiolo.store import schema as s
from studiolo.store._json import dumps, loads
from studiolo.store._raw import Raw, columns

__all__ = ["A2ARepo"]

_INTAKES = f"SELECT {columns(s.a2a_intakes, 'i')} FROM a2a_intakes i"
_DELEGATIONS = f"SELECT {columns(s.a2a_tasks, 't')} FROM a2a_tasks t"
_ADD_INTAKE = (
    "INSERT INTO a2a_intakes (project_id, name, description, contract, created_at)"
    " VALUES (:project_id, :name, :description, :contract, :created_at)"
)
_ADD_DELEGATION = (
    "INSERT INTO a2a_tasks"
    " (id, project_id, requester_id, context_id, intake, task_id, refused, message, created_at)"
    " VALUES (:id, :project_id, :requester_id, :context_id, :intake, :task_id, :refused, :message,"
    " :created_at)"
)


class A2ARepo:
    def __init__(self, conn: Connection) -> None:
        self._raw = Raw(conn)

    # intake templates -------------------------------------------------------
    def put_intake(self, t: IntakeTemplate) -> None:
        """Insert or replace the template `(project_id, name)` (tasks pin their own contract)."""
        key = {"project_id": t.project_id, "name": t.name}
        self._raw.run("DELETE FROM a2a_intakes WHERE project_id = :project_id AND name = :name", key)
        values = {
            "description": t.description,
            "contract": dumps(t.contract_json()),
            "created_at": t.created_at,
        }
        self._raw.run(_ADD_INTAKE, key | values)

    def intake(self, project_id: str, name: str) -> IntakeTemplate | None:
        sql = _INTAKES + " WHERE i.project_id = :p AND i.name = :n"
        row = self._raw.one(sql, {"p": project_id, "n": name})
        return _intake(row) if row else None

    def intakes(self, project_id: str | None = None) -> list[IntakeTemplate]:
        where, params = ("", {}) if project_id is None else (" WHERE i.project_id = :p", {"p": project_id})
        rows = self._raw.all(_INTAKES + where + " ORDER BY i.project_id, i.name", params)
        return [_intake(r) for r in rows]

    # delegations -------------------------------------------------------------
    def add_delegation(self, d: Delegation) -> None:
        values = {
            "id": d.id,
            "project_id": d.project_id,
            "requester_id": d.requester_id,
            "context_id": d.context_id,
            "intake": d.intake,
            "task_id": d.task_id,
            "refused": d.refused,
            "message": dumps(d.message),
            "created_at": d.created_at,
        }
        self._raw.run(_ADD_DELEGATION, values)

    def delegation(self, a2a_id: str) -> Delegation | None:
        row = self._raw.one(_DELEGATIONS + " WHERE t.id = :id", {"id": a2a_id})
        return _delegation(row) if row else None

    def delegations_of(self, requester_id: str, limit: int, offset: int = 0) -> list[Delegation]:
        sql = _DELEGATIONS + (
            " WHERE t.requester_id = :r ORDER BY t.created_at DESC, t.id LIMIT :limit OFFSET :offset"
        )
        rows = self._raw.all(sql, {"r": requester_id, "limit": limit, "offset": offset})
        return [_delegation(r) for r in rows]


def _intake(row: Sequence[Any]) -> IntakeTemplate:
    project_id, name, description, contract, created_at = row
    c = loads(contract)
    return IntakeTemplate(
        project_id,
        name,
        description,
        dict(c["criteria"]),
        tuple(c["scope"]),
        c["policy_version"],
        created_at,
    )


def _delegation(row: Sequence[Any]) -> Delegation:
    a2a_id, project_id, requester_id, context_id, intake, task_id, refused, message, created_at = row
    return Delegation(
        a2a_id, project_id, requester_id, context_id, intake, task_id, refused, loads(message), created_at
    )
